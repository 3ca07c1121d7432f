#include "nesting/parent_choice.h"

#include <cstdint>

#include "nesting/timeline.h"

namespace bbprof::nesting {

namespace {

// The candidate with the highest score times the penalties; ties go to
// the earliest parent.
uint32_t BestParent(const Scoreboards& boards, const Penalties& penalties,
                    const CallTable& table, uint32_t child) {
  const std::vector<Pair>& pairs = table.pairs;
  const Pair& c = pairs[child];
  double best = -1;
  uint32_t best_parent = kNone;
  for (uint32_t k = c.cand_begin; k < c.cand_end; ++k) {
    uint32_t pi = table.cands[k];
    const Pair& p = pairs[pi];
    double score = boards.Score(table, pi, child);
    score *= penalties.Factor(table, p, c);
    if (score > best || (score == best && p.call < pairs[best_parent].call)) {
      best = score;
      best_parent = pi;
    }
  }
  return best_parent;
}

}  // namespace

// Calls are assigned in the order they were made, so "already assigned"
// means "earlier siblings". Ties go to the earliest parent.
//
// Beyond the paper: greedy assignment in call order judges a call only
// against its earlier siblings, so a call taken by the wrong parent early
// pushes that parent's true child elsewhere (the overlap penalty), and one
// mistake becomes two. Refinement passes (coordinate descent on the same
// score) take each call off its parent and choose again with all of every
// candidate's other children known, which undoes many such swaps. One pass
// (the default) cut instance false negatives on the maketrace samples
// (multitier-normal 3.4% -> 2.2%, Children-parallel 9.4% -> 6.0%,
// Children-d/cc 9.8% -> 6.6%, added-delay 3.9% -> 2.9%) for about 5% more
// time; `--refine-passes 0` is the paper's rule. Then come the timeline
// passes (timeline.h; `--timeline-passes 0` is off).
void FindNestedPairs(const Params& params, const BinScale& scale,
                     const Scoreboards& boards, CallTable* table) {
  std::vector<Pair>& pairs = table->pairs;
  const std::vector<uint32_t>& cands = table->cands;
  if (params.assign == Assign::kFcfs) {
    // Candidates are in call order: the first one open when the call was
    // made is the oldest. Only if none was (a window admitted parents
    // that start later or had returned), the earliest candidate.
    for (uint32_t child = 0; child < pairs.size(); ++child) {
      const Pair& c = pairs[child];
      if (c.cand_end == c.cand_begin) continue;
      uint32_t pick = cands[c.cand_begin];
      for (uint32_t k = c.cand_begin; k < c.cand_end; ++k) {
        const Pair& p = pairs[cands[k]];
        if (p.call <= c.call && p.ret >= c.call) {
          pick = cands[k];
          break;
        }
      }
      Attach(table, child, pick);
    }
    return;
  }
  const Penalties penalties(params);
  for (uint32_t child = 0; child < pairs.size(); ++child) {
    Pair& c = pairs[child];
    if (c.cand_end == c.cand_begin) continue;
    Attach(table, child, BestParent(boards, penalties, *table, child));
  }
  for (int pass = 0; pass < params.refine_passes; ++pass) {
    for (uint32_t child = 0; child < pairs.size(); ++child) {
      Pair& c = pairs[child];
      if (c.cand_end - c.cand_begin < 2) continue;  // no choice
      // Detaching from a parent with thousands of children walks them all.
      if (HasCrowdedCandidate(*table, child)) continue;
      Detach(table, child);
      Attach(table, child, BestParent(boards, penalties, *table, child));
    }
  }
  RunTimelinePasses(params, scale, penalties, table);
}

void AssignParents(const Params& params, const EdgeWindows& windows,
                   const BinScale& scale, CallTable* table, InputStats* stats) {
  FindCandidates(params, windows, table, stats);
  const Scoreboards boards(params, scale, *table);
  stats->scoreboards = boards.size();
  FindNestedPairs(params, scale, boards, table);
}

}  // namespace bbprof::nesting
