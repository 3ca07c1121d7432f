// Evaluation of nesting results against ground truth, with the metrics of
// section 7.5.1. As the paper does, the engine runs twice over a maketrace
// trace: once as a user would run it, and once "cheating" with the pathids
// (candidate parents must share the child's path instance), which yields
// the true paths. Both runs see the same calls in the same order, so they
// can be compared call by call.
#ifndef BBPROF_RESULTS_EVAL_EVALUATION_H_
#define BBPROF_RESULTS_EVAL_EVALUATION_H_

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "base/status.h"
#include "nesting/nesting.h"

namespace bbprof::nesting {

struct TopNPoint {
  int n = 0;
  int false_negatives =
      0;  // true top-N patterns missing from the inferred top N
  int false_negatives_tolerant = 0;  // the same, ignoring near ties (tolerance)
};

struct Evaluation {
  // Path patterns (distinct signatures).
  uint64_t true_patterns = 0, inferred_patterns = 0;
  uint64_t pattern_false_negatives = 0, pattern_false_positives = 0;
  // Path instances (root calls with their whole tree).
  uint64_t true_instances = 0, inferred_instances = 0, correct_instances = 0;
  double instance_fn_rate = 0, instance_fp_rate = 0;
  // Messages (two per call pair), ascribed to a correctly inferred instance.
  uint64_t messages = 0, messages_correct = 0;
  double message_error_rate = 0;
  // Requests (the metric recent work reports): the distinct pathids of the
  // true path instances' roots. One is right when every call carrying its
  // pathid has its true parent (a parent of the same request, when several
  // are open at once: pathids cannot tell those apart) and no call of
  // another request was put in its tree. Calls without a pathid (protocols
  // that carry no request id) are not scored.
  uint64_t requests = 0, requests_correct = 0;
  double request_accuracy = 0;
  // Figure 17.
  double tolerance = 0.02;
  std::vector<TopNPoint> top_n;
  // Latency of correctly found patterns: relative error of the mean root
  // latency, weighted by true instance count, and its maximum over the
  // patterns with at least min_count_for_latency instances.
  double latency_error_weighted = 0;
  double latency_error_max = 0;
  std::string latency_error_max_signature;
  std::vector<std::string> missing_top_patterns;  // true top-10 not inferred
};

struct EvalOptions {
  double tolerance = 0.02;
  int max_n = 30;
  uint64_t min_count_for_latency = 10;
};

Result<Evaluation> Evaluate(const std::string& truth_trace,
                            const Params& params, const EvalOptions& options);

// Request accuracy (the metric request-tracing work reports): the share
// of true requests
// (distinct pathids of true root calls, or of calls under a call without a
// pathid) whose whole inferred tree is right.
// `inferred_parent[i]` is call i's inferred parent: kNoParent for a root, a
// call index, or any other value for "not inferred" (wrong). Judged by the
// pathids, never by the clocks: a call whose request reaches its caller
// (some matched call with its pathid goes into that node) is right under any
// call of its own request into the caller (request ids cannot tell fan-in
// siblings apart); a request's entry call is right with the cheating run's
// parent (a root, or a call without a pathid). Calls without a pathid are
// not judged. A call put under another request makes both wrong. Fills
// e->requests, requests_correct and request_accuracy.
void ScoreRequestTrees(const std::vector<CallInfo>& truth,
                       const std::vector<uint32_t>& inferred_parent,
                       Evaluation* e);

nlohmann::ordered_json EvaluationToJson(const Evaluation& e);
std::string EvaluationToText(const Evaluation& e);

}  // namespace bbprof::nesting

#endif  // BBPROF_RESULTS_EVAL_EVALUATION_H_
