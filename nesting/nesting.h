// The nesting algorithm of section 5.1 (pseudo-code in Figure 4): from a
// trace of RPC calls and returns, infer which call caused which, and
// aggregate the resulting causal call trees into path patterns with the
// latency and call delay distribution of every node.
//
// Pipeline, one function per step of the paper:
//   1. FindCallPairs   (5.1.1.1) match each RET to its CALL.
//   2. FindCandidates  (5.1.1.1) the calls into B that enclose a call B->C.
//   3. ScoreNestings   (5.1.1.2) log-binned scoreboards per (A, B, C).
//   4. FindNestedPairs (5.1.1.3) one parent per call, with penalties;
//      then refinement and timeline passes (beyond the paper: the parent
//      whose timeline of child gaps, spawned calls and tail becomes most
//      likely; docs/nesting.md).
//   5. FindCallPaths   (5.1.1.4) trees from root calls, aggregated by shape.
// Time and space are O(messages x mean per-node parallelism) (5.1.2).
#ifndef BBPROF_NESTING_NESTING_H_
#define BBPROF_NESTING_NESTING_H_

#include <cstdint>
#include <string>
#include <vector>

#include "base/status.h"
#include "nesting/client_folding.h"
#include "nesting/histogram.h"
#include "trace/reader.h"

namespace bbprof::nesting {

struct Params {
  // Exponents of the overlapping-, same- and generic-child penalties
  // (5.1.1.3); x = 2, y = z = 0 is what the paper found best overall.
  double penalty_overlap = 2.0;
  double penalty_same = 0.0;
  double penalty_generic = 0.0;
  // A parent may start up to this much after its child and end up to this
  // much before it (section 7.5.6), to tolerate clock skew between capture
  // points.
  trace::TimeNs skew_window = 0;
  // Standard deviation, in bins, of the Gaussian the scoreboards are
  // smoothed with (0 = off). Smoothing helps under skew (7.5.6).
  double smooth_bins = 0.0;
  // Log base of the scoreboard bins (the paper: 1.05).
  double bin_base = 1.05;
  // Score by the bin's raw value as in the paper, instead of value / bin
  // width (a delay density, the default; see FindNestedPairs).
  bool raw_bin_scores = false;
  // Passes of refinement after the paper's single greedy pass (0 = the
  // paper's rule): each call is taken off its parent and given the best
  // parent again, now that every sibling, not only the earlier ones, is
  // known to the penalties (see FindNestedPairs).
  int refine_passes = 1;
  // Passes of timeline scoring after refinement (0 = off; see
  // FindNestedPairs): each pass learns, from the current assignment, how
  // long every node waits between the events of a call it serves (its
  // arrival, each child's return, the next child's call, its own return)
  // and re-chooses every call's parent by the likelihood of those gaps.
  int timeline_passes = 2;
  // A call whose return was lost (a sniffer drop, the trace's end) still
  // happened and may have caused calls: it stays a candidate parent until
  // its edge's 99th-percentile latency has passed (see FindCallPairs).
  // Without this, its children are pinned on a concurrent call instead.
  bool impute_lost_returns = true;
  // Evaluation only ("cheating" as in section 7.5.1): candidate parents must
  // carry the child's ground-truth pathid, which yields the true paths.
  bool use_pathids = false;
  // Operations (trace field 7, issue 14). Patterns split by the operation
  // of every call (false: by node only, as the paper does).
  bool group_by_op = true;
  // Scoreboards (5.1.1.2) and timeline edges keyed by the operation of the
  // calls as well as their nodes: (A, B:op, C:op) instead of (A, B, C), so
  // that two operations served by one node, with different children and
  // delays, are learned apart (measured in docs/nesting.md). Changes
  // nothing on a trace without ops.
  bool op_keys = true;
  // External clients folded (see client_folding.h).
  ClientFolding clients;
};

struct PatternNode {
  std::string node;
  // The operation of the calls into this node, as the trace names it
  // (field 7); empty when unknown or, grouped by node only, when the
  // pattern's instances do not all agree on one.
  std::string op;
  bool op_mixed = false;    // (grouped by node) instances carry several ops
  LogHistogram latency;     // call into this node to its return
  LogHistogram call_delay;  // call into the parent to the call into this node
  std::vector<PatternNode> children;  // display order: mean call delay, name
};

struct Pattern {
  std::string signature;  // per shared/spec/results-json.md
  // The tree's shape alone, children in a canonical order (by their own
  // shape): what makes two instances the same pattern. The signature orders
  // children by mean call delay for display, so two results can write one
  // shape two ways when their delay estimates differ; evaluation compares
  // shapes.
  std::string shape;
  std::string caller;  // the root call's caller (after client folding)
  PatternNode root;
  uint64_t count = 0;
  double total_latency_s = 0;
};

struct InputStats {
  std::string path;
  uint64_t messages = 0;
  uint64_t free_messages = 0;  // MSG records, ignored by this algorithm
  uint64_t call_pairs = 0;
  uint64_t unmatched_calls = 0;
  uint64_t unmatched_returns = 0;
  // Root calls whose return was never seen (lost, or still in flight when
  // the capture ended): incomplete instances, left out of the patterns.
  uint64_t unfinished_roots = 0;
  double duration_s = 0;
  // The paper's per-node parallelism: the mean number of candidate parents
  // of a call that has any (5.1.2).
  double mean_parallelism = 0;
  uint64_t nodes = 0;
  uint64_t scoreboards = 0;
};

struct NestingResult {
  InputStats input;
  Params params;
  std::vector<Pattern> patterns;  // by count, descending (see SortPatterns)
};

enum class SortKey { kCount, kTotalLatency, kMeanLatency };
// Orders patterns by the key, descending; ties by the other measures, then
// by signature, so output is deterministic.
void SortPatterns(std::vector<Pattern>& patterns, SortKey key);

// Runs the whole algorithm over a trace, reading it once.
Result<NestingResult> RunNesting(trace::TraceReader& reader,
                                 const Params& params);

// What evaluation needs beyond the patterns: for every call (in trace order
// of the CALL records) whether it was matched, its parent (kNoParent for a
// root), its message count share and the signature of the pattern its root
// instance was counted under.
inline constexpr uint32_t kNoParent = 0xFFFFFFFFu;
struct CallInfo {
  bool matched = false;
  bool imputed = false;  // matched to an assumed return (its own was lost)
  uint32_t parent = kNoParent;
  uint32_t root_pattern = kNoParent;  // index into patterns before sorting
};
struct DetailedResult {
  NestingResult result;
  std::vector<CallInfo> calls;
  std::vector<std::string> pattern_signatures;  // by root_pattern index
};
Result<DetailedResult> RunNestingDetailed(trace::TraceReader& reader,
                                          const Params& params);

}  // namespace bbprof::nesting

#endif  // BBPROF_NESTING_NESTING_H_
