// The assignment of step 4 (section 5.1.1.3): the links from a call to its
// parent and among siblings, and the paper's three child penalties, read by
// the parent choice (parent_choice.h) and the timeline passes (timeline.h).
// Header-only: they run once per candidate in the passes' inner loops.
#ifndef BBPROF_NESTING_ASSIGNMENT_H_
#define BBPROF_NESTING_ASSIGNMENT_H_

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

#include "nesting/call_table.h"
#include "nesting/nesting.h"

namespace bbprof::nesting {

// Gives `child` to `parent`, prepended to its children (they are put back
// in call order when paths are built).
inline void Attach(CallTable* table, uint32_t child, uint32_t parent) {
  Pairs& pairs = table->pairs;
  Pair& c = pairs[child];
  c.parent = parent;
  uint16_t& n = pairs[parent].children;
  if (n < std::numeric_limits<uint16_t>::max()) ++n;
  c.next_sibling = pairs[parent].first_child;
  pairs[parent].first_child = child;
}

inline void Detach(CallTable* table, uint32_t child) {
  Pairs& pairs = table->pairs;
  Pair& c = pairs[child];
  uint32_t* link = &pairs[c.parent].first_child;
  while (*link != child) link = &pairs[*link].next_sibling;
  *link = c.next_sibling;
  uint16_t& n = pairs[c.parent].children;
  // A saturated count stays saturated: the parent stays crowded.
  if (n < std::numeric_limits<uint16_t>::max()) --n;
  c.next_sibling = kNone;
  c.parent = kNone;
}

// Undoes an assignment: candidates and parents (the clock rounds of
// skew_estimation.h assign, learn, and assign again).
inline void ResetAssignment(CallTable* table) {
  for (Pair& p : table->pairs) {
    p.cand_begin = p.cand_end = 0;
    p.parent = p.first_child = p.next_sibling = kNone;
    p.children = 0;
  }
  table->cands.clear();
}

// Re-choosing a call's parent detaches it (a walk of its parent's
// children) and scores a timeline per candidate (a sort of theirs): a
// parent with thousands of children (a session that encloses a whole
// capture) would make every such choice cost thousands of steps, and
// the passes quadratic. Calls with a candidate that crowded keep the
// parent the greedy pass gave them.
inline constexpr int kTimelineMaxChildren = 64;
inline bool HasCrowdedCandidate(const CallTable& table, uint32_t child) {
  const Pair& c = table.pairs[child];
  for (uint32_t k = c.cand_begin; k < c.cand_end; ++k) {
    if (table.pairs[table.cands[k]].children > kTimelineMaxChildren) {
      return true;
    }
  }
  return false;
}

// Whether `parent` lies in `child`'s subtree, so that nesting the child
// under it would close a cycle. Under a skew window two calls in opposite
// directions (py -> node and node -> py) can each enclose the other
// within the window, and each become the other's parent: then neither is
// reachable from a root, and the whole request is lost from the paths and
// the export.
inline bool WouldCycle(const CallTable& table, uint32_t child,
                       uint32_t parent) {
  int depth = 0;
  for (uint32_t p = parent; p != kNone && depth <= kMaxDepth;
       p = table.pairs[p].parent, ++depth) {
    if (p == child) return true;
  }
  return false;
}

// The paper's penalties (5.1.1.3) for giving child c to parent p: c
// children already assigned to p count as (1 + c)^-exponent for the
// overlapping-, same- and generic-child penalties. (The paper writes
// c^-x; with c = 0 meaning "no penalty", the first overlapping sibling
// would not be penalised at all, which is not what the penalty is for.)
class Penalties {
 public:
  explicit Penalties(const Params& params)
      : overlap_(params.penalty_overlap),
        same_(params.penalty_same),
        generic_(params.penalty_generic),
        any_(params.penalty_overlap != 0 || params.penalty_same != 0 ||
             params.penalty_generic != 0) {
    for (int n = 0; n < 64; ++n) log1p_.push_back(std::log(1.0 + n));
  }
  // As a factor: (1 + n)^-exponent for the n siblings already there that
  // overlap c, that call the same node, and in all.
  double Factor(const CallTable& table, const Pair& p, const Pair& c) const {
    const double log_penalty = Log(table, p, c);
    return log_penalty == 0 ? 1.0 : std::exp(log_penalty);
  }
  // The same, as a log: the timeline score is a sum of logs. The powers
  // come from tables: a pow per candidate scored would be a large share
  // of the timeline passes' time.
  // `exclude`: a child of p to leave out (kNone: none).
  // Only the kPenaltyScan most recently attached siblings are counted: a
  // parent with thousands of children (a session enclosing a whole
  // capture) would otherwise make every choice that considers it walk
  // them all, quadratic in the trace. Calls are attached in call order, so
  // those are the latest-starting siblings, the ones that can overlap the
  // call; the counts saturate, and so does the penalty.
  static constexpr int kPenaltyScan = 256;
  bool Any() const { return any_; }
  // Log for c against the first n calls of `siblings` (c's siblings that
  // started before it), for scoring a parent's children as a whole.
  double LogAmong(const CallTable& table, const uint32_t* siblings, size_t n,
                  const Pair& c) const {
    if (!any_) return 0.0;
    return LogOver(c, [&](auto&& visit) {
      for (size_t i = n - std::min<size_t>(n, kPenaltyScan); i < n; ++i) {
        visit(table.pairs[siblings[i]]);
      }
    });
  }
  double Log(const CallTable& table, const Pair& p, const Pair& c,
             uint32_t exclude = kNone) const {
    if (!any_) return 0.0;
    return LogOver(c, [&](auto&& visit) {
      int scanned = 0;
      for (uint32_t s = p.first_child; s != kNone && scanned < kPenaltyScan;
           s = table.pairs[s].next_sibling, ++scanned) {
        if (s != exclude) visit(table.pairs[s]);
      }
    });
  }

 private:
  // The penalty of c among the siblings that for_each(visit) visits.
  template <typename ForEach>
  double LogOver(const Pair& c, ForEach&& for_each) const {
    int overlap = 0, same = 0, any = 0;
    for_each([&](const Pair& sib) {
      ++any;
      if (sib.callee == c.callee) ++same;
      if (sib.call < c.ret && c.call < sib.ret) ++overlap;
    });
    return -overlap_ * Log1p(overlap) - same_ * Log1p(same) -
           generic_ * Log1p(any);
  }
  double Log1p(int n) const {
    return n < static_cast<int>(log1p_.size()) ? log1p_[n] : std::log(1.0 + n);
  }

  double overlap_, same_, generic_;
  bool any_;
  std::vector<double> log1p_;
};

}  // namespace bbprof::nesting

#endif  // BBPROF_NESTING_ASSIGNMENT_H_
