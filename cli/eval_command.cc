// bbprof eval RESULT.json --truth TRACE [--requests FILE]: accuracy of a
// nesting result, as handed over, against the ground truth of the trace it
// was computed from (section 7.5.1).
#include "cli/eval_command.h"

#include <filesystem>
#include <iostream>
#include <nlohmann/json.hpp>

#include "base/atomic_file.h"
#include "cli/command_line.h"
#include "cli/eval_params.h"
#include "cli/naming_flags.h"
#include "cli/nest_flags.h"
#include "results/eval/evaluation.h"
#include "results/eval/result_eval.h"
#include "results/validate.h"
#include "base/json_text.h"
#include "trace/timestamp.h"

namespace bbprof::cli {

namespace {

int Run(std::span<const std::string> args) {
  CommandLine cl(
      "eval", "RESULT.json --truth TRACE [--requests FILE] [--json FILE]",
      "Scores a 'bbprof nest' result, as it is, against the ground truth "
      "(pathids) of the\ntrace it was computed from, with the metrics of "
      "section 7.5.1: false negatives\nand positives by path pattern, the "
      "top-N false-negative curve of Figure 17 and\nthe latency error of "
      "correctly found patterns, from the result's own patterns;\nand, from "
      "the requests 'nest --requests' exported (Jaeger or OTLP JSON), the\n"
      "path instance, message and request accuracy of its parent choices.\n\n"
      "The truth trace must be the result's input (same size and CRC-32). The "
      "true paths\ncome from running the engine while letting it see the "
      "pathids, as the paper does.");
  cl.options().add_options()
      ("truth", po::value<std::string>(), "the maketrace trace (with pathids) the result was computed from")
      ("json", po::value<std::string>(), "also write the evaluation as JSON to FILE ('-' = standard output)")
      ("tolerance", po::value<double>()->default_value(0.02), "near-tie tolerance of the top-N curve (fraction)")
      ("max-n", po::value<int>()->default_value(30), "longest top-N curve")
      ("requests", po::value<std::string>(), "the requests 'bbprof nest --requests' wrote (.jaeger.json or .otlp.json); by default the file the result records, if any")
      ("no-requests", "score the patterns only, even if the result records a requests file")
      ("threads", po::value<std::string>()->default_value("auto"), "threads for the re-run of the nesting (as 'nest --threads': 1 to 256, or auto); the figures are the same for every count");
  cl.AddPositional("RESULT", "result JSON written by 'bbprof nest --json'", 1, 1);
  if (auto rc = cl.Parse(args)) return *rc;
  if (!cl.Has("truth")) return cl.UsageError("--truth TRACE is required");
  double tol = cl.Get<double>("tolerance");
  if (!(tol >= 0 && tol < 1)) return cl.UsageError("--tolerance must be in [0, 1)");
  int max_n = cl.Get<int>("max-n");
  if (max_n < 1) return cl.UsageError("--max-n must be >= 1");
  int threads = 1;
  if (!ParseThreadsFlag(cl.Get<std::string>("threads"), &threads)) {
    return cl.UsageError("--threads must be auto or between 1 and 256");
  }

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
  if (Status s = viz::ValidateResult(j); !s.ok())
    return cl.Fail(s.WithContext(result_path));
  Result<nesting::Params> params = ReadResultParams(j);
  if (!params.ok()) return cl.Fail(params.status().WithContext(result_path));
  params->threads = threads;
  nesting::EvalOptions opts;
  opts.tolerance = tol;
  opts.max_n = max_n;
  nesting::ResultEvalInput in;
  in.result_path = result_path;
  in.params = *params;
  in.truth_trace = cl.Get<std::string>("truth");
  if (cl.Has("requests") && cl.Has("no-requests")) {
    return cl.UsageError("--requests and --no-requests exclude each other");
  }
  if (cl.Has("requests")) {
    in.requests_path = cl.Get<std::string>("requests");
  } else if (!cl.Has("no-requests") && j.contains("requests") && j["requests"].is_object() &&
             j["requests"].value("path", "") != "" && j["requests"].value("path", "") != "-") {
    // As nest recorded it: relative to where nest ran; else beside the
    // result.
    in.requests_path = j["requests"]["path"].get<std::string>();
    in.requests_format = j["requests"].value("format", "");
    std::filesystem::path beside =
        std::filesystem::path(result_path).parent_path() /
        std::filesystem::path(in.requests_path).filename();
    std::error_code ec;
    if (!std::filesystem::exists(in.requests_path, ec) && std::filesystem::exists(beside, ec)) {
      in.requests_path = beside.string();
    }
  }
  in.result = std::move(j);
  auto ev = nesting::EvaluateResult(in, opts);
  if (!ev.ok()) return cl.Fail(ev.status());
  bool to_stdout = cl.Has("json") && cl.Get<std::string>("json") == "-";
  if (cl.Has("json")) {
    if (Status s = WriteFileAtomically(
            cl.Get<std::string>("json"),
            JsonText(nesting::ResultEvaluationToJson(*ev)));
        !s.ok()) {
      return cl.Fail(s);
    }
  }
  if (!to_stdout) std::cout << nesting::ResultEvaluationToText(*ev);
  return kExitOk;
}

}  // namespace

const Subcommand kEvalCommand = {
    "eval", "score a nest result against a maketrace trace's ground truth", Run};

}  // namespace bbprof::cli
