// The nesting algorithm of section 5.1 (pseudo-code in Figure 4): from a
// trace of RPC calls and returns, infer which call caused which, and
// aggregate the resulting causal call trees into path patterns with the
// latency and call delay distribution of every node.
//
// The passes, one file per step of the paper, each taking the call table
// (call_table.h) and the parameters, never a reader:
//   1. call_pairs.h      (5.1.1.1) match each RET to its CALL.
//      skew_estimation.h (7.5.6, made automatic) skew windows per edge,
//                        clocks corrected.
//   2. candidates.h      (5.1.1.1) the calls into B that enclose a call B->C.
//   3. scoreboards.h     (5.1.1.2) log-binned scoreboards per (A, B, C).
//   4. parent_choice.h   (5.1.1.3) one parent per call, with penalties
//      (assignment.h); then refinement and, in timeline.h, the timeline
//      passes (beyond the paper: the parent whose timeline of child gaps,
//      spawned calls and tail becomes most likely; docs/nesting.md).
//   5. pattern_table.h   (5.1.1.4) trees from root calls, aggregated by shape.
// RunNesting is the in-memory driver (memory_driver.cc): it reads the trace
// into the table and runs the passes in order.
// Time and space are O(messages x mean per-node parallelism) (5.1.2).
#ifndef BBPROF_NESTING_NESTING_H_
#define BBPROF_NESTING_NESTING_H_

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/pass_timings.h"
#include "base/status.h"
#include "nesting/histogram.h"
#include "nesting/steps/client_folding.h"
#include "trace/pending_calls.h"
#include "trace/reader.h"
#include "trace/record.h"

namespace bbprof::nesting {

// How step 4 chooses a parent among the candidates.
enum class Assign {
  kModel,  // the paper's scoreboards and penalties, refinement, timelines
  // A baseline: the earliest-started candidate, i.e. each call goes to the
  // oldest call into its node still open (first come, first served).
  kFcfs,
};

struct Params {
  // Exponents of the overlapping-, same- and generic-child penalties
  // (5.1.1.3); x = 2, y = z = 0 is what the paper found best overall.
  double penalty_overlap = 2.0;
  double penalty_same = 0.0;
  double penalty_generic = 0.0;
  // A parent may start up to this much after its child and end up to this
  // much before it (section 7.5.6), to tolerate clock skew between capture
  // points. Used as given when skew_auto is false.
  trace::TimeNs skew_window = 0;
  // Work the windows out from the trace, per edge of the child call (the
  // default; docs/nesting.md, "Clock skew"): a call B->C that no call into
  // B encloses, but one would within a few milliseconds, is read as skew.
  // A result's skew_window is then the largest window applied.
  bool skew_auto = true;
  // Standard deviation, in bins, of the Gaussian the scoreboards are
  // smoothed with (0 = off). Smoothing helps under skew (7.5.6).
  double smooth_bins = 0.0;
  // Log base of the scoreboard bins (the paper: 1.05).
  double bin_base = 1.05;
  // Score by the bin's raw value as in the paper, instead of value / bin
  // width (a delay density, the default; see scoreboards.h).
  bool raw_bin_scores = false;
  // Passes of refinement after the paper's single greedy pass (0 = the
  // paper's rule): each call is taken off its parent and given the best
  // parent again, now that every sibling, not only the earlier ones, is
  // known to the penalties (see parent_choice.cc).
  int refine_passes = 1;
  // Passes of timeline scoring after refinement (0 = off; see
  // timeline.h): each pass learns, from the current assignment, how
  // long every node waits between the events of a call it serves (its
  // arrival, each child's return, the next child's call, its own return)
  // and re-chooses every call's parent by the likelihood of those gaps.
  int timeline_passes = 2;
  // The timeline passes may score the children a parent has on one edge
  // by their order of return (docs/nesting.md, "Burst order"). Clock
  // correction turns it off for the first assignments it learns the
  // offsets from (skew_estimation.h). Not part of the result: on by
  // default, and not a flag.
  bool return_chain = true;
  // Timeline passes added when some edge is chained (timeline.cc,
  // ChooseChains): a group swap moves one whole group a pass, and each
  // pass learns from the last, so they need more passes to settle.
  // Clock correction turns them off for its first assignments, like the
  // return chain. Not part of the result, and not a flag.
  int chained_extra_passes = 2;
  // A call whose return was lost (a sniffer drop, the trace's end) still
  // happened and may have caused calls: it stays a candidate parent until
  // its edge's 99th-percentile latency has passed (see call_pairs.h).
  // Without this, its children are pinned on a concurrent call instead.
  bool impute_lost_returns = true;
  Assign assign = Assign::kModel;
  // Evaluation only ("cheating" as in section 7.5.1): candidate parents must
  // carry the child's ground-truth pathid, which yields the true paths.
  bool use_pathids = false;
  // Operations (trace field 7). Patterns split by the operation
  // of every call (false: by node only, as the paper does).
  bool group_by_op = true;
  // Scoreboards (5.1.1.2) and timeline edges keyed by the operation of the
  // calls as well as their nodes: (A, B:op, C:op) instead of (A, B, C), so
  // that two operations served by one node, with different children and
  // delays, are learned apart. Variants of an op that differ by an id in
  // the path (eight or more values of one segment where the rest agree, at
  // one node) key as one: keyed by every variant of a route that carries
  // a key, each board would hold a fraction of its samples, too few to
  // learn from (docs/nesting.md, "Operations"). Changes nothing on a trace
  // without ops.
  bool op_keys = true;
  // Calls waiting for their return kept at once while pairing (0: no
  // limit); past it the oldest is evicted and stays unmatched, so a trace of
  // lost returns cannot grow memory without bound (trace/pending_calls.h).
  uint64_t max_pending_calls = trace::kDefaultMaxPendingCalls;
  // External clients folded (see client_folding.h).
  ClientFolding clients;
  // Threads for the passes that split into parts with an exact merge
  // (docs/nesting.md, "Passes and their state"): the result is the same
  // for every count. Not part of the result.
  int threads = 1;
  // Where the drivers add each pass's wall time (`nest --timings`); none
  // when null. Not owned, not part of the result.
  PassTimings* timings = nullptr;
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
  // Per instance: the latency not covered by the union of the children's
  // intervals (clipped to the node's own span); negative only when the
  // latency is (clock skew between the two ends of the call).
  LogHistogram own_time;
  std::vector<PatternNode> children;  // display order: mean call delay, name
};

// A reason to doubt that a pattern happened as inferred (results/marks.h):
// kind is a short key ("rare-variant", "high-parallelism"), reason says why
// in a sentence for people.
struct Suspect {
  std::string kind;
  std::string reason;
};

// One call of an example request (Pattern::median, slowest): as observed,
// times relative to the root call, children in call order.
struct ExampleCall {
  std::string node, caller, op;  // op empty when unknown
  trace::TimeNs start_ns = 0;    // call time minus the root's call time
  trace::TimeNs latency_ns = 0;  // assumed for a call whose return was lost
  std::vector<ExampleCall> children;
};
struct Example {
  trace::TimeNs at_ns = 0;  // the root call's time
  ExampleCall tree;
};

// Instances and their summed latency per time bucket (section 8's sliding
// windows): buckets of bucket_ns, aligned on multiples of it, the same size
// for every pattern of a result, from the pattern's first instance to its
// last (at most kMaxTimelineBuckets over the whole trace).
inline constexpr int64_t kMaxTimelineBuckets = 500;
struct Timeline {
  trace::TimeNs bucket_ns = 0;
  trace::TimeNs start_ns = 0;  // the start of counts[0]
  std::vector<uint64_t> counts;
  std::vector<trace::TimeNs> latency_sum_ns;
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
  // The instances' latencies added up, in integer nanoseconds as the
  // timeline's sums: exact in any order, so parts of the roots (threads,
  // stream segments, ranks) add up to one walk's total to the bit, where
  // a sum of seconds would depend on the order of its terms in its last
  // bits.
  trace::TimeNs total_latency_ns = 0;
  double total_latency_s() const {
    return trace::NsToSeconds(total_latency_ns);
  }
  std::vector<Suspect> suspects;  // filled by MarkSuspects (results/marks.h)
  // The instance whose latency is nearest the median, and the slowest (the
  // earliest of equals), for a waterfall picture.
  Example median, slowest;
  Timeline timeline;
};

inline constexpr size_t kMaxInputMeta = 64;
inline constexpr size_t kMaxInputMetaChars = 4096;

// Adds a "#meta" line to what a result keeps of its input's (InputStats::
// meta): cut to kMaxInputMetaChars, and only while fewer than
// kMaxInputMeta are kept, so a trace of endless meta lines cannot grow it.
inline void KeepInputMeta(std::string_view line,
                          std::vector<std::string>* kept) {
  if (kept->size() < kMaxInputMeta) {
    kept->emplace_back(line.substr(0, kMaxInputMetaChars));
  }
}

struct InputStats {
  std::string path;
  uint64_t messages = 0;
  uint64_t free_messages = 0;  // MSG records, ignored by this algorithm
  uint64_t call_pairs = 0;
  uint64_t unmatched_calls = 0;
  uint64_t unmatched_returns = 0;
  // Of unmatched_calls: those dropped while still pending, past
  // Params::max_pending_calls (trace/pending_calls.h).
  uint64_t pending_calls_evicted = 0;
  // Root calls whose return was never seen (lost, or still in flight when
  // the capture ended): incomplete instances, left out of the patterns.
  uint64_t unfinished_roots = 0;
  double duration_s = 0;
  // The input file's size in bytes and the CRC-32 of those bytes (as read:
  // compressed bytes for a compressed file), so that `eval` can tell whether
  // a truth trace is the input this result was computed from. has_crc32 is
  // false for inputs not read as a byte stream (a capture through libpcap).
  uint64_t bytes = 0;
  uint32_t crc32 = 0;
  bool has_crc32 = false;
  // The paper's per-node parallelism: the mean number of candidate parents
  // of a call that has any (5.1.2).
  double mean_parallelism = 0;
  uint64_t nodes = 0;
  // Mentions of node names past the reader's limit (trace::NodeTable::
  // SetLimit), folded into the node {other-nodes}.
  uint64_t node_names_folded = 0;
  // The trace's "#meta" line bodies (its producer, capture counters and
  // drops: docs/formats.md), for the report's "what the input was"; at most
  // kMaxInputMeta lines of kMaxInputMetaChars.
  std::vector<std::string> meta;
  uint64_t scoreboards = 0;
};

// A skew window worked out for the calls of one edge (Params::skew_auto).
struct EdgeSkew {
  std::string caller, callee;
  // How much later than the child a parent may start, and how much earlier
  // it may end.
  double start_window_s = 0;
  double end_window_s = 0;
  uint64_t children = 0;  // calls with some call into their caller nearby
  uint64_t missed = 0;    // of those, calls that no call encloses
};

// A clock worked out for one node (Params::skew_auto): how far ahead of
// the reference it stamped in the middle of the trace, and how fast it
// gained, subtracted from its timestamps before parents were chosen
// (docs/nesting.md, "Clock skew").
struct NodeClockOffset {
  std::string node;
  double offset_s = 0;
  double drift_ppm = 0;
  // The node of its connected part that the offset and drift are relative
  // to (its part's first node, whose clock is 0, so never listed itself).
  std::string reference;
};
// How patterns are ranked. Total latency (count x mean) is the default: the
// paper's "high impact" paths (section 5.4), frequent and slow, so a rare
// slow path and a frequent fast one both rank below one that is both.
enum class SortKey { kTotalLatency, kCount, kMeanLatency };
// "total-latency", "count", "mean-latency" (the --sort values and the result
// JSON's params.sort).
const char* SortKeyName(SortKey key);
std::optional<SortKey> SortKeyFromName(std::string_view name);

struct NestingResult {
  InputStats input;
  Params params;
  std::vector<NodeClockOffset> clock_offsets;  // nonzero ones, by name
  // The trace time clock_offsets' offsets hold at (about mid-trace): the
  // stream driver moves each segment's offsets from its own to the whole
  // trace's.
  trace::TimeNs clocks_at = 0;
  std::vector<EdgeSkew> skew;     // edges given a nonzero window, by name
  std::vector<Pattern> patterns;  // in the order of `sort` (SortPatterns)
  SortKey sort = SortKey::kTotalLatency;
  // Doubts about the whole result, for people (results/marks.h): written
  // to the result JSON's "warnings" and, by nest, to standard error.
  std::vector<std::string> warnings;
};

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
  // As observed: what a per-request export (nesting/requests/request_export.h) and
  // the scoring of one (results/eval/result_eval.h) need.
  trace::TimeNs call_ns = 0;
  trace::TimeNs ret_ns = 0;  // assumed when imputed; meaningless unmatched
  trace::NodeId caller = 0, callee = 0;  // into DetailedResult::node_names
  uint64_t pathid = 0;  // hash of the ground-truth pathid (use_pathids only)
};
// Labels of every call, kept only when asked for (DetailOptions): they cost
// a string per call.
struct CallLabels {
  std::vector<std::string> callids;   // by call; empty when absent
  std::vector<uint32_t> ops;          // by call; index into op_names
  std::vector<std::string> op_names;  // op_names[0] is "" (unknown)
};
struct DetailedResult {
  NestingResult result;
  std::vector<CallInfo> calls;
  std::vector<std::string> pattern_signatures;  // by root_pattern index
  std::vector<std::string> node_names;          // by NodeId
  CallLabels labels;  // filled only with DetailOptions::call_labels
};
struct DetailOptions {
  bool call_labels = false;  // keep every call's callid and op
};
Result<DetailedResult> RunNestingDetailed(trace::TraceReader& reader,
                                          const Params& params,
                                          const DetailOptions& options = {});

}  // namespace bbprof::nesting

#endif  // BBPROF_NESTING_NESTING_H_
