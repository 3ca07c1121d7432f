// bbprof nest TRACE: the nesting algorithm (section 5.1) on an RPC trace;
// ranked path patterns as text on standard output and/or as result JSON.
#include "cli/nest_command.h"

#include <chrono>
#include <cstdio>
#include <iostream>
#include <optional>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "base/atomic_file.h"
#include "base/pass_timings.h"
#include "cli/analysis_input.h"
#include "cli/command_line.h"
#include "cli/nest_flags.h"
#include "nesting/nesting.h"
#include "nesting/requests/request_export.h"
#include "results/marks.h"
#include "results/writer.h"
#include "base/json_text.h"
#include "trace/reader.h"
#include "trace/timestamp.h"
#include "viz/render.h"
#include "viz/report.h"

namespace bbprof::cli {

namespace {

// `--timings`: a line per pass, in the order the run met them, then their
// sum and the whole command's (reading the flags to writing the last
// output; what the passes leave out: opening the input, the stream
// driver's merge, ranking, the outputs). Each line gives the wall seconds,
// and, unless the driver ran work beside its passes, the process's CPU
// seconds over the pass and the cores they kept busy (CPU over wall). A
// streamed trace's segments each run every pass, and with --threads above
// 1 several at once: its lines are sums over the segments, and their sum
// can exceed the whole run.
std::string TimingsText(const PassTimings& timings, int threads,
                        double whole_wall_s, double whole_cpu_s) {
  const std::vector<PassTime> passes = timings.passes();
  const bool cpu = timings.cpu_per_pass();
  std::ostringstream out;
  out << "nest: wall seconds by pass (" << threads
      << (threads == 1 ? " thread" : " threads") << ")"
      << (cpu ? ", CPU seconds (every thread's) and the cores busy (CPU / "
                "wall):\n"
              : ":\n");
  auto row = [&out, cpu](const std::string& name, double wall_s, double cpu_s) {
    char line[160];
    if (!cpu) {
      std::snprintf(line, sizeof line, "  %-52s %8.3f\n", name.c_str(), wall_s);
    } else if (wall_s < 0.0005) {  // too short for a ratio
      std::snprintf(line, sizeof line, "  %-52s %8.3f %8.3f %6s\n",
                    name.c_str(), wall_s, cpu_s, "-");
    } else {
      std::snprintf(line, sizeof line, "  %-52s %8.3f %8.3f %6.2f\n",
                    name.c_str(), wall_s, cpu_s, cpu_s / wall_s);
    }
    out << line;
  };
  PassTime sum{"the passes above"};
  for (const PassTime& p : passes) {
    row(p.name, p.wall_s, p.cpu_s);
    sum.wall_s += p.wall_s;
    sum.cpu_s += p.cpu_s;
  }
  row(sum.name, sum.wall_s, sum.cpu_s);
  row("the whole run", whole_wall_s, whole_cpu_s);
  if (sum.wall_s > whole_wall_s) {
    out << "  (streamed segments were nested side by side; each line sums "
           "them)\n";
  }
  if (!cpu) {
    out << "  (no CPU column: the stream driver reads and nests segments "
           "beside the passes)\n";
  }
  return out.str();
}

int Run(std::span<const std::string> args) {
  CommandLine cl(
      "nest", "TRACE [options]",
      "Infers the causal path patterns of an RPC-style trace with the nesting "
      "algorithm\n(Aguilera et al., SOSP 2003, section 5.1): which calls cause "
      "which, aggregated into\npatterns ranked by total latency (count x mean; "
      "--sort for others), with the\nlatency, call delay and own time of every "
      "node, so the node that adds the delay\nstands out; patterns that are "
      "likely artefacts of inference are marked.");
  cl.options().add_options()
      ("json", po::value<std::string>(), "write the result JSON to FILE ('-' = standard output)")
      ("top", po::value<int>()->default_value(0), "report only the first N patterns (0 = all)")
      ("sort", po::value<std::string>()->default_value("total-latency"), "rank by total-latency (count x mean: frequent and slow paths first), count or mean-latency")
      ("min-count", po::value<uint64_t>()->default_value(1), "drop patterns seen fewer than N times")
      ("svg", po::value<std::string>(), "also draw the reported patterns as SVG files into DIR (Figure 8)")
      ("dot", po::value<std::string>(), "also write the reported patterns as Graphviz dot files into DIR")
      ("report", po::value<std::string>(), "also write the result as one self-contained HTML page to FILE (as 'bbprof report' does)")
      ("requests", po::value<std::string>(), "also write every request of the reported patterns (each root call with its inferred tree) to FILE; the format comes from the name (.jaeger.json, .otlp.json, .chrome.json, .perfetto.json, .csv, .tsv) or --requests-format")
      ("requests-format", po::value<std::string>(), "format of --requests: jaeger, otlp, chrome (= perfetto), csv or tsv")
      ("timings", po::bool_switch(), "after the run, write the wall and CPU time of each pass to standard error (even with --quiet: asked for)");
  AddNestAnalysisFlags(cl);
  cl.AddPositional("TRACE", "trace file, text or binary ('-' = standard input)", 1, 1);
  cl.SetEpilog(
      "Without --json, a text report goes to standard output; with --json - (or\n"
      "--requests -), the JSON (the requests) goes there instead.\n\n"
      "Examples:\n"
      "  bbprof nest run.trace --top 10\n"
      "  bbprof nest run.bbt --json result.json --sort count\n"
      "  bbprof nest merged.trace --skew-window 0.03 --smooth 2\n"
      "  bbprof nest run.trace --top 5 --svg pictures/\n"
      "  bbprof nest run.trace --report report.html\n"
      "  bbprof nest run.trace --json result.json --requests run.jaeger.json");
  if (auto rc = cl.Parse(args)) return *rc;

  NestSetup setup;
  if (auto rc = ParseNestAnalysisFlags(cl, &setup)) return *rc;
  const std::string sort = cl.Get<std::string>("sort");
  const std::optional<nesting::SortKey> sort_key = nesting::SortKeyFromName(sort);
  if (!sort_key) {
    return cl.UsageError("--sort must be total-latency, count or mean-latency, not '" + sort +
                         "'");
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
  // An output that cannot be written fails now, not after a long run.
  for (const char* flag : {"json", "requests", "report"}) {
    if (!cl.Has(flag)) continue;
    if (Status s = CheckOutputWritable(cl.Get<std::string>(flag)); !s.ok()) {
      return cl.Fail(s);
    }
  }
  // Per-request export needs every call's parent, times and labels; the
  // plain run keeps none of them.
  std::optional<nesting::DetailedResult> detail;
  if (requests_format) detail.emplace();
  // On a trace the stream driver nests, the requests wait in a spool
  // (nesting/requests/request_export.h) until the patterns are ranked.
  std::unique_ptr<nesting::RequestSpool> spool;
  int mpi_rank = 0;
  PassTimings timings;
  const auto started = std::chrono::steady_clock::now();
  const double started_cpu = ProcessCpuSeconds();
  if (cl.Get<bool>("timings")) setup.params.timings = &timings;
  auto result = NestInput(cl, cl.Positional("TRACE")[0], setup,
                          detail ? &*detail : nullptr,
                          /*labels=*/true, &mpi_rank, &spool);
  // Under mpirun, rank 0 writes every output and tells every error.
  if (mpi_rank != 0) return result.ok() ? kExitOk : 1;
  if (!result.ok()) return cl.Fail(result.status());

  // Marks are found on every pattern, before --min-count and --top cut the
  // list: a rare variant's frequent sibling may not be reported.
  nesting::MarkSuspects(*result);
  for (const std::string& w : result->warnings) Inform(cl, "warning: " + w);
  auto& pats = result->patterns;
  result->sort = *sort_key;
  nesting::SortPatterns(pats, *sort_key);
  if (spool) spool->SetSignatures(pats);
  uint64_t min_count = cl.Get<uint64_t>("min-count");
  const size_t found = pats.size();
  std::erase_if(pats, [&](const nesting::Pattern& p) { return p.count < min_count; });
  if (found > 0 && pats.empty()) {
    Inform(cl, "--min-count " + std::to_string(min_count) + " kept none of the " +
                   std::to_string(found) + " patterns found");
  }
  if (top > 0 && pats.size() > static_cast<size_t>(top)) pats.resize(static_cast<size_t>(top));

  bool json_to_stdout = cl.Has("json") && cl.Get<std::string>("json") == "-";
  nlohmann::ordered_json doc = nesting::ResultToJson(*result);
  if (requests_format) {
    const std::string& rpath = cl.Get<std::string>("requests");
    auto exported =
        spool ? spool->Export(pats, *requests_format, rpath)
              : nesting::ExportRequests(*detail, pats, *requests_format, rpath);
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
    std::string text = JsonText(doc);
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
  if (cl.Get<bool>("timings")) {
    std::cerr << TimingsText(timings, setup.params.threads,
                             std::chrono::duration<double>(
                                 std::chrono::steady_clock::now() - started)
                                 .count(),
                             ProcessCpuSeconds() - started_cpu);
  }
  return kExitOk;
}

}  // namespace

const Subcommand kNestCommand = {
    "nest", "infer causal path patterns of RPC traffic (nesting algorithm)", Run};

}  // namespace bbprof::cli
