// Clock skew for the nesting algorithm (section 7.5.6, made automatic;
// docs/nesting.md, "Clock skew").
//
// Two parts. Clock offsets: from a first assignment of parents, each edge
// A->B bounds the offset of B's clock against A's (a child cannot start
// before its parent, nor end after it, nor a call return before it was
// made); SolveClockOffsets turns those bounds into one offset per node,
// which the engine subtracts from every timestamp before it chooses parents
// again. Windows: under whatever skew is left, a call B->C can still seem to
// start before every call into B that caused it, or to end after it. For
// each such child, the engine measures how far the nearest call into B
// misses enclosing it at the start and at the end ("needs");
// ChooseSkewWindow turns one edge's needs into that edge's window.
#ifndef BBPROF_NESTING_SKEW_SKEW_H_
#define BBPROF_NESTING_SKEW_SKEW_H_

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <utility>
#include <vector>

#include "trace/record.h"

namespace bbprof::nesting {

// The largest skew the automatic mode looks for: 10 ms, five times the 2 ms
// that NTP-synchronised hosts are seen to disagree by. Pairing waits twice
// this for a call whose return came first (two clocks, each off).
inline constexpr trace::TimeNs kAutoSkewCap = 10'000'000;

// The window every edge that shows no skew gets in the first assignment of
// the clock estimate (CorrectClocks), so that a true parent that a small
// skew keeps from enclosing its child stays a candidate: an edge shows no
// skew when other calls in flight enclose the child (a slow route beside
// fast ones encloses everything). Half the 2 ms that NTP-synchronised
// hosts are seen to disagree by; a larger skew is found in steps, one
// round's correction bringing the next round's misses within reach.
inline constexpr trace::TimeNs kProbeWindow = 1'000'000;

// On a trace with more calls than this, the probe bounds the clocks from
// its first kProbeCalls calls only, so that it costs at most an assignment
// of that many calls (a tenth of the calls of a 2 M-message trace).
inline constexpr size_t kProbeCalls = 100'000;

// One side's window for an edge with `children` calls that had some call
// into their caller within kAutoSkewCap, `needs` holding the positive
// needs among them (nanoseconds; reordered). Zero when too few children
// miss (fewer than 5, or fewer than 0.5% of them): without skew no child
// misses, and a handful that do are lost calls, not clocks.
trace::TimeNs ChooseSkewWindow(std::vector<trace::TimeNs>& needs,
                               uint64_t children);

// Fewer samples than this say too little to bound an offset with.
inline constexpr size_t kMinClockEvidence = 10;

// What an assignment of parents says about the offset d of an edge's
// callee clock against its caller's (d = offset(callee) - offset(caller);
// each message is stamped by its sender, so a call's start is on the
// caller's clock and its return on the callee's). Each sample is
// (time stamped, value).
struct ClockSample {
  trace::TimeNs t = 0, v = 0;
};
struct EdgeClockEvidence {
  trace::NodeId caller = 0, callee = 0;
  // For each child of a call on this edge: child's call - this call's call,
  // which is d plus a true gap >= 0. So d is at most each of them.
  std::vector<ClockSample> child_starts;
  // For each call on this edge with a parent it returned inside: parent's
  // return - this call's return, which is -d plus a true gap >= 0. So d is
  // at least minus each of them.
  std::vector<ClockSample> parent_ends;
  // Each call's observed latency: d plus a true latency > 0, a bound that
  // needs no assignment.
  std::vector<ClockSample> latencies;
  // child_starts and parent_ends again, from the children whose parent was
  // their only candidate: the bounds are read off these when an edge has
  // enough of them; the drift always comes from the lists above.
  std::vector<ClockSample> sure_child_starts, sure_parent_ends;
};

// Disjoint sets of nodes 0..n-1, each named by its lowest node: the node
// every clock of a connected part is relative to (SolveClockOffsets roots
// each spanning tree there), kept so when parts join over the rounds of
// CorrectClocks and over the ranges of MergeRangeClocks.
class NodeParts {
 public:
  explicit NodeParts(size_t n) : up_(n) {
    for (size_t i = 0; i < n; ++i) up_[i] = static_cast<uint32_t>(i);
  }
  // From a forest where each node names a node of its part no higher
  // than itself (a ClockCorrection's `root`).
  explicit NodeParts(std::vector<uint32_t> up) : up_(std::move(up)) {}
  uint32_t Find(uint32_t x) {
    while (up_[x] != x) x = up_[x] = up_[up_[x]];
    return x;
  }
  // Whether a and b were apart (now joined).
  bool Join(uint32_t a, uint32_t b) {
    a = Find(a);
    b = Find(b);
    if (a == b) return false;
    up_[std::max(a, b)] = std::min(a, b);
    return true;
  }

 private:
  std::vector<uint32_t> up_;
};

// Per node, a clock that is `offset` ahead of the reference at time t0 and
// gains `drift` seconds per second: what the node stamps at t is
// Offset(node, t) too late. The reference is root[node]: the first node of
// its connected part, whose clock is 0 (each part is solved on its own; a
// node with no evidence is its own root).
struct ClockCorrection {
  trace::TimeNs t0 = 0;
  std::vector<trace::TimeNs> offset;
  std::vector<double> drift;
  std::vector<uint32_t> root;
  bool any() const;
  trace::TimeNs Offset(trace::NodeId node, trace::TimeNs t) const {
    return offset[node] + static_cast<trace::TimeNs>(
                              drift[node] * static_cast<double>(t - t0));
  }
};

// A trace at least twice this long in time, with at least
// kClockPieceCalls calls to each stretch this long, also has its edges'
// bounds read as stamped in each stretch (SolveClockOffsets): a drift left
// over by the last round shows at a long trace's ends, not over the whole.
// A minute holds tens of thousands of samples of a busy edge, and a drift
// read to a few tenths of a ppm is tens of microseconds off over it.
inline constexpr trace::TimeNs kClockPieceSpan = 60'000'000'000;
inline constexpr size_t kClockPieceCalls = 100'000;
// At most this many stretches (a day-long trace: stretches of 22 minutes).
inline constexpr int64_t kMaxClockPieces = 64;

// The clocks of `nodes` nodes from their edges' evidence, every one zero
// when no edge shows skew. `t0` and `t1` bound the trace's time; `calls`
// is how many calls the evidence comes from. Vectors in `edges` are
// reordered. Each edge's bounds are read on its own, the edges taken in
// turn by up to `threads` threads when there are many samples.
ClockCorrection SolveClockOffsets(std::vector<EdgeClockEvidence>& edges,
                                  size_t nodes, trace::TimeNs t0,
                                  trace::TimeNs t1, size_t calls = 0,
                                  int threads = 1);

}  // namespace bbprof::nesting

#endif  // BBPROF_NESTING_SKEW_SKEW_H_
