// bbprof convolve TRACE: the convolution algorithm of section 5.2 on any
// trace (CALL, RET and MSG all count as messages).
#include "cli/convolve_command.h"

#include <cmath>
#include <fstream>
#include <iostream>
#include <memory>

#include "base/atomic_file.h"
#include "cli/analysis_input.h"
#include "cli/command_line.h"
#include "cli/naming_flags.h"
#include "convolution/path_graph.h"
#include "trace/binary/binary_format.h"
#include "trace/reader.h"
#include "trace/timestamp.h"

namespace bbprof::cli {

namespace {

bool PlainBinaryTrace(const std::string& path) {
  if (path == "-") return false;
  std::ifstream in(path, std::ios::binary);
  char head = 0;
  return in.get(head) && trace::LooksBinary(std::string_view(&head, 1));
}

int Run(std::span<const std::string> args) {
  CommandLine cl(
      "convolve",
      "TRACE [--quantum S] [--root NODE]... [--json FILE] "
      "[--search auto|memory|stream]",
      "Finds causal paths in message traffic by cross-correlating, for every\n"
      "node j, the messages it receives on a path with everything it sends\n"
      "(Aguilera et al., SOSP 2003, section 5.2). Calls, returns and "
      "free-form\n"
      "messages are all treated as messages. Prints the paths with the delay\n"
      "of every hop; --json writes the result document.");
  cl.options().add_options()("quantum",
                             po::value<std::string>()->default_value("0.001"),
                             "time quantum mu in seconds (section 5.2.1)")(
      "root", po::value<std::vector<std::string>>(),
      "start paths at NODE (repeatable; default: nodes that receive nothing, "
      "else the nodes that make calls and receive none, else every sender)")(
      "max-delay", po::value<std::string>(),
      "largest causal delay looked for, in seconds (default: 1000 quanta)")(
      "spike-sigma", po::value<double>()->default_value(4.0),
      "N: a spike is at least N standard deviations above the mean")(
      "valley-sigma", po::value<double>()->default_value(3.0),
      "S: spikes are separated by a point below S standard deviations")(
      "tolerance", po::value<std::string>(),
      "v: a message matches a delay within +-v seconds; 'quantum': one "
      "quantum, the paper's v; 'auto': each spread spike within its own "
      "spread, measured from the correlation (5.2.2). Default: per spike, "
      "its spread where widening catches more caused messages than "
      "coincidences, else one quantum")(
      "min-count", po::value<uint64_t>()->default_value(5),
      "drop path edges carrying fewer messages")(
      "max-depth", po::value<int>()->default_value(10),
      "longest path, in hops from the root")(
      "json", po::value<std::string>(),
      "write the result JSON to FILE ('-': stdout)")(
      "search", po::value<std::string>()->default_value("auto"),
      "memory: read the trace once and hold it; stream: read it once per "
      "step of the search, holding only a window of about the delay range "
      "(same results; inputs other than a plain binary trace are copied to "
      "a file in $TMPDIR, 16 bytes a message, and re-read from there); "
      "auto: memory up to 1048576 messages, else stream (standard input: "
      "memory)");
  AddNamingFlags(cl, /*capture=*/false);
  cl.AddPositional("TRACE", "input trace ('-' for standard input)", 1, 1);
  if (auto rc = cl.Parse(args)) return *rc;

  convolution::Params p;
  std::string range_error;  // the last flag that is not a number in range
  auto seconds = [&](const char* flag, trace::TimeNs* out) -> bool {
    if (!cl.Has(flag)) return true;
    const std::string text = cl.Get<std::string>(flag);
    if (trace::ParseSecondsFlag(text, out)) return true;
    range_error = "--" + std::string(flag) + " '" + text + "' " +
                  trace::FlagSecondsError(text);
    return false;
  };
  if (!seconds("quantum", &p.quantum_ns)) return cl.UsageError(range_error);
  if (p.quantum_ns <= 0) {
    return cl.UsageError("--quantum must be a positive number of seconds");
  }
  if (cl.Has("max-delay") && !seconds("max-delay", &p.max_delay_ns)) {
    return cl.UsageError(range_error);
  }
  if (cl.Has("max-delay") && p.max_delay_ns <= 0) {
    return cl.UsageError("--max-delay must be a positive number of seconds");
  }
  // Per spike by default (section 5.2.2, docs/convolution.md "How v is
  // chosen"): a spread spike's own window where widening catches more caused
  // messages than coincidences, the paper's one quantum elsewhere. `auto`
  // widens every spread spike; `quantum` or a number is the paper's fixed v.
  if (cl.Has("tolerance")) {
    const std::string t = cl.Get<std::string>("tolerance");
    if (t == "auto") {
      p.spread_always = true;
    } else if (t == "quantum") {
      p.spread_windows = false;
      p.tolerance_ns = p.quantum_ns;
    } else if (seconds("tolerance", &p.tolerance_ns) && p.tolerance_ns >= 0) {
      p.spread_windows = false;
    } else {
      return cl.UsageError(
          "--tolerance must be a non-negative number of seconds, 'quantum' or "
          "'auto'");
    }
  }
  p.spikes.spike_sigma = cl.Get<double>("spike-sigma");
  p.spikes.valley_sigma = cl.Get<double>("valley-sigma");
  p.min_count = cl.Get<uint64_t>("min-count");
  p.max_depth = cl.Get<int>("max-depth");
  if (cl.Has("root")) p.roots = cl.Get<std::vector<std::string>>("root");
  if (Status s = convolution::ResolveParams(p); !s.ok())
    return cl.UsageError(s.message());

  convolution::SearchOptions search;
  const std::string mode = cl.Get<std::string>("search");
  if (mode == "memory") {
    search.mode = convolution::SearchMode::kMemory;
  } else if (mode == "stream") {
    search.mode = convolution::SearchMode::kStream;
  } else if (mode != "auto") {
    return cl.UsageError("--search must be auto, memory or stream");
  }

  NamingFlags naming;
  if (auto rc = ParseNamingFlags(cl, /*capture=*/false, &naming)) return *rc;
  const std::string& path = cl.Positional("TRACE")[0];
  // Every pass of the streaming search reads the input afresh; one node
  // table keeps the node ids the same across them.
  auto nodes = std::make_shared<trace::NodeTable>();
  nodes->SetLimit(static_cast<size_t>(naming.max_nodes));
  const convolution::ReaderFactory open = [&] {
    return OpenNamedInput(path, {}, naming, nodes);
  };
  // A plain binary trace is re-read faster than a copy could be; anything
  // else (text, compressed, a capture, standard input) is spooled.
  search.stream.spool = !PlainBinaryTrace(path);
  auto result = convolution::Convolve(open, path != "-", p, search);
  if (!result.ok()) return cl.Fail(result.status());
  WarnIfNodesFolded(cl, *nodes);
  const convolution::TraceSummary* msgs = &result->summary;
  const convolution::PathGraph* graph = &result->graph;

  const std::string text = convolution::ResultText(*msgs, *graph);
  const bool json_to_stdout =
      cl.Has("json") && cl.Get<std::string>("json") == "-";
  if (cl.Has("json")) {
    const std::string doc = convolution::ResultJson(*msgs, p, *graph, path);
    if (json_to_stdout) {
      std::cout << doc;
    } else if (Status s = WriteFileAtomically(cl.Get<std::string>("json"), doc);
               !s.ok()) {
      return cl.Fail(s);
    }
  }
  if (!json_to_stdout && !cl.quiet()) std::cout << text;
  Inform(cl, std::to_string(graph->paths.size()) + " paths, " +
                 std::to_string(graph->correlations) + " correlations (" +
                 std::to_string(graph->sparse_correlations) + " direct, " +
                 std::to_string(graph->fft_correlations) + " FFT), " +
                 std::to_string(graph->passes) +
                 " pass(es) over the messages, at most " +
                 std::to_string(graph->peak_buffered_messages) +
                 " messages held");
  return kExitOk;
}

}  // namespace

const Subcommand kConvolveCommand = {
    "convolve", "find causal paths by cross-correlating message signals (5.2)",
    Run};

}  // namespace bbprof::cli
