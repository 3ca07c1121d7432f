// bbprof maketrace CONFIG -o TRACE: synthetic traces with ground truth
// (section 7.1.1); the work is in maketrace/run.h.
#include "cli/maketrace_command.h"

// GCC 12 at -O2 reports a false "potential null pointer dereference" inside
// std::string assignment inlined from Boost.Program_options'
// typed_value<std::string>::notify (system headers, not our code).
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wnull-dereference"
#endif

#include <cerrno>
#include <cstdio>
#include <cstdlib>

#include "base/atomic_file.h"
#include "cli/command_line.h"
#include "maketrace/config.h"
#include "maketrace/run.h"

namespace bbprof::cli {

namespace {

int Run(std::span<const std::string> args) {
  CommandLine cl(
      "maketrace",
      "CONFIG -o TRACE [--seed N] [--duration D | --messages N] "
      "[--per-host-views DIR]",
      "Generates a synthetic trace by instantiating the tracelets of CONFIG "
      "(docs/maketrace.md):\ncausal path templates with Gaussian delays, run "
      "by parallel clients with think\ntimes or by Poisson arrivals. Every "
      "message carries its ground-truth path\ninstance id (6th field). The "
      "same --seed gives the same bytes.");
  cl.options().add_options()(
      "output,o", po::value<std::string>(),
      "output trace ('-' for standard output; .bbt is binary, .gz/.zst "
      "compress)")("seed,s", po::value<std::string>(),
                   "random seed, a number (default 1)")(
      "duration,d", po::value<std::string>(),
      "trace length in time, e.g. 500s (overrides CONFIG)")(
      "messages,n", po::value<std::string>(),
      "trace length in messages, e.g. 200000 (overrides CONFIG; the last "
      "instances are completed, so slightly more are written)")(
      "format,f", po::value<std::string>(),
      "output form: text or binary (default: from TRACE's name)")(
      "per-host-views", po::value<std::string>(),
      "also write one trace per host into this folder: every message as its "
      "sender saw it and as its receiver saw it (after a network delay)");
  cl.AddPositional("CONFIG", "maketrace configuration file", 1, 1);
  cl.SetEpilog(
      "Examples:\n"
      "  bbprof maketrace samples/multitier-normal.conf -o mt.trace\n"
      "  bbprof maketrace samples/multitier-normal.conf -o mt.bbt "
      "--messages 2000000 --seed 7\n"
      "  bbprof maketrace samples/multitier-normal.conf -o mt.trace "
      "--per-host-views views/\n");
  if (auto rc = cl.Parse(args)) return *rc;
  if (!cl.Has("output")) return cl.UsageError("missing -o TRACE");

  maketrace::RunOptions opts;
  opts.output = cl.Get<std::string>("output");
  opts.format = trace::FormatForPath(opts.output);
  opts.quiet = cl.quiet();
  if (cl.Has("format") &&
      !trace::ParseTraceFormat(cl.Get<std::string>("format"), &opts.format)) {
    return cl.UsageError("--format must be text or binary, not '" +
                         cl.Get<std::string>("format") + "'");
  }
  if (cl.Has("seed")) {
    const std::string s = cl.Get<std::string>("seed");
    char* end = nullptr;
    errno = 0;
    opts.seed = std::strtoull(s.c_str(), &end, 10);
    if (s.empty() || *end != '\0' || errno != 0 || s[0] == '-') {
      return cl.UsageError("--seed must be a non-negative integer, not '" + s +
                           "'");
    }
  }
  if (cl.Has("duration") && cl.Has("messages")) {
    return cl.UsageError("give --duration or --messages, not both");
  }
  if (cl.Has("duration")) {
    const std::string s = cl.Get<std::string>("duration");
    std::string err = maketrace::ParseDuration(s, &opts.duration_ns);
    if (!err.empty() || opts.duration_ns <= 0) {
      return cl.UsageError(
          "--duration: expected a positive duration like "
          "500s or 10min, not '" +
          s + "'");
    }
  }
  if (cl.Has("messages")) {
    const std::string s = cl.Get<std::string>("messages");
    char* end = nullptr;
    errno = 0;
    opts.messages = std::strtoull(s.c_str(), &end, 10);
    if (s.empty() || *end != '\0' || errno != 0 || s[0] == '-' ||
        opts.messages == 0) {
      return cl.UsageError("--messages must be a positive integer, not '" + s +
                           "'");
    }
  }
  if (cl.Has("per-host-views")) {
    opts.per_host_dir = cl.Get<std::string>("per-host-views");
  }

  const std::string& path = cl.Positional("CONFIG")[0];
  auto text = ReadWholeFile(path);
  if (!text.ok()) return cl.Fail(text.status());
  // A configuration without a length is fine when a flag gives it.
  auto config = maketrace::ParseConfig(
      *text, path, opts.duration_ns == 0 && opts.messages == 0);
  if (!config.ok()) return cl.Fail(config.status());
  auto sum = maketrace::RunMaketrace(*config, opts);
  if (!sum.ok()) return cl.Fail(sum.status());
  if (!cl.quiet())
    std::fputs(maketrace::FormatSummary(*config, *sum).c_str(), stderr);
  return kExitOk;
}

}  // namespace

const Subcommand kMaketraceCommand = {
    "maketrace",
    "generate a synthetic trace with ground-truth path ids from tracelets",
    Run};

}  // namespace bbprof::cli
