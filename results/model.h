// A nesting result (shared/spec/results-json.md, docs/formats.md) read into
// the shape every nesting picture draws from: the pattern graphs, the
// service map and the report page. Reading happens after ValidateResult
// (result_json.h); the fields the report adds to the spec (histograms,
// example requests, timelines, culprit, suspect marks) are optional here,
// and checked with their JSON path when present.
#ifndef BBPROF_RESULTS_MODEL_H_
#define BBPROF_RESULTS_MODEL_H_

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "base/status.h"

namespace bbprof::viz {

// A distribution in bins (latency_hist, own_time_hist): edges_s has one
// more entry than counts. Empty when the result has none.
struct Histogram {
  std::vector<double> edges_s;
  std::vector<int64_t> counts;
};

// A node of a nesting pattern (spec: patterns[].root, recursively).
struct PatternNode {
  std::string name;
  std::string op;  // the node's operation; empty when unknown
  double latency_s = 0;
  double p50_s = 0, p90_s = 0, p99_s = 0;  // 0 when the result has none
  double call_delay_s = 0;
  std::vector<PatternNode> children;
  double own_s = 0;  // computed: OwnTime()
  Histogram latency_hist, own_time_hist;
};

// One call of an example request, times relative to the root call.
struct ExampleCall {
  std::string node, caller, op;
  double start_s = 0, latency_s = 0;
  std::vector<ExampleCall> children;
};
struct Example {
  bool present = false;
  double at_s = 0;
  ExampleCall tree;
};

struct Timeline {
  double bucket_s = 0;  // 0: the result has no timeline
  double start_s = 0;
  std::vector<int64_t> counts;
  std::vector<double> latency_sum_s;
};

// An artefact mark (docs/formats.md: "suspect").
struct Suspect {
  std::string kind, reason;
};

struct Pattern {
  int64_t rank = 0;
  std::string signature;
  int64_t count = 0;
  double total_latency_s = 0;
  std::string caller;
  PatternNode root;
  // The culprit: the node adding the most time, as the path of child
  // indices from the root. From the result's "culprit" when present, else
  // the node with the largest own time (FindCulprit).
  std::vector<size_t> culprit_path;
  double culprit_own_s = 0;
  double culprit_added_s = 0;  // time it adds over all instances
  Example median, slowest;
  Timeline timeline;
  std::vector<Suspect> suspects;
};

// Reads the first `top` patterns (0: all) of a validated nest result.
// Errors name the JSON path of what is amiss.
Result<std::vector<Pattern>> ParseNest(const nlohmann::json& doc, size_t top);

// The node at a path of child indices (the root for an empty path).
const PatternNode& NodeAt(const Pattern& p, const std::vector<size_t>& path);

// Own time of a node on a pattern, from means only (docs/viz.md): the node's
// mean latency minus the length of the union of its children's intervals
// [call_delay, call_delay + latency], each clipped to [0, latency].
struct ChildInterval {
  double call_delay_s;
  double latency_s;
};
double OwnTime(double latency_s, const std::vector<ChildInterval>& children);

// The culprit rule when a result names none: the node with the largest own
// time (the first in depth-first order among equals).
std::vector<size_t> FindCulprit(const PatternNode& root);

}  // namespace bbprof::viz

#endif  // BBPROF_RESULTS_MODEL_H_
