// Before and after: `bbprof diff` compares two nesting results (two result
// documents, or two traces nested with the same parameters) pattern by
// pattern and node by node, and says which changes are significant
// (docs/nesting.md, "Before and after").
//
// - Patterns are matched by shape (caller, then each node's name and
//   operation with children in a canonical order), so two results that write
//   one tree in two display orders still match. Nodes of matched patterns are
//   matched by position in that canonical order.
// - Latency: change in mean, p50, p90 and p99 per node; significance by the
//   Mann-Whitney U test on the two binned distributions (below). Count: change
//   in the pattern's share of all requests; significance by Fisher's exact test
//   on the 2x2 table. All p-values of one diff are adjusted together by Holm's
//   method, so the chance that any reported change is a false alarm is at most
//   alpha.
// - Ranked by impact on total time: the after side's total latency minus the
//   before side's, scaled to the after side's number of requests.
#ifndef BBPROF_RESULTS_DIFF_DIFF_H_
#define BBPROF_RESULTS_DIFF_DIFF_H_

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "base/status.h"
#include "nesting/histogram.h"
#include "nesting/nesting.h"

namespace bbprof::nesting {

// One cell of a binned distribution: `count` values in [lo_s, hi_s), or in
// [lo_s, hi_s] when `closed` (the last bin of a result JSON histogram, or a
// single value: lo_s == hi_s).
struct Cell {
  double lo_s = 0, hi_s = 0;
  uint64_t count = 0;
  bool closed = false;
};

// A pattern node as one side of a diff sees it.
struct SideNode {
  std::string node, op;  // op empty when unknown
  Summary latency;
  double own_time_s = 0;
  double call_delay_mean_s = 0;
  std::vector<Cell> latency_cells;  // ascending; empty when not known
  // Child indices from the root in the side's own (display) order.
  std::vector<size_t> display_path;
  std::vector<SideNode> children;  // canonical order (see above)
};

struct SidePattern {
  std::string key;  // caller->canonical tree: what matches two sides
  std::string signature, caller;
  uint64_t count = 0;
  double total_latency_s = 0;
  SideNode root;
};

struct DiffSide {
  std::string path;
  std::string source;  // "trace" or "result"
  double duration_s = 0;
  double mean_parallelism = 0;
  uint64_t requests = 0;  // the patterns' instances, summed
  size_t pattern_count = 0;
  std::vector<SidePattern> patterns;
};

// From a `bbprof nest` result document; `where` names it in errors. The
// latency distributions come from each node's `latency_hist`; a document
// without them can be compared by its summaries, without significance.
Result<DiffSide> DiffSideFromJson(const nlohmann::json& doc,
                                  const std::string& where);
// From a result nested in this process: the engine's own histograms (1%
// bins on one grid for both sides, so the rank test sees the samples to 1%).
DiffSide DiffSideFromResult(const NestingResult& result);

struct DiffOptions {
  double alpha = 0.05;  // family-wise, over every test of the diff
  // Fewest instances on each side for a latency test (the normal
  // approximation of U is poor below about ten).
  uint64_t min_samples = 10;
};

// A tested change: raw and Holm-adjusted p-values.
struct Test {
  bool tested = false;
  double p = 1, p_adjusted = 1;
  bool significant = false;
};

struct NodeDiff {
  std::string label;  // node[op] names from the root: "WS2 > AP1"
  std::string node, op;
  // Positions in each side's display order (empty vectors for the root;
  // has_before/has_after false for a pattern on one side only).
  std::vector<size_t> path_before, path_after;
  bool has_before = false, has_after = false;
  Summary before, after;  // latency
  double own_before_s = 0, own_after_s = 0;
  // P(a latency after > one before), from the binned samples (MannWhitneyP):
  // 0.5 is no change.
  double prob_slower = 0.5;
  Test latency;
};

enum class PatternChange { kBoth, kAppeared, kVanished };

struct PatternDiff {
  std::string key, signature, caller;
  PatternChange change = PatternChange::kBoth;
  uint64_t count_before = 0, count_after = 0;
  double total_before_s = 0, total_after_s = 0;
  // total_after_s - scale x total_before_s, scale = after's requests /
  // before's: the time this pattern adds (or saves) for the same traffic.
  double impact_s = 0;
  Test count;                   // of the pattern's share of requests
  std::vector<NodeDiff> nodes;  // depth-first, root first
};

struct DiffResult {
  DiffSide before, after;  // patterns dropped after the diff is made
  double scale = 1;
  DiffOptions options;
  uint64_t tests = 0;
  std::vector<PatternDiff> patterns;  // by |impact_s|, descending
};

DiffResult Diff(DiffSide before, DiffSide after, const DiffOptions& options);

nlohmann::ordered_json DiffToJson(const DiffResult& diff);
std::string DiffToText(const DiffResult& diff);

// The statistics, exposed for tests.
// Two-sided Mann-Whitney U p-value (normal approximation with continuity
// correction) of two binned samples, each value spread evenly within its bin
// over the union of both sides' bin edges. *prob_slower gets P(B > A), half
// for values within one elementary interval.
double MannWhitneyP(const std::vector<Cell>& a, const std::vector<Cell>& b,
                    double* prob_slower);
// Two-sided Fisher exact p-value of the table [[a, b], [c, d]].
double FisherExactP(uint64_t a, uint64_t b, uint64_t c, uint64_t d);
// Holm's step-down adjustment, in place: adjusted p-values, monotone.
void HolmAdjust(std::vector<double>& p);

}  // namespace bbprof::nesting

#endif  // BBPROF_RESULTS_DIFF_DIFF_H_
