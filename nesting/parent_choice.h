// Step 4 of the nesting algorithm (section 5.1.1.3, Figure 4's "find
// nested pairs"): each call takes the candidate with the highest score,
// the scoreboard value at its delay times the paper's penalties; then,
// beyond the paper, refinement passes and the timeline passes
// (timeline.h). AssignParents runs steps 2 to 4 together, as every driver
// and the clock rounds (skew_estimation.h) do.
#ifndef BBPROF_NESTING_PARENT_CHOICE_H_
#define BBPROF_NESTING_PARENT_CHOICE_H_

#include "nesting/assignment.h"
#include "nesting/bins.h"
#include "nesting/call_table.h"
#include "nesting/candidates.h"
#include "nesting/nesting.h"
#include "nesting/scoreboards.h"

namespace bbprof::nesting {

// Chooses every call's parent among its candidates (table->cands filled,
// no parent assigned yet).
void FindNestedPairs(const Params& params, const BinScale& scale,
                     const Scoreboards& boards, CallTable* table);

// Steps 2 to 4 on the table's current times: candidates (FindCandidates),
// scoreboards (Scoreboards), parents (FindNestedPairs). Sets
// stats->mean_parallelism and stats->scoreboards.
void AssignParents(const Params& params, const EdgeWindows& windows,
                   const BinScale& scale, CallTable* table, InputStats* stats);

}  // namespace bbprof::nesting

#endif  // BBPROF_NESTING_PARENT_CHOICE_H_
