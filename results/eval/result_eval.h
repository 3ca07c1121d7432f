// Scoring of a nesting result as it was handed over (section 7.5.1's
// metrics): the result JSON's own patterns and latencies, and, when the
// requests nest exported are given (nesting/requests/request_export.h), its own
// parent choices, call by call. The truth comes from the trace's pathids:
// the engine runs once "cheating" (candidate parents must share the
// child's pathid), as the paper does, which yields the true trees. The
// truth trace must be the result's input: its size and CRC-32 are checked
// against the ones nest recorded.
#ifndef BBPROF_RESULTS_EVAL_RESULT_EVAL_H_
#define BBPROF_RESULTS_EVAL_RESULT_EVAL_H_

#include <nlohmann/json.hpp>
#include <string>

#include "base/status.h"
#include "nesting/nesting.h"
#include "results/eval/evaluation.h"

namespace bbprof::nesting {

struct ResultEvaluation {
  Evaluation figures;  // patterns, top-N and latency always; instances and
                       // messages only when requests_scored
  bool requests_scored = false;
  std::string requests_path;
  uint64_t exported_requests = 0, exported_calls = 0;
  // Exported calls with no call of the truth trace at the same caller,
  // callee, callid and call time (each makes its request wrong).
  uint64_t unknown_calls = 0;
  // Requests as the trace's pathids define them (a pathid's calls, whatever
  // their roots): request_accuracy is the share whose every call has its
  // true parent in the export.
  uint64_t true_requests = 0, correct_requests = 0;
  double request_accuracy = 0;
};

struct ResultEvalInput {
  std::string result_path;  // for messages
  nlohmann::json result;    // the 'bbprof nest' result document
  Params params;            // the result's params
  std::string truth_trace;
  std::string requests_path;    // empty: patterns and latency only
  std::string requests_format;  // jaeger or otlp; empty: from the name
};

Result<ResultEvaluation> EvaluateResult(const ResultEvalInput& in,
                                        const EvalOptions& options);

nlohmann::ordered_json ResultEvaluationToJson(const ResultEvaluation& e);
std::string ResultEvaluationToText(const ResultEvaluation& e);

}  // namespace bbprof::nesting

#endif  // BBPROF_RESULTS_EVAL_RESULT_EVAL_H_
