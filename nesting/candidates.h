// Step 2 of the nesting algorithm (section 5.1.1.1, Figure 4's "find
// candidates"): the candidate parents of a call B->C are the calls into B
// that started before it and had not returned when it returned; with a
// skew window (7.5.6) a parent may start up to the window after its child
// and end up to the window before it. The sweep that finds the calls
// enclosing each call is shared with the skew estimation
// (skew_estimation.h), hence a template here.
#ifndef BBPROF_NESTING_CANDIDATES_H_
#define BBPROF_NESTING_CANDIDATES_H_

#include <algorithm>
#include <cstdint>
#include <deque>
#include <unordered_map>
#include <utility>
#include <vector>

#include "nesting/call_table.h"
#include "nesting/nesting.h"

namespace bbprof::nesting {

// One child edge's automatic skew windows (skew_estimation.h): a candidate
// parent may start up to `start` after the child and return up to `end`
// before the child returns. With `overlapping`, it must still not have
// returned before the child was made: the probe windows of the clock
// estimate (CorrectClocks), which look for skew on edges that show none,
// where the server is synchronous: its return to the parent and its call
// to the child are both stamped by its own clock, so no skew reorders them.
struct EdgeWindow {
  trace::TimeNs start = 0, end = 0;
  bool overlapping = false;
};
// By child edge (CallTable::EdgeKey).
using EdgeWindows = std::unordered_map<uint64_t, EdgeWindow>;

// Walks the matched pairs in return order and hands each one, with every
// call into its caller that is in flight or returned at most w ago (and
// started by w after its return), to visit(child, calls). A call event
// adds a pair to its callee's active list, a return event takes it out.
// Only calls that did return can be parents (a call whose return was lost
// would otherwise stay "open" forever and become a candidate for every
// later call into its node).
template <class Visit>
void SweepEnclosing(const CallTable& table, trace::TimeNs w, Visit&& visit) {
  const std::vector<Pair>& pairs = table.pairs;
  const size_t n_nodes = table.names.size();
  std::vector<std::vector<uint32_t>> active(n_nodes);
  // Recently returned pairs per node, kept for the skew window.
  std::vector<std::deque<uint32_t>> recent(n_nodes);
  std::vector<uint32_t> calls;
  size_t ci = 0;  // next pair (in call order) to start
  for (uint32_t child : table.ret_order) {
    const Pair& c = pairs[child];
    // With a skew window, a parent that starts after its child (by up to
    // w) must already be active when the child returns: start calls up
    // to w ahead of the return being processed.
    const trace::TimeNs horizon = c.ret + w;
    for (; ci < pairs.size() && pairs[table.InCallOrder(ci)].call <= horizon;
         ++ci) {
      const uint32_t k = table.InCallOrder(ci);
      if (pairs[k].ret >= 0) active[pairs[k].callee].push_back(k);
    }
    // The child itself leaves its callee's active list.
    auto& own = active[c.callee];
    auto pos = std::find(own.begin(), own.end(), child);
    if (pos != own.end()) own.erase(pos);
    if (w > 0) {
      auto& rq = recent[c.callee];
      while (!rq.empty() && pairs[rq.front()].ret < c.ret - w) rq.pop_front();
      rq.push_back(child);
    }
    calls.clear();
    for (uint32_t p : active[c.caller]) {
      if (p != child) calls.push_back(p);
    }
    if (w > 0) {
      auto& rq = recent[c.caller];
      while (!rq.empty() && pairs[rq.front()].ret < c.ret - w) rq.pop_front();
      for (uint32_t p : rq) {
        if (p != child) calls.push_back(p);
      }
    }
    visit(child, calls);
  }
}

// Fills table->cands and each pair's candidate range, under the windows
// of `params` (skew_window, or with skew_auto the edge's own `windows`).
// Sets stats->mean_parallelism (5.1.2).
void FindCandidates(const Params& params, const EdgeWindows& windows,
                    CallTable* table, InputStats* stats);

}  // namespace bbprof::nesting

#endif  // BBPROF_NESTING_CANDIDATES_H_
