// bbprof eval RESULT.json --truth TRACE: accuracy of a nesting result against
// the ground truth of a maketrace trace (section 7.5.1).
#include "cli/eval_command.h"

#include <iostream>
#include <nlohmann/json.hpp>

#include "base/atomic_file.h"
#include "cli/command_line.h"
#include "cli/naming_flags.h"
#include "nesting/evaluation.h"
#include "trace/timestamp.h"

namespace bbprof::cli {

namespace {

int Run(std::span<const std::string> args) {
  CommandLine cl(
      "eval", "RESULT.json --truth TRACE [--json FILE]",
      "Scores a 'bbprof nest' result against the ground truth (pathids) of "
      "the maketrace\ntrace it was computed from, with the metrics of section "
      "7.5.1: false negatives\nand positives by path pattern, path instance and "
      "message; the top-N false-negative\ncurve of Figure 17; and the latency "
      "error of correctly found patterns.\n\nThe true paths come from re-running "
      "the engine with the result's parameters while\nletting it see the "
      "pathids, as the paper does.");
  cl.options().add_options()
      ("truth", po::value<std::string>(), "the maketrace trace (with pathids) the result was computed from")
      ("json", po::value<std::string>(), "also write the evaluation as JSON to FILE ('-' = standard output)")
      ("tolerance", po::value<double>()->default_value(0.02), "near-tie tolerance of the top-N curve (fraction)")
      ("max-n", po::value<int>()->default_value(30), "longest top-N curve");
  cl.AddPositional("RESULT", "result JSON written by 'bbprof nest --json'", 1, 1);
  if (auto rc = cl.Parse(args)) return *rc;
  if (!cl.Has("truth")) return cl.UsageError("--truth TRACE is required");
  double tol = cl.Get<double>("tolerance");
  if (!(tol >= 0 && tol < 1)) return cl.UsageError("--tolerance must be in [0, 1)");
  int max_n = cl.Get<int>("max-n");
  if (max_n < 1) return cl.UsageError("--max-n must be >= 1");

  const std::string& result_path = cl.Positional("RESULT")[0];
  Result<std::string> text = ReadWholeFile(result_path);
  if (!text.ok()) return cl.Fail(text.status());
  nlohmann::json j = nlohmann::json::parse(*text, nullptr, false);
  if (j.is_discarded() || !j.is_object()) {
    return cl.Fail(result_path + ": not a JSON document");
  }
  if (j.value("tool", "") != "bbprof nest") {
    return cl.Fail(result_path + ": not a 'bbprof nest' result (field \"tool\")");
  }
  nesting::Params params;
  try {
    const auto& p = j.at("params");
    params.penalty_overlap = p.at("penalty_overlap").get<double>();
    params.penalty_same = p.at("penalty_same").get<double>();
    params.penalty_generic = p.at("penalty_generic").get<double>();
    double w = p.at("skew_window_s").get<double>();
    params.skew_window = static_cast<trace::TimeNs>(w * 1e9 + 0.5);
    params.smooth_bins = p.at("smoothing").get<double>();
    params.bin_base = p.at("bin_base").get<double>();
    params.raw_bin_scores = p.value("score", std::string("raw")) == "raw";
    // Results from before refinement existed were made without it.
    params.refine_passes = p.value("refine_passes", 0);
    params.timeline_passes = p.value("timeline_passes", 0);
    // Results from before operations and client folding grouped by node
    // and kept clients apart.
    params.group_by_op = p.value("group_by", std::string("node")) == "op";
    params.op_keys = p.value("op_keys", false);
    if (std::string why = ParseClientsFlag(
            p.value("clients", std::string("keep")), &params.clients);
        !why.empty()) {
      return cl.Fail(result_path + ": bad \"params\": " + why);
    }
  } catch (const nlohmann::json::exception& e) {
    return cl.Fail(result_path + ": bad \"params\": " + e.what());
  }
  nesting::EvalOptions opts;
  opts.tolerance = tol;
  opts.max_n = max_n;
  auto ev = nesting::Evaluate(cl.Get<std::string>("truth"), params, opts);
  if (!ev.ok()) return cl.Fail(ev.status());
  bool to_stdout = cl.Has("json") && cl.Get<std::string>("json") == "-";
  if (cl.Has("json")) {
    if (Status s = WriteFileAtomically(cl.Get<std::string>("json"),
                                       nesting::EvaluationToJson(*ev).dump(2) + "\n");
        !s.ok()) {
      return cl.Fail(s);
    }
  }
  if (!to_stdout) std::cout << nesting::EvaluationToText(*ev);
  return kExitOk;
}

}  // namespace

const Subcommand kEvalCommand = {
    "eval", "score a nest result against a maketrace trace's ground truth", Run};

}  // namespace bbprof::cli
