// bbprof report RESULT.json -o report.html: the result as one HTML page
// (viz/report.h) that needs no network and no other file.
#include "cli/report_command.h"

#include "base/atomic_file.h"
#include "cli/command_line.h"
#include "results/validate.h"
#include "trace/timestamp.h"
#include "viz/report.h"

namespace bbprof::cli {

namespace {

int Run(std::span<const std::string> args) {
  CommandLine cl(
      "report", "RESULT.json -o report.html [--window SECONDS] [--top N]",
      "Writes the result of 'bbprof nest' (or 'bbprof convolve') as one "
      "self-contained\nHTML page: what the input was, a sortable and "
      "filterable table of patterns\nwith their culprits, each pattern's "
      "graph coloured by the time its nodes add\n(one scale for the page), "
      "latency and own-time histograms, waterfalls of the\nmedian and "
      "slowest request, the service map of all patterns merged, and the\n"
      "phases: pattern counts and latency per time window.");
  cl.options().add_options()("output,o", po::value<std::string>(),
                             "the HTML file to write")(
      "window", po::value<std::string>(),
      "phases window in seconds (default: about 40 windows over the trace; "
      "rounded up to a multiple of the result's timeline bucket)")(
      "top,n", po::value<long long>(),
      "only the first N patterns (default: all)");
  cl.AddPositional("RESULT", "result JSON ('-' for standard input)", 1, 1);
  cl.SetEpilog(
      "Examples:\n  bbprof report nest.json -o report.html\n"
      "  bbprof report nest.json -o report.html --window 60 --top 50");
  if (auto rc = cl.Parse(args)) return *rc;

  if (!cl.Has("output"))
    return cl.UsageError("missing -o FILE (the HTML page to write)");
  viz::ReportOptions options;
  if (cl.Has("top")) {
    long long top = cl.Get<long long>("top");
    if (top < 1) return cl.UsageError("--top must be at least 1");
    options.top = static_cast<size_t>(top);
  }
  if (cl.Has("window")) {
    const std::string w = cl.Get<std::string>("window");
    trace::TimeNs ns = 0;
    if (!trace::ParseSecondsFlag(w, &ns)) {
      return cl.UsageError("--window '" + w + "' " +
                           trace::FlagSecondsError(w));
    }
    if (ns <= 0)
      return cl.UsageError("--window must be a positive number of seconds");
    options.window_s = trace::NsToSeconds(ns);
  }
  const std::string& path = cl.Positional("RESULT")[0];
  auto doc = viz::LoadResultJson(path);
  if (!doc.ok()) return cl.Fail(doc.status());
  const std::string& out = cl.Get<std::string>("output");
  auto page = viz::BuildReport(*doc, options);
  if (!page.ok()) return cl.Fail(page.status().WithContext(path));
  if (Status s = WriteFileAtomically(out, *page); !s.ok()) return cl.Fail(s);
  Inform(cl, "wrote " + out);
  return kExitOk;
}

}  // namespace

const Subcommand kReportCommand = {
    "report", "write a nest or convolve result as one self-contained HTML page",
    Run};

}  // namespace bbprof::cli
