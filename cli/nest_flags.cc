#include "cli/nest_flags.h"

#include <algorithm>
#include <charconv>
#include <cstdio>

#include "base/cores.h"
#ifdef BBPROF_MPI
#include "nesting/drivers/mpi_driver.h"
#endif
#include "trace/byte_stream.h"
#include "trace/pending_calls.h"
#include "trace/timestamp.h"

namespace bbprof::cli {

void AddNestAnalysisFlags(CommandLine& cl) {
  nesting::Params defaults;
  cl.options().add_options()(
      "penalty-overlap",
      po::value<double>()->default_value(defaults.penalty_overlap),
      "overlapping-child penalty exponent x (5.1.1.3)")(
      "penalty-same", po::value<double>()->default_value(defaults.penalty_same),
      "same-child penalty exponent y")(
      "penalty-generic",
      po::value<double>()->default_value(defaults.penalty_generic),
      "generic-child penalty exponent z")(
      "skew-window", po::value<std::string>()->default_value("auto"),
      "tolerate clock skew between capture points (7.5.6): 'auto' works a "
      "window out per edge from the trace; SECONDS forces one window (0 = "
      "none)")(
      "smooth", po::value<double>()->default_value(defaults.smooth_bins),
      "smooth scoreboards with a Gaussian of this many bins' sd (0 = off)")(
      "raw-bin-scores",
      "score nestings by the raw bin value as the paper does, not by delay "
      "density")("refine-passes",
                 po::value<int>()->default_value(defaults.refine_passes),
                 "passes that re-choose each call's parent knowing all its "
                 "siblings (0 = the paper's single greedy pass)")(
      "timeline-passes",
      po::value<int>()->default_value(defaults.timeline_passes),
      "passes that re-choose each call's parent by how likely the gaps of its "
      "parent's timeline become (0 = off)")(
      "assign", po::value<std::string>()->default_value("model"),
      "how a call's parent is chosen: 'model' (scoreboards, penalties, "
      "refinement, timelines) or 'fcfs' (the oldest call into its node still "
      "open; a baseline)")(
      "bin-base", po::value<double>()->default_value(defaults.bin_base),
      "log base of the scoreboard bins")(
      "skip-bad-lines",
      "skip and count malformed trace lines instead of stopping")(
      "max-pending-calls",
      po::value<std::string>()->default_value(
          std::to_string(trace::kDefaultMaxPendingCalls)),
      "calls waiting for their return kept at once while pairing; beyond, the "
      "oldest is dropped as unmatched (pending_calls_evicted; 0: no limit)")(
      "threads", po::value<std::string>()->default_value("auto"),
      "threads for the passes that split with an exact merge (parent "
      "choice, timeline passes, pattern table), or, streamed, segments "
      "nested at once: 1 to 256, or auto (the cores this process may use, "
      "at most 8); the result is the same for every count")(
      "search", po::value<std::string>()->default_value("auto"),
      "how the trace is held: 'memory' (whole, every pass over every call), "
      "'stream' (in segments of --segment-messages, each nested on its own "
      "and owning the requests that start in it: memory bounded by the "
      "segment, not the trace; --requests wait in a file in $TMPDIR) or "
      "'auto' (memory for a file of at most 64 MiB, stream for a larger "
      "file and standard input); a trace of one segment gives the same "
      "result either way")(
      "segment-messages",
      po::value<std::string>()->default_value(
          std::to_string(nesting::StreamOptions{}.segment_messages)),
      "messages a segment owns under --search stream (at least 1000); each "
      "also reads a thirty-second as many before and after its own, and "
      "follows a request that runs on past that up to nine thirty-seconds "
      "further");
  // Operations, client folding and node names.
  cl.options().add_options()(
      "group-by", po::value<std::string>()->default_value("op"),
      "split patterns by node and operation (op), or by node only (node)")(
      "op-keys", po::value<std::string>()->default_value("on"),
      "key scoreboards and timeline edges by operation as well as node: on or "
      "off (the paper's node-keyed boards); ops that differ only by an id in "
      "one path segment key as one")(
      "clients", po::value<std::string>()->default_value("fold"),
      "external clients (callers never called): fold into 'clients', keep, "
      "cidr:/N[,/M] or cidr:BLOCK,...");
  AddNamingFlags(cl, /*capture=*/false);
}

// Beyond 8 threads the passes that split gain little: pairing and the
// merges stay on one thread, so Amdahl's law bounds the speedup, while
// every thread adds its working vectors (docs/nesting.md, "Passes and
// their state").
bool ParseThreadsFlag(const std::string& text, int* threads) {
  if (text == "auto") {
    *threads = std::min(UsableCores(), kMaxAutoThreads);
    return true;
  }
  int n = 0;
  const char* end = text.data() + text.size();
  auto [p, ec] = std::from_chars(text.data(), end, n);
  if (ec != std::errc() || p != end || n < 1 || n > 256) return false;
  *threads = n;
  return true;
}

std::optional<int> ParseNestAnalysisFlags(const CommandLine& cl,
                                          NestSetup* out) {
  nesting::Params& params = out->params;
  params.penalty_overlap = cl.Get<double>("penalty-overlap");
  params.penalty_same = cl.Get<double>("penalty-same");
  params.penalty_generic = cl.Get<double>("penalty-generic");
  params.smooth_bins = cl.Get<double>("smooth");
  params.bin_base = cl.Get<double>("bin-base");
  params.raw_bin_scores = cl.Has("raw-bin-scores");
  params.refine_passes = cl.Get<int>("refine-passes");
  if (params.refine_passes < 0 || params.refine_passes > 100) {
    return cl.UsageError("--refine-passes must be between 0 and 100");
  }
  if (!ParseThreadsFlag(cl.Get<std::string>("threads"), &params.threads)) {
    return cl.UsageError("--threads must be auto or between 1 and 256");
  }
  params.timeline_passes = cl.Get<int>("timeline-passes");
  if (params.timeline_passes < 0 || params.timeline_passes > 100) {
    return cl.UsageError("--timeline-passes must be between 0 and 100");
  }
  const std::string skew = cl.Get<std::string>("skew-window");
  params.skew_auto = skew == "auto";
  if (!params.skew_auto) {
    if (!trace::ParseSecondsFlag(skew, &params.skew_window)) {
      return cl.UsageError("--skew-window '" + skew + "' " +
                           trace::FlagSecondsError(skew) + " (or 'auto')");
    }
    if (params.skew_window < 0) {
      return cl.UsageError(
          "--skew-window must be 'auto' or a non-negative number of seconds, "
          "not '" +
          skew + "'");
    }
  }
  const std::string assign = cl.Get<std::string>("assign");
  if (assign != "model" && assign != "fcfs") {
    return cl.UsageError("--assign must be model or fcfs, not '" + assign +
                         "'");
  }
  params.assign =
      assign == "fcfs" ? nesting::Assign::kFcfs : nesting::Assign::kModel;
  if (params.smooth_bins < 0) return cl.UsageError("--smooth must be >= 0");
  if (!(params.bin_base > 1.0 && params.bin_base <= 2.0)) {
    return cl.UsageError("--bin-base must be in (1, 2]");
  }
  const std::string group_by = cl.Get<std::string>("group-by");
  if (group_by != "op" && group_by != "node") {
    return cl.UsageError("--group-by must be op or node, not '" + group_by +
                         "'");
  }
  params.group_by_op = group_by == "op";
  const std::string op_keys = cl.Get<std::string>("op-keys");
  if (op_keys != "on" && op_keys != "off") {
    return cl.UsageError("--op-keys must be on or off, not '" + op_keys + "'");
  }
  params.op_keys = op_keys == "on";
  if (std::string why =
          ParseClientsFlag(cl.Get<std::string>("clients"), &params.clients);
      !why.empty()) {
    return cl.UsageError(why);
  }
  if (auto rc =
          ParseLimitFlag(cl, "max-pending-calls", &params.max_pending_calls)) {
    return *rc;
  }
  const std::string search = cl.Get<std::string>("search");
  if (search == "auto") {
    out->search = NestSearch::kAuto;
  } else if (search == "memory") {
    out->search = NestSearch::kMemory;
  } else if (search == "stream") {
    out->search = NestSearch::kStream;
  } else {
    return cl.UsageError("--search must be auto, memory or stream, not '" +
                         search + "'");
  }
  if (auto rc = ParseLimitFlag(cl, "segment-messages",
                               &out->stream.segment_messages)) {
    return *rc;
  }
  if (out->stream.segment_messages < 1000) {
    return cl.UsageError("--segment-messages must be at least 1000, not '" +
                         cl.Get<std::string>("segment-messages") + "'");
  }
  if (auto rc = ParseNamingFlags(cl, /*capture=*/false, &out->naming))
    return *rc;
  out->reader.skip_bad_lines = cl.Has("skip-bad-lines");
  out->reader.numeric_ids = true;
  return std::nullopt;
}

namespace {

// What the stream driver did at its segments' edges (docs/nesting.md, "The
// stream driver"): the requests it followed across them.
std::string SegmentEdges(const nesting::StreamReport& report) {
  return "at the segments' edges: " + std::to_string(report.calls_carried) +
         " calls still open carried into the next segment, " +
         std::to_string(report.tail_messages) +
         " messages nested past the overlaps while calls awaited their "
         "returns";
}

}  // namespace

Result<nesting::NestingResult> NestInput(
    const CommandLine& cl, const std::string& path, const NestSetup& setup,
    nesting::DetailedResult* detail, bool labels,
    [[maybe_unused]] int* mpi_rank,
    std::unique_ptr<nesting::RequestSpool>* spool) {
  auto reader = OpenNamedInput(path, setup.reader, setup.naming);
  if (!reader.ok()) return reader.status();
  Result<nesting::NestingResult> result = Status::Error("nest: not run");
  // Scoring every call (evaluation) needs the whole trace; the requests
  // export can take them segment by segment, through a spool.
  // auto: a file small enough to hold whole (64 MiB is about 6 M
  // messages of a binary trace, 1.4 M of a text one) is held whole; a
  // larger one, or standard input, is streamed.
  constexpr uint64_t kAutoMemoryBytes = uint64_t{64} << 20;
  const bool every_call = detail != nullptr && spool == nullptr;
  const bool stream =
      setup.search == NestSearch::kStream ||
      (setup.search == NestSearch::kAuto && !every_call &&
       !setup.params.use_pathids &&
       (path == "-" || trace::FileSizeOrZero(path) > kAutoMemoryBytes));
  if (stream && (every_call || setup.params.use_pathids)) {
    return Status::Error(
        "--search stream cannot score every request (eval): it needs "
        "--search memory");
  }
  nesting::StreamReport report;
#ifdef BBPROF_MPI
  if (mpi_rank != nullptr && nesting::MpiLaunched()) {
    if (setup.search == NestSearch::kMemory) {
      return Status::Error(
          "under mpirun, nest streams the trace: --search memory needs one "
          "process");
    }
    // Each rank reads only its own segments' blocks of a binary trace;
    // renamed nodes would be numbered in another order than the file's.
    nesting::StreamOptions ranks_stream = setup.stream;
    ranks_stream.seek = path != "-" && !setup.naming.given;
    ranks_stream.seek_options = setup.reader;
    // Every rank spools its own segments' requests; one that cannot make
    // its spool file says so to the others (RunNestingMpi), not by leaving.
    Status spooled = Status::Ok();
    if (detail != nullptr) {
      *spool = std::make_unique<nesting::RequestSpool>();
      spooled = (*spool)->Create();
      ranks_stream.requests = spool->get();
    }
    result = nesting::RunNestingMpi(**reader, setup.params, ranks_stream,
                                    &report, mpi_rank, spooled);
    if (*mpi_rank != 0) return result;
    if (result.ok() && report.segments > 1) {
      Inform(cl, "nested in " + std::to_string(report.segments) +
                     " segments of " +
                     std::to_string(setup.stream.segment_messages) +
                     " messages across the MPI ranks; rank 0 decoded " +
                     std::to_string(report.messages_read) + " of the " +
                     std::to_string(result->input.messages) + " messages");
      Inform(cl, SegmentEdges(report));
      if (!report.seeked) {
        Inform(cl,
               "every rank read the whole trace (" +
                   (ranks_stream.seek
                        ? report.whole_read_why
                        : std::string(path == "-" ? "standard input"
                                                  : "--granularity or --names "
                                                    "renames nodes")) +
                   "); an uncompressed binary trace lets each rank read "
                   "only its own segments ('bbprof convert TRACE x.bbt')");
      }
    }
  } else
#endif
  if (stream) {
    nesting::StreamOptions options = setup.stream;
    if (detail != nullptr) {
      *spool = std::make_unique<nesting::RequestSpool>();
      BBPROF_RETURN_IF_ERROR((*spool)->Create());
      options.requests = spool->get();
    }
    result =
        nesting::RunNestingStream(**reader, setup.params, options, &report);
    if (result.ok() && report.segments > 1) {
      Inform(cl, "nested in " + std::to_string(report.segments) +
                     " segments of " +
                     std::to_string(setup.stream.segment_messages) +
                     " messages, at most " +
                     std::to_string(report.most_messages_held) +
                     " messages held at once");
      Inform(cl, SegmentEdges(report));
    }
  } else if (detail != nullptr) {
    nesting::DetailOptions dopts;
    dopts.call_labels = labels;
    auto d = nesting::RunNestingDetailed(**reader, setup.params, dopts);
    if (!d.ok()) return d.status();
    *detail = std::move(*d);
    result = detail->result;
  } else {
    result = nesting::RunNesting(**reader, setup.params);
  }
  if (!result.ok()) return result.status();
  if ((*reader)->bad_lines_skipped() > 0) {
    Inform(cl, "skipped " + std::to_string((*reader)->bad_lines_skipped()) +
                   " malformed lines (first: " +
                   (*reader)->first_bad_line_error() + ")");
  }
  for (const nesting::NodeClockOffset& o : result->clock_offsets) {
    char line[256];
    std::snprintf(line, sizeof line,
                  "clock skew: %s stamps %+.6f s off %s (mid-trace), "
                  "drifting %+.1f ppm; corrected",
                  o.node.c_str(), o.offset_s, o.reference.c_str(),
                  o.drift_ppm);
    Inform(cl, line);
  }
  for (const nesting::EdgeSkew& e : result->skew) {
    char line[256];
    std::snprintf(
        line, sizeof line,
        "clock skew: calls %s -> %s get a window of %.6f s at the start and "
        "%.6f s at the end (%llu of %llu not enclosed without one)",
        e.caller.c_str(), e.callee.c_str(), e.start_window_s, e.end_window_s,
        static_cast<unsigned long long>(e.missed),
        static_cast<unsigned long long>(e.children));
    Inform(cl, line);
  }
  WarnIfNodesFolded(cl, (*reader)->nodes().limit(),
                    result->input.node_names_folded);
  if (result->input.pending_calls_evicted > 0) {
    Warn(cl, std::to_string(result->input.pending_calls_evicted) +
                 " calls were still waiting for their return past "
                 "--max-pending-calls " +
                 std::to_string(setup.params.max_pending_calls) +
                 ": the oldest were dropped as unmatched (raise "
                 "--max-pending-calls)");
  }
  if (result->input.messages == 0) {
    return Status::Error(result->input.path + ": the trace has no messages");
  }
  if (result->input.call_pairs == 0) {
    return Status::Error(
        result->input.path +
        ": no CALL has a matching RET, so there is nothing to nest "
        "(for free-form MSG traffic use 'bbprof convolve')");
  }

  return result;
}

}  // namespace bbprof::cli
