// bbprof stats TRACE: a summary of a trace in one streaming pass.
#include "cli/stats_command.h"

#include <iostream>

#include "base/atomic_file.h"
#include "cli/analysis_input.h"
#include "cli/command_line.h"
#include "cli/naming_flags.h"
#include "trace/stats.h"

namespace bbprof::cli {

namespace {

int Run(std::span<const std::string> args) {
  CommandLine cl("stats", "TRACE [--json FILE]",
                 "Summarises a trace in one streaming pass (constant memory in its "
                 "length):\nmessages by kind, nodes, edges with counts and mean call "
                 "latency, duration,\ncalls without returns and returns without calls "
                 "(matched by sender, receiver\nand callid, first-in first-out), the mean "
                 "number of calls in progress (Little's\nlaw), and the trace's #meta lines.");
  cl.options().add_options()
      ("json", po::value<std::string>(), "write the summary as JSON to FILE ('-' = standard output) instead of text")
      ("skip-bad-lines", "skip and count malformed lines instead of stopping")
      ("max-pending-calls",
       po::value<std::string>()->default_value(std::to_string(trace::kDefaultMaxPendingCalls)),
       "calls waiting for their return kept at once; beyond, the oldest is dropped and "
       "counted as unmatched (pending_calls_evicted; 0: no limit)");
  AddNamingFlags(cl, /*capture=*/false);
  cl.AddPositional("TRACE", "trace file, text or binary ('-' = standard input)", 1, 1);
  if (auto rc = cl.Parse(args)) return *rc;
  NamingFlags naming;
  if (auto rc = ParseNamingFlags(cl, /*capture=*/false, &naming)) return *rc;
  trace::ReaderOptions ropts;
  ropts.skip_bad_lines = cl.Has("skip-bad-lines");
  auto reader = OpenNamedInput(cl.Positional("TRACE")[0], ropts, naming);
  if (!reader.ok()) return cl.Fail(reader.status());
  trace::StatsOptions sopts;
  if (auto rc = ParseLimitFlag(cl, "max-pending-calls", &sopts.max_pending_calls)) return *rc;
  sopts.on_limit = [&cl](std::string_view what) { Warn(cl, what); };
  auto stats = trace::ComputeStats(**reader, sopts);
  if (!stats.ok()) return cl.Fail(stats.status());
  WarnIfNodesFolded(cl, (*reader)->nodes());
  if (cl.Has("json")) {
    if (Status s = WriteFileAtomically(cl.Get<std::string>("json"), trace::StatsToJson(*stats)); !s.ok()) {
      return cl.Fail(s);
    }
    return kExitOk;
  }
  std::cout << trace::StatsToText(*stats) << std::flush;
  return kExitOk;
}

}  // namespace

const Subcommand kStatsCommand = {"stats", "summarise a trace: messages, nodes, edges, unmatched calls", Run};

}  // namespace bbprof::cli
