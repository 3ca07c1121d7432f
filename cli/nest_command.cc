// bbprof nest TRACE: the nesting algorithm (section 5.1) on an RPC trace;
// ranked path patterns as text on standard output and/or as result JSON.
#include "cli/nest_command.h"

#include <cstdio>
#include <iostream>
#include <optional>

#include "base/atomic_file.h"
#include "cli/analysis_input.h"
#include "cli/command_line.h"
#include "cli/naming_flags.h"
#include "nesting/nesting.h"
#include "nesting/output.h"
#include "trace/json_text.h"
#include "nesting/request_export.h"
#include "trace/reader.h"
#include "trace/timestamp.h"
#include "viz/render.h"
#include "viz/report.h"

namespace bbprof::cli {

namespace {

int Run(std::span<const std::string> args) {
  CommandLine cl(
      "nest", "TRACE [options]",
      "Infers the causal path patterns of an RPC-style trace with the nesting "
      "algorithm\n(Aguilera et al., SOSP 2003, section 5.1): which calls cause "
      "which, aggregated into\npatterns ranked by frequency or latency, with "
      "the latency, call delay and own time\nof every node, so the node that "
      "adds the delay stands out.");
  nesting::Params defaults;
  cl.options().add_options()
      ("json", po::value<std::string>(), "write the result JSON to FILE ('-' = standard output)")
      ("top", po::value<int>()->default_value(0), "report only the first N patterns (0 = all)")
      ("sort", po::value<std::string>()->default_value("count"), "rank by count, total-latency or mean-latency")
      ("min-count", po::value<uint64_t>()->default_value(1), "drop patterns seen fewer than N times")
      ("penalty-overlap", po::value<double>()->default_value(defaults.penalty_overlap), "overlapping-child penalty exponent x (5.1.1.3)")
      ("penalty-same", po::value<double>()->default_value(defaults.penalty_same), "same-child penalty exponent y")
      ("penalty-generic", po::value<double>()->default_value(defaults.penalty_generic), "generic-child penalty exponent z")
      ("skew-window", po::value<std::string>()->default_value("auto"), "tolerate clock skew between capture points (7.5.6): 'auto' works a window out per edge from the trace; SECONDS forces one window (0 = none)")
      ("smooth", po::value<double>()->default_value(defaults.smooth_bins), "smooth scoreboards with a Gaussian of this many bins' sd (0 = off)")
      ("raw-bin-scores", "score nestings by the raw bin value as the paper does, not by delay density")
      ("refine-passes", po::value<int>()->default_value(defaults.refine_passes), "passes that re-choose each call's parent knowing all its siblings (0 = the paper's single greedy pass)")
      ("timeline-passes", po::value<int>()->default_value(defaults.timeline_passes), "passes that re-choose each call's parent by how likely the gaps of its parent's timeline become (0 = off)")
      ("assign", po::value<std::string>()->default_value("model"), "how a call's parent is chosen: 'model' (scoreboards, penalties, refinement, timelines) or 'fcfs' (the oldest call into its node still open; a baseline)")
      ("bin-base", po::value<double>()->default_value(defaults.bin_base), "log base of the scoreboard bins")
      ("skip-bad-lines", "skip and count malformed trace lines instead of stopping")
      ("max-pending-calls",
       po::value<std::string>()->default_value(std::to_string(trace::kDefaultMaxPendingCalls)),
       "calls waiting for their return kept at once while pairing; beyond, the oldest is "
       "dropped as unmatched (pending_calls_evicted; 0: no limit)")
      ("svg", po::value<std::string>(), "also draw the reported patterns as SVG files into DIR (Figure 8)")
      ("dot", po::value<std::string>(), "also write the reported patterns as Graphviz dot files into DIR")
      ("report", po::value<std::string>(), "also write the result as one self-contained HTML page to FILE (as 'bbprof report' does)")
      ("requests", po::value<std::string>(), "also write every request of the reported patterns (each root call with its inferred tree) to FILE; the format comes from the name (.jaeger.json, .otlp.json, .chrome.json, .perfetto.json, .csv, .tsv) or --requests-format")
      ("requests-format", po::value<std::string>(), "format of --requests: jaeger, otlp, chrome (= perfetto), csv or tsv");
  // Operations, client folding and node names (issue 14).
  cl.options().add_options()
      ("group-by", po::value<std::string>()->default_value("op"), "split patterns by node and operation (op), or by node only (node)")
      ("op-keys", po::value<std::string>()->default_value("off"), "key scoreboards and timeline edges by operation as well as node: on or off (off: measured better on real traffic, docs/nesting.md)")
      ("clients", po::value<std::string>()->default_value("fold"), "external clients (callers never called): fold into 'clients', keep, cidr:/N[,/M] or cidr:BLOCK,...");
  AddNamingFlags(cl, /*capture=*/false);
  cl.AddPositional("TRACE", "trace file, text or binary ('-' = standard input)", 1, 1);
  cl.SetEpilog(
      "Without --json, a text report goes to standard output; with --json - (or\n"
      "--requests -), the JSON (the requests) goes there instead.\n\n"
      "Examples:\n"
      "  bbprof nest run.trace --top 10\n"
      "  bbprof nest run.bbt --json result.json --sort total-latency\n"
      "  bbprof nest merged.trace --skew-window 0.03 --smooth 2\n"
      "  bbprof nest run.trace --top 5 --svg pictures/\n"
      "  bbprof nest run.trace --report report.html\n"
      "  bbprof nest run.trace --json result.json --requests run.jaeger.json");
  if (auto rc = cl.Parse(args)) return *rc;

  nesting::Params params;
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
  params.timeline_passes = cl.Get<int>("timeline-passes");
  if (params.timeline_passes < 0 || params.timeline_passes > 100) {
    return cl.UsageError("--timeline-passes must be between 0 and 100");
  }
  const std::string skew = cl.Get<std::string>("skew-window");
  params.skew_auto = skew == "auto";
  if (!params.skew_auto) {
    if (!trace::ParseSecondsFlag(skew, &params.skew_window)) {
      return cl.UsageError("--skew-window '" + skew + "' " + trace::FlagSecondsError(skew) +
                           " (or 'auto')");
    }
    if (params.skew_window < 0) {
      return cl.UsageError(
          "--skew-window must be 'auto' or a non-negative number of seconds, not '" + skew + "'");
    }
  }
  const std::string assign = cl.Get<std::string>("assign");
  if (assign != "model" && assign != "fcfs") {
    return cl.UsageError("--assign must be model or fcfs, not '" + assign + "'");
  }
  params.assign = assign == "fcfs" ? nesting::Assign::kFcfs : nesting::Assign::kModel;
  if (params.smooth_bins < 0) return cl.UsageError("--smooth must be >= 0");
  if (!(params.bin_base > 1.0 && params.bin_base <= 2.0)) {
    return cl.UsageError("--bin-base must be in (1, 2]");
  }
  nesting::SortKey sort_key;
  const std::string sort = cl.Get<std::string>("sort");
  if (sort == "count") {
    sort_key = nesting::SortKey::kCount;
  } else if (sort == "total-latency") {
    sort_key = nesting::SortKey::kTotalLatency;
  } else if (sort == "mean-latency") {
    sort_key = nesting::SortKey::kMeanLatency;
  } else {
    return cl.UsageError("--sort must be count, total-latency or mean-latency, not '" + sort + "'");
  }
  int top = cl.Get<int>("top");
  if (top < 0) return cl.UsageError("--top must be >= 0");

  std::optional<nesting::RequestFormat> requests_format;
  if (cl.Has("requests-format") && !cl.Has("requests")) {
    return cl.UsageError("--requests-format needs --requests FILE");
  }
  if (cl.Has("requests")) {
    const std::string& rpath = cl.Get<std::string>("requests");
    requests_format =
        cl.Has("requests-format")
            ? nesting::RequestFormatFromName(cl.Get<std::string>("requests-format"))
            : nesting::RequestFormatForPath(rpath);
    if (!requests_format) {
      return cl.UsageError(
          cl.Has("requests-format")
              ? "--requests-format must be jaeger, otlp, chrome, perfetto, csv or tsv, not '" +
                    cl.Get<std::string>("requests-format") + "'"
              : "cannot tell the format of --requests '" + rpath +
                    "' from its name (.jaeger.json, .otlp.json, .chrome.json, "
                    ".perfetto.json, .csv, .tsv); give --requests-format");
    }
    if (rpath == "-" && cl.Has("json") && cl.Get<std::string>("json") == "-") {
      return cl.UsageError("--requests - and --json - cannot both go to standard output");
    }
  }
  const std::string group_by = cl.Get<std::string>("group-by");
  if (group_by != "op" && group_by != "node") {
    return cl.UsageError("--group-by must be op or node, not '" + group_by + "'");
  }
  params.group_by_op = group_by == "op";
  const std::string op_keys = cl.Get<std::string>("op-keys");
  if (op_keys != "on" && op_keys != "off") {
    return cl.UsageError("--op-keys must be on or off, not '" + op_keys + "'");
  }
  params.op_keys = op_keys == "on";
  if (std::string why = ParseClientsFlag(cl.Get<std::string>("clients"), &params.clients);
      !why.empty()) {
    return cl.UsageError(why);
  }
  if (auto rc = ParseLimitFlag(cl, "max-pending-calls", &params.max_pending_calls)) return *rc;
  NamingFlags naming;
  if (auto rc = ParseNamingFlags(cl, /*capture=*/false, &naming)) return *rc;

  trace::ReaderOptions ropts;
  ropts.skip_bad_lines = cl.Has("skip-bad-lines");
  ropts.numeric_ids = true;
  auto reader = OpenNamedInput(cl.Positional("TRACE")[0], ropts, naming);
  if (!reader.ok()) return cl.Fail(reader.status());
  // Per-request export needs every call's parent, times and labels; the
  // plain run keeps none of them.
  std::optional<nesting::DetailedResult> detail;
  Result<nesting::NestingResult> result = Status::Error("nest: not run");
  if (requests_format) {
    nesting::DetailOptions dopts;
    dopts.call_labels = true;
    auto d = nesting::RunNestingDetailed(**reader, params, dopts);
    if (!d.ok()) return cl.Fail(d.status());
    detail = std::move(*d);
    result = detail->result;
  } else {
    result = nesting::RunNesting(**reader, params);
  }
  if (!result.ok()) return cl.Fail(result.status());
  if ((*reader)->bad_lines_skipped() > 0) {
    Inform(cl, "skipped " + std::to_string((*reader)->bad_lines_skipped()) +
                   " malformed lines (first: " + (*reader)->first_bad_line_error() + ")");
  }
  for (const nesting::NodeClockOffset& o : result->clock_offsets) {
    char line[256];
    std::snprintf(line, sizeof line,
                  "clock skew: %s stamps %+.6f s off (mid-trace), drifting "
                  "%+.1f ppm; corrected",
                  o.node.c_str(), o.offset_s, o.drift_ppm);
    Inform(cl, line);
  }
  for (const nesting::EdgeSkew& e : result->skew) {
    char line[256];
    std::snprintf(line, sizeof line,
                  "clock skew: calls %s -> %s get a window of %.6f s at the start and "
                  "%.6f s at the end (%llu of %llu not enclosed without one)",
                  e.caller.c_str(), e.callee.c_str(), e.start_window_s, e.end_window_s,
                  static_cast<unsigned long long>(e.missed),
                  static_cast<unsigned long long>(e.children));
    Inform(cl, line);
  }
  WarnIfNodesFolded(cl, (*reader)->nodes());
  if (result->input.pending_calls_evicted > 0) {
    Warn(cl, std::to_string(result->input.pending_calls_evicted) +
                 " calls were still waiting for their return past --max-pending-calls " +
                 std::to_string(params.max_pending_calls) +
                 ": the oldest were dropped as unmatched (raise --max-pending-calls)");
  }
  if (result->input.messages == 0) {
    return cl.Fail(result->input.path + ": the trace has no messages");
  }
  if (result->input.call_pairs == 0) {
    return cl.Fail(result->input.path +
                   ": no CALL has a matching RET, so there is nothing to nest "
                   "(for free-form MSG traffic use 'bbprof convolve')");
  }

  auto& pats = result->patterns;
  nesting::SortPatterns(pats, sort_key);
  uint64_t min_count = cl.Get<uint64_t>("min-count");
  std::erase_if(pats, [&](const nesting::Pattern& p) { return p.count < min_count; });
  if (top > 0 && pats.size() > static_cast<size_t>(top)) pats.resize(static_cast<size_t>(top));

  bool json_to_stdout = cl.Has("json") && cl.Get<std::string>("json") == "-";
  nlohmann::ordered_json doc = nesting::ResultToJson(*result);
  if (requests_format) {
    const std::string& rpath = cl.Get<std::string>("requests");
    auto exported = nesting::ExportRequests(*detail, pats, *requests_format, rpath);
    if (!exported.ok()) return cl.Fail(exported.status());
    // eval finds the requests through this (a path relative to where nest
    // ran, as given).
    doc["requests"] = {{"path", rpath},
                       {"format", nesting::RequestFormatName(*requests_format)},
                       {"requests", exported->requests},
                       {"calls", exported->calls}};
  }
  // The pictures are drawn from the same JSON document that --json writes,
  // so 'bbprof render' on that file gives the same bytes.
  // viz/ reads plain nlohmann::json; convert the ordered document once.
  const nlohmann::json plain = cl.Has("svg") || cl.Has("dot") || cl.Has("report")
                                   ? nlohmann::json(doc)
                                   : nlohmann::json();
  if (cl.Has("report")) {
    const std::string& out = cl.Get<std::string>("report");
    // The document is nest's own: an error here is the output's.
    if (Status s = viz::WriteReport(plain, viz::ReportOptions{}, out); !s.ok()) {
      return cl.Fail(s);
    }
  }
  for (const auto& [flag, format] : {std::pair{"svg", viz::Format::kSvg},
                                     std::pair{"dot", viz::Format::kDot}}) {
    if (!cl.Has(flag)) continue;
    viz::RenderOptions render_opts;
    render_opts.format = format;
    Status s = viz::RenderResultToDir(plain, render_opts, cl.Get<std::string>(flag));
    if (!s.ok()) return cl.Fail(s.WithContext(cl.Get<std::string>(flag)));
  }
  if (cl.Has("json")) {
    std::string text = trace::JsonText(doc);
    if (Status s = WriteFileAtomically(cl.Get<std::string>("json"), text);
        !s.ok()) {
      return cl.Fail(s);
    }
  }
  // Standard output holds one document: the JSON, the requests or the report.
  const bool requests_to_stdout = cl.Has("requests") && cl.Get<std::string>("requests") == "-";
  if (!json_to_stdout && !requests_to_stdout) {
    std::cout << nesting::ResultToText(*result) << std::flush;
  }
  return kExitOk;
}

}  // namespace

const Subcommand kNestCommand = {
    "nest", "infer causal path patterns of RPC traffic (nesting algorithm)", Run};

}  // namespace bbprof::cli
