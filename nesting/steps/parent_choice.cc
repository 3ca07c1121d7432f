#include "nesting/steps/parent_choice.h"

#include <algorithm>
#include <cstdint>
#include <numeric>
#include <utility>
#include <vector>

#include "base/workers.h"
#include "nesting/timeline/timeline.h"

namespace bbprof::nesting {

namespace {

// The candidate with the highest score times the penalties; ties go to
// the earliest parent.
// Candidates in the call's own subtree (WouldCycle) are left out unless
// `allow_cycles`.
uint32_t BestParent(const Scoreboards& boards, const Penalties& penalties,
                    const CallTable& table, uint32_t child,
                    bool allow_cycles = false) {
  const Pairs& pairs = table.pairs;
  const Pair& c = pairs[child];
  double best = -1;
  uint32_t best_parent = kNone;
  for (uint32_t k = c.cand_begin; k < c.cand_end; ++k) {
    uint32_t pi = table.cands[k];
    if (!allow_cycles && WouldCycle(table, child, pi)) continue;
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

// A call every candidate of which lies in its own subtree (a cycle of two
// calls that enclose each other within a skew window) would have no
// parent, and a call with candidates but no parent is in no path. So it
// takes its best candidate p after all, and the call below it on the way
// to p (its child X on that chain) leaves it and chooses again among its
// other candidates.
void AttachBreakingCycle(const Scoreboards& boards, const Penalties& penalties,
                         CallTable* table, uint32_t child) {
  const uint32_t p =
      BestParent(boards, penalties, *table, child, /*allow_cycles=*/true);
  if (p == kNone) return;
  if (!WouldCycle(*table, child, p)) {
    Attach(table, child, p);
    return;
  }
  uint32_t x = p;
  while (table->pairs[x].parent != child) x = table->pairs[x].parent;
  Detach(table, x);
  Attach(table, child, p);
  const uint32_t again = BestParent(boards, penalties, *table, x);
  if (again != kNone) Attach(table, x, again);
}

// The best parent that closes no cycle, or else AttachBreakingCycle.
void AttachBest(const Scoreboards& boards, const Penalties& penalties,
                CallTable* table, uint32_t child) {
  const uint32_t parent = BestParent(boards, penalties, *table, child);
  if (parent != kNone) {
    Attach(table, child, parent);
  } else {
    AttachBreakingCycle(boards, penalties, table, child);
  }
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
// is the default; `--refine-passes 0` is the paper's rule. Then come the
// timeline passes (timeline.h; `--timeline-passes 0` is off).
void FindNestedPairs(const Params& params, const BinScale& scale,
                     const Scoreboards& boards,
                     const std::vector<std::vector<uint32_t>>& parts,
                     TimelineEdges&& edges, CallTable* table) {
  Pairs& pairs = table->pairs;
  const HugeVector<uint32_t>& cands = table->cands;
  const int n_parts = static_cast<int>(parts.size());
  PassClock clock(params.timings);
  if (params.assign == Assign::kFcfs) {
    // Candidates are in call order: the first one open when the call was
    // made is the oldest. Only if none was (a window admitted parents
    // that start later or had returned), the earliest candidate.
    RunPartsOn(params.threads, n_parts, [&](int part) {
      for (uint32_t child : parts[part]) {
        const Pair& c = pairs[child];
        uint32_t pick = kNone;
        for (uint32_t k = c.cand_begin; k < c.cand_end; ++k) {
          if (WouldCycle(*table, child, cands[k])) continue;
          const Pair& p = pairs[cands[k]];
          if (pick == kNone) pick = cands[k];
          if (p.call <= c.call && p.ret >= c.call) {
            pick = cands[k];
            break;
          }
        }
        if (pick != kNone) Attach(table, child, pick);
      }
    });
    clock.Lap("parent choice (step 4)");
    return;
  }
  const Penalties penalties(params);
  RunPartsOn(params.threads, n_parts, [&](int part) {
    for (uint32_t child : parts[part]) {
      AttachBest(boards, penalties, table, child);
    }
    for (int pass = 0; pass < params.refine_passes; ++pass) {
      for (uint32_t child : parts[part]) {
        Pair& c = pairs[child];
        if (c.cand_end - c.cand_begin < 2) continue;  // no choice
        // Detaching from a parent with thousands of children walks them
        // all.
        if (HasCrowdedCandidate(*table, child)) continue;
        if (c.parent != kNone) Detach(table, child);
        AttachBest(boards, penalties, table, child);
      }
    }
  });
  clock.Lap("parent choice (step 4)");
  // The timeline passes time their own learning and re-choice.
  RunTimelinePasses(params, scale, penalties, std::move(edges), parts, table);
}

std::vector<std::vector<uint32_t>> PartitionByComponents(const CallTable& table,
                                                         int parts) {
  const Pairs& pairs = table.pairs;
  const auto n = static_cast<uint32_t>(pairs.size());
  std::vector<std::vector<uint32_t>> out(
      static_cast<size_t>(std::max(1, parts)));
  if (out.size() == 1) {
    for (uint32_t i = 0; i < n; ++i) {
      if (pairs[i].cand_end != pairs[i].cand_begin) out[0].push_back(i);
    }
    return out;
  }
  // Union-find over the calls with path halving, each component's root its
  // first call (the smaller root wins a union), so that the components
  // come in the order of their first call by walking the calls in order.
  // The pairs (56 bytes each) are read once; the passes after read the
  // arrays of 4 and 8 bytes.
  std::vector<uint32_t> up(n), n_cands(n);
  std::iota(up.begin(), up.end(), 0u);
  auto find = [&](uint32_t x) {
    while (up[x] != x) {
      up[x] = up[up[x]];
      x = up[x];
    }
    return x;
  };
  uint64_t total = 0;
  uint32_t with_cands = 0;
  for (uint32_t i = 0; i < n; ++i) {
    const Pair& c = pairs[i];
    n_cands[i] = c.cand_end - c.cand_begin;
    total += n_cands[i];
    with_cands += n_cands[i] != 0;
    if (c.cand_end == c.cand_begin) continue;
    uint32_t a = find(i);  // i's root, kept as the unions move it
    for (uint32_t k = c.cand_begin; k < c.cand_end; ++k) {
      const uint32_t b = find(table.cands[k]);
      if (a < b) {
        up[b] = a;
      } else if (b < a) {
        up[a] = b;
        a = b;
      }
    }
  }
  if (total == 0) return out;  // no call has a choice
  // Room for every call in each list: only the pages a list fills are
  // touched, and none is copied as it grows.
  for (auto& part : out) part.reserve(with_cands);
  // One walk in index order gives every call its component's part. A
  // union keeps the smaller root, so every call points at an earlier one
  // (or is a root) and a root is its component's first call: when the walk
  // reaches call i, every call before it points at its root already, and
  // up[up[i]] is i's. A component goes to the part its first call falls
  // in, the calls' candidates cut into runs of equal weight in index order
  // (each part a stretch of time, so threads write apart in memory); the
  // root keeps its part in n_cands, which the walk has read by then. Which
  // part a component goes to changes only the balance, never a choice.
  const auto n_parts = static_cast<uint64_t>(out.size());
  uint64_t before = 0;
  for (uint32_t i = 0; i < n; ++i) {
    const uint32_t c = n_cands[i];
    uint32_t part;
    if (up[i] == i) {
      part = static_cast<uint32_t>(
          std::min<uint64_t>(n_parts - 1, before * n_parts / total));
      n_cands[i] = part;
    } else {
      up[i] = up[up[i]];
      part = n_cands[up[i]];
    }
    before += c;
    if (c != 0) out[part].push_back(i);
  }
  return out;
}

void AssignParents(const Params& params, const EdgeWindows& windows,
                   const BinScale& scale, CallTable* table, InputStats* stats) {
  PassClock clock(params.timings);
  FindCandidates(params, windows, table, stats);
  clock.Lap("candidates (step 2)");
  // More parts than threads, taken in turn (RunPartsOn): the parts' costs
  // differ (the timeline passes score a parent's whole timeline), and on
  // a shared machine so do the threads' speeds: with one part a thread,
  // the thread done first would wait for the other.
  const int parts = params.threads > 1 ? params.threads * kPartsPerThread : 1;
  // The scoreboards (step 3), the components and the timeline passes'
  // edges only read the candidates, so with two threads or more they are
  // built at once, ahead of every choice: the components and the edges
  // each one thread's work, the scoreboards in parts of the return order,
  // two a thread, taken last to even out the threads, and merged after
  // (their integer sums merge exactly: scoreboards.h).
  const bool timeline =
      params.assign != Assign::kFcfs && params.timeline_passes > 0;
  const size_t n_returned = table->ret_order.size();
  const int board_parts =
      params.threads > 1 ? RangeParts(2 * params.threads, n_returned) : 1;
  std::vector<Scoreboards::Part> board_part(static_cast<size_t>(board_parts));
  std::vector<std::vector<uint32_t>> components;
  TimelineEdges edges;
  const int others = timeline ? 2 : 1;
  RunPartsOn(params.threads, others + board_parts, [&](int job) {
    if (job == 0) {
      components = PartitionByComponents(*table, parts);
    } else if (job < others) {
      edges = NumberTimelineEdges(*table);
    } else {
      const auto p = static_cast<size_t>(job - others);
      board_part[p] = Scoreboards::ScorePart(
          scale, *table, n_returned * p / board_part.size(),
          n_returned * (p + 1) / board_part.size());
    }
  });
  const Scoreboards boards(params, scale, std::move(board_part));
  stats->scoreboards = boards.size();
  clock.Lap("scoreboards (step 3), components, timeline edges");
  FindNestedPairs(params, scale, boards, components, std::move(edges), table);
}

}  // namespace bbprof::nesting
