// bbprof diff BEFORE AFTER: per pattern and per node, the change in count
// and latency between two results, with its significance, ranked by impact
// on total time.
#include "cli/diff_command.h"

#include <fstream>
#include <iostream>

#include "base/atomic_file.h"
#include "cli/command_line.h"
#include "cli/nest_flags.h"
#include "results/diff/diff.h"
#include "results/validate.h"
#include "results/writer.h"
#include "base/json_text.h"
#include "viz/diff_view.h"

namespace bbprof::cli {

namespace {

// A result document starts with '{'; nothing else bbprof reads does (a
// trace starts with '#' or a digit, a capture with its magic number).
bool LooksLikeJson(const std::string& path) {
  if (path == "-") return false;
  std::ifstream in(path, std::ios::binary);
  char c;
  while (in.get(c)) {
    if (c == ' ' || c == '\t' || c == '\n' || c == '\r') continue;
    return c == '{';
  }
  return false;
}

Result<nlohmann::json> ReadResult(const std::string& path) {
  Result<std::string> text = ReadWholeFile(path);
  if (!text.ok()) return text.status();
  nlohmann::json j = nlohmann::json::parse(*text, nullptr, false);
  if (j.is_discarded() || !j.is_object()) {
    return Status::Error(path + ": not a JSON document");
  }
  if (j.value("tool", "") != "bbprof nest") {
    return Status::Error(path +
                         ": not a 'bbprof nest' result (field \"tool\")");
  }
  if (Status s = viz::ValidateResult(j); !s.ok()) return s.WithContext(path);
  return j;
}

int Run(std::span<const std::string> args) {
  CommandLine cl("diff", "BEFORE AFTER [options]",
                 "Compares two nesting results, before and after a change: per "
                 "path pattern and\n"
                 "per node on it, the change in count and in latency (mean, "
                 "p50, p90, p99), whether\n"
                 "it is significant (Mann-Whitney U on latency, Fisher's exact "
                 "test on each\n"
                 "pattern's share of requests, Holm-adjusted over all tests), "
                 "and the patterns\n"
                 "that appeared or vanished, ranked by impact on total time. "
                 "BEFORE and AFTER\n"
                 "are two 'bbprof nest' result documents, or two traces or "
                 "captures, which are\n"
                 "nested here with the same parameters (the analysis flags of "
                 "'bbprof nest').");
  // clang-format off
  cl.options().add_options()
      ("json", po::value<std::string>(), "write the diff as JSON to FILE ('-' = standard output)")
      ("html", po::value<std::string>(), "also write an HTML page with each pattern's graph, nodes filled by their significant change (docs/viz.md)")
      ("alpha", po::value<double>()->default_value(0.05, "0.05"), "family-wise error rate: the chance that any reported change is a false alarm")
      ("min-samples", po::value<uint64_t>()->default_value(10), "fewest instances on each side for a latency test")
      ("top", po::value<int>()->default_value(0), "report only the first N patterns of the text and the page (0 = all)");
  // clang-format on
  AddNestAnalysisFlags(cl);
  cl.AddPositional("BEFORE", "result JSON, trace or capture", 1, 1);
  cl.AddPositional(
      "AFTER", "result JSON, trace or capture (the same kind as BEFORE)", 1, 1);
  cl.SetEpilog(
      "The analysis flags apply to traces and captures only; results are "
      "compared as\n"
      "they were nested (a warning says when their parameters differ).\n\n"
      "Examples:\n"
      "  bbprof diff before.json after.json\n"
      "  bbprof diff monday.pcap tuesday.pcap --json diff.json --html "
      "diff.html\n"
      "  bbprof diff old.bbt new.bbt --skew-window 0.001 --top 5");
  if (auto rc = cl.Parse(args)) return *rc;
  NestSetup setup;
  if (auto rc = ParseNestAnalysisFlags(cl, &setup)) return *rc;
  nesting::DiffOptions options;
  options.alpha = cl.Get<double>("alpha");
  if (!(options.alpha > 0 && options.alpha < 1)) {
    return cl.UsageError("--alpha must be between 0 and 1 (exclusive)");
  }
  options.min_samples = cl.Get<uint64_t>("min-samples");
  if (options.min_samples < 2)
    return cl.UsageError("--min-samples must be at least 2");
  const int top = cl.Get<int>("top");
  if (top < 0) return cl.UsageError("--top must be >= 0");
  const std::string before_path = cl.Positional("BEFORE")[0];
  const std::string after_path = cl.Positional("AFTER")[0];
  if (before_path == "-" && after_path == "-") {
    return cl.UsageError("BEFORE and AFTER cannot both be standard input");
  }
  const bool before_json = LooksLikeJson(before_path);
  if (before_json != LooksLikeJson(after_path)) {
    return cl.UsageError(
        "BEFORE and AFTER must be the same kind: two result documents, or two "
        "traces or "
        "captures (nest the trace with the result's parameters first)");
  }

  nesting::DiffSide sides[2];
  const std::string* paths[2] = {&before_path, &after_path};
  nlohmann::json docs[2];
  for (int i = 0; i < 2; ++i) {
    if (before_json) {
      auto doc = ReadResult(*paths[i]);
      if (!doc.ok()) return cl.Fail(doc.status());
      docs[i] = std::move(*doc);
      auto side = nesting::DiffSideFromJson(docs[i], *paths[i]);
      if (!side.ok()) return cl.Fail(side.status());
      sides[i] = std::move(*side);
    } else {
      auto result = NestInput(cl, *paths[i], setup);
      if (!result.ok()) return cl.Fail(result.status());
      sides[i] = nesting::DiffSideFromResult(*result);
    }
  }
  if (before_json) {
    // Results nested with different parameters group or assign differently;
    // their patterns need not match even on the same traffic.
    const nlohmann::json& pb =
        docs[0].value("params", nlohmann::json::object());
    const nlohmann::json& pa =
        docs[1].value("params", nlohmann::json::object());
    for (const char* key :
         {"penalty_overlap", "penalty_same", "penalty_generic", "skew",
          "smoothing", "bin_base", "score", "refine_passes", "timeline_passes",
          "assign", "group_by", "op_keys", "clients"}) {
      if (pb.value(key, nlohmann::json()) != pa.value(key, nlohmann::json())) {
        Inform(cl,
               std::string(
                   "warning: BEFORE and AFTER were nested with different ") +
                   "parameters (params." + key +
                   "); patterns may differ for that reason");
      }
    }
  }
  nesting::DiffResult diff =
      nesting::Diff(std::move(sides[0]), std::move(sides[1]), options);
  const bool json_to_stdout =
      cl.Has("json") && cl.Get<std::string>("json") == "-";
  const nlohmann::ordered_json doc = nesting::DiffToJson(diff);
  if (cl.Has("json")) {
    if (Status s =
            WriteFileAtomically(cl.Get<std::string>("json"), JsonText(doc));
        !s.ok()) {
      return cl.Fail(s);
    }
  }
  if (cl.Has("html")) {
    const std::string& out = cl.Get<std::string>("html");
    auto html = viz::RenderDiffHtml(nlohmann::json(doc), top);
    if (!html.ok()) return cl.Fail(html.status().WithContext(out));
    if (Status s = WriteFileAtomically(out, *html); !s.ok()) return cl.Fail(s);
  }
  if (!json_to_stdout) {
    if (top > 0 && diff.patterns.size() > static_cast<size_t>(top)) {
      diff.patterns.resize(static_cast<size_t>(top));
    }
    std::cout << nesting::DiffToText(diff) << std::flush;
  }
  return kExitOk;
}

}  // namespace

const Subcommand kDiffCommand = {"diff",
                                 "compare two nesting results: what got slower "
                                 "or faster, and is it significant",
                                 Run};

}  // namespace bbprof::cli
