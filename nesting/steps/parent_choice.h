// Step 4 of the nesting algorithm (section 5.1.1.3, Figure 4's "find
// nested pairs"): each call takes the candidate with the highest score,
// the scoreboard value at its delay times the paper's penalties; then,
// beyond the paper, refinement passes and the timeline passes
// (timeline.h). AssignParents runs steps 2 to 4 together, as every driver
// and the clock rounds (skew_estimation.h) do.
#ifndef BBPROF_NESTING_STEPS_PARENT_CHOICE_H_
#define BBPROF_NESTING_STEPS_PARENT_CHOICE_H_

#include <cstdint>
#include <vector>

#include "nesting/assignment.h"
#include "nesting/bins.h"
#include "nesting/call_table.h"
#include "nesting/nesting.h"
#include "nesting/steps/candidates.h"
#include "nesting/steps/scoreboards.h"
#include "nesting/timeline/timeline.h"

namespace bbprof::nesting {

// The calls that have candidates, cut into `parts` lists (each in index
// order) that share no candidate: the connected components of the graph
// that links each call to its candidates, whole components to a part
// (in the order of their first call, runs of equal weight, so each part is
// a stretch of time). Every choice of steps 4 and the
// timeline re-choice reads only the call's candidates, their children and
// their candidates' children, all inside one component, so parts chosen
// apart, each in index order, give the assignment that one pass over every
// call gives. One part: every call with candidates, in index order.
std::vector<std::vector<uint32_t>> PartitionByComponents(const CallTable& table,
                                                         int parts);

// The parts AssignParents cuts the calls into for each thread.
inline constexpr int kPartsPerThread = 4;

// Chooses every call's parent among its candidates (table->cands filled,
// no parent assigned yet), the parts (PartitionByComponents) taken in turn
// by Params::threads threads; then the timeline passes, with `edges`
// (NumberTimelineEdges; unused with Assign::kFcfs or no timeline pass).
void FindNestedPairs(const Params& params, const BinScale& scale,
                     const Scoreboards& boards,
                     const std::vector<std::vector<uint32_t>>& parts,
                     TimelineEdges&& edges, CallTable* table);

// Steps 2 to 4 on the table's current times: candidates (FindCandidates),
// scoreboards (Scoreboards), parents (FindNestedPairs). Sets
// stats->mean_parallelism and stats->scoreboards.
void AssignParents(const Params& params, const EdgeWindows& windows,
                   const BinScale& scale, CallTable* table, InputStats* stats);

}  // namespace bbprof::nesting

#endif  // BBPROF_NESTING_STEPS_PARENT_CHOICE_H_
