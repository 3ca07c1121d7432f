// Clock skew in the nesting algorithm: section 7.5.6's skew window, worked
// out per edge from the trace, and beyond it, clock offsets and drifts
// solved from a first assignment and subtracted before parents are chosen
// again (docs/nesting.md, "Clock skew"). This is the pass over the call
// table; the arithmetic of windows and clocks is in skew.h. It runs between
// step 1 (call_pairs.h) and steps 2 to 4 (parent_choice.h), which it also
// runs for its first assignments.
#ifndef BBPROF_NESTING_SKEW_SKEW_ESTIMATION_H_
#define BBPROF_NESTING_SKEW_SKEW_ESTIMATION_H_

#include <utility>
#include <vector>

#include "nesting/bins.h"
#include "nesting/call_table.h"
#include "nesting/nesting.h"
#include "nesting/skew/skew.h"
#include "nesting/steps/candidates.h"

namespace bbprof::nesting {

// What the skew pass works out and keeps. Sizes: windows and skew per edge,
// clocks per node; observed is one pair of times per call, kept only while
// the corrected times are in use.
struct SkewState {
  EdgeWindows windows;         // (start, end) by child edge
  std::vector<EdgeSkew> skew;  // the edges given a window, by name
  // The nonzero clock offsets by name, and their sum over the rounds.
  std::vector<NodeClockOffset> clock_offsets;
  ClockCorrection clock_total;
  // The times as stamped while corrected ones are in the table (empty:
  // none corrected).
  std::vector<std::pair<trace::TimeNs, trace::TimeNs>> observed;
};

// Section 7.5.6 tolerates skew with one window the user must choose;
// here each edge B->C gets its own, from the trace (see skew_estimation.cc).
// Sets params->skew_window to the widest window.
void EstimateSkew(const CallTable& table, SkewState* state, Params* params);

// Beyond section 7.5.6: up to kClockRounds rounds of a first assignment
// (AssignParents), clocks solved from it (SolveClockOffsets), every
// timestamp moved back by its node's clock, and the windows estimated
// again. Leaves no assignment behind.
void CorrectClocks(const BinScale& scale, CallTable* table, Params* params,
                   SkewState* state, InputStats* stats);

// The timestamps as stamped, after CorrectClocks moved them, so latencies
// and call delays are reported as stamped; in ranges on `threads` threads.
void RestoreObservedTimes(CallTable* table, SkewState* state, int threads);

// One time range's clocks (a stream segment's NestingResult): its nonzero
// offsets, each relative to its part's first node, at time `at`; `weight`
// is how much evidence they rest on (the segment's calls).
struct RangeClocks {
  std::vector<NodeClockOffset> clocks;
  trace::TimeNs at = 0;
  double weight = 1;
};

// The clocks of the whole trace from its ranges' (the stream and MPI
// drivers): each range solves its own, relative to its own first node, at
// its own middle. Per connected part, one reference (the one the most
// weight used; ties by name), and each node's drift and then its offset at
// `at` the weighted least-squares fit of every range's differences: a
// range's offset is first moved to `at` by the fitted drifts. Averaging
// ranges' offsets as given would mix references and times.
std::vector<NodeClockOffset> MergeRangeClocks(
    const std::vector<RangeClocks>& ranges, trace::TimeNs at);

}  // namespace bbprof::nesting

#endif  // BBPROF_NESTING_SKEW_SKEW_ESTIMATION_H_
