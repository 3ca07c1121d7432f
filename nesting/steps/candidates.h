// Step 2 of the nesting algorithm (section 5.1.1.1, Figure 4's "find
// candidates"): the candidate parents of a call B->C are the calls into B
// that started before it and had not returned when it returned; with a
// skew window (7.5.6) a parent may start up to the window after its child
// and end up to the window before it. The sweep that finds the calls
// enclosing each call is shared with the skew estimation
// (skew_estimation.h), hence a template here.
#ifndef BBPROF_NESTING_STEPS_CANDIDATES_H_
#define BBPROF_NESTING_STEPS_CANDIDATES_H_

#include <algorithm>
#include <cstdint>
#include <deque>
#include <memory>
#include <unordered_map>
#include <utility>
#include <vector>

#include "base/workers.h"
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

// The sweep's lists between two returns (SweepEnclosing): per node, the
// calls into it in flight, in call order, and with a window w the calls
// into it that returned at most w ago, in return order. The table's
// arrays are read by pointer (see SweepEnclosingInParts).
class EnclosingLists {
 public:
  EnclosingLists(const Pair* pairs, size_t n_nodes, trace::TimeNs w)
      : pairs_(pairs), w_(w), active_(n_nodes), recent_(n_nodes) {}

  // Call k starts. Only calls that did return can be parents (a call
  // whose return was lost would otherwise stay "open" forever and become
  // a candidate for every later call into its node).
  void Start(uint32_t k) {
    if (pairs_[k].ret >= 0) active_[pairs_[k].callee].push_back(k);
  }
  // Call k returned before the sweep began (SweepEnclosingInParts).
  void Returned(uint32_t k) { recent_[pairs_[k].callee].push_back(k); }

  // The child's return: it leaves its callee's active list, and the calls
  // into its caller in flight or returned at most w ago are listed.
  const std::vector<uint32_t>& Return(uint32_t child) {
    const Pair& c = pairs_[child];
    auto& own = active_[c.callee];
    auto pos = std::find(own.begin(), own.end(), child);
    if (pos != own.end()) own.erase(pos);
    if (w_ > 0) {
      auto& rq = recent_[c.callee];
      Expire(rq, c.ret);
      rq.push_back(child);
    }
    calls_.clear();
    for (uint32_t p : active_[c.caller]) {
      if (p != child) calls_.push_back(p);
    }
    if (w_ > 0) {
      auto& rq = recent_[c.caller];
      Expire(rq, c.ret);
      for (uint32_t p : rq) {
        if (p != child) calls_.push_back(p);
      }
    }
    return calls_;
  }

 private:
  void Expire(std::deque<uint32_t>& rq, trace::TimeNs now) const {
    while (!rq.empty() && pairs_[rq.front()].ret < now - w_) rq.pop_front();
  }

  const Pair* pairs_;
  trace::TimeNs w_;
  std::vector<std::vector<uint32_t>> active_;
  std::vector<std::deque<uint32_t>> recent_;
  std::vector<uint32_t> calls_;
};

// Walks the matched pairs in return order and hands each one, with every
// call into its caller that is in flight or returned at most w ago (and
// started by w after its return), to visit(child, calls). A call event
// adds a pair to its callee's active list, a return event takes it out.
template <class Visit>
void SweepEnclosing(const CallTable& table, trace::TimeNs w, Visit&& visit) {
  const Pairs& pairs = table.pairs;
  EnclosingLists lists(pairs.data(), table.names.size(), w);
  size_t ci = 0;  // next pair (in call order) to start
  for (uint32_t child : table.ret_order) {
    // With a skew window, a parent that starts after its child (by up to
    // w) must already be active when the child returns: start calls up
    // to w ahead of the return being processed.
    const trace::TimeNs horizon = pairs[child].ret + w;
    for (; ci < pairs.size() && pairs[table.InCallOrder(ci)].call <= horizon;
         ++ci) {
      lists.Start(table.InCallOrder(ci));
    }
    visit(child, lists.Return(child));
  }
}

// The sweep above split into parts of the return order, run on `parts`
// threads (RunParts), with the visits of each part handed to its own State
// (visit(state, part, child, calls)); the states come back in part order,
// with `bounds` (part p visited the children at return positions
// [bounds[p], bounds[p + 1])). Every visit sees exactly the calls, in the
// order, that SweepEnclosing gives it, so states merged in part order give
// the one-thread result (docs/nesting.md, "Passes and their state").
//
// A part rebuilds the sweep's state at its first return instead of walking
// there: with both orders sorted by time (ret_order by return, the call
// order by call; both always are, see the check below) the calls started
// before it are the first c0 in call order, c0 the calls made by the
// previous return plus w, and each leaves its callee's list exactly when
// its own return is swept, if it was started by then (call <= ret + w);
// a call stamped more than w after its own return (possible once clocks
// are corrected) was started only after, so it stays. The recent lists
// are the returns of the last w. A part checks that the stretch of each
// order it walks is sorted, and that it ends where the next one starts;
// if either order is not, the whole sweep runs again on one thread.
template <class State>
struct SweepParts {
  std::vector<State> states;
  std::vector<size_t> bounds;
};

template <class State, class Visit>
SweepParts<State> SweepEnclosingInParts(const CallTable& table,
                                        trace::TimeNs window, int parts,
                                        Visit&& visit) {
  // Below this many returns a part, rebuilding its state costs more than
  // the part saves.
  constexpr size_t kMinPart = 4096;
  const Pairs& pairs = table.pairs;
  const std::vector<uint32_t>& order = table.ret_order;
  const size_t n_pairs = pairs.size(), n_ret = order.size();
  const size_t n_nodes = table.names.size();
  SweepParts<State> out;
  auto one_part = [&] {
    out.states.assign(1, State{});
    out.bounds = {0, n_ret};
    SweepEnclosing(table, window,
                   [&](uint32_t child, const std::vector<uint32_t>& calls) {
                     visit(out.states[0], 0, child, calls);
                   });
    return std::move(out);
  };
  const size_t n_parts =
      std::min(static_cast<size_t>(std::max(parts, 1)), n_ret / kMinPart);
  if (n_parts <= 1) return one_part();
  auto call_at = [&](size_t i) { return pairs[table.InCallOrder(i)].call; };
  auto ret_at = [&](size_t j) { return pairs[order[j]].ret; };
  out.bounds.resize(n_parts + 1);
  std::vector<size_t> first_call(n_parts + 1, 0);
  for (size_t p = 0; p <= n_parts; ++p) {
    out.bounds[p] = n_ret * p / n_parts;
    if (p == 0) continue;
    if (p == n_parts) {
      first_call[p] = n_pairs;
      continue;
    }
    // The calls started when the return before the part was swept: those
    // made by its horizon (a binary search, valid if sorted: checked).
    const trace::TimeNs horizon = ret_at(out.bounds[p] - 1) + window;
    size_t lo = 0, hi = n_pairs;
    while (lo < hi) {
      const size_t mid = lo + (hi - lo) / 2;
      if (call_at(mid) <= horizon) {
        lo = mid + 1;
      } else {
        hi = mid;
      }
    }
    first_call[p] = lo;
  }
  // When each call leaves the lists: 0 not swept (in the lists from its
  // start if it returned at all), j + 1 at return position j, kStays never.
  constexpr uint32_t kStays = 0xFFFFFFFFu;
  // Filled by the parts (the pages are first touched on two threads).
  std::unique_ptr<uint32_t[]> gone(new uint32_t[n_pairs]);
  RunParts(static_cast<int>(n_parts), [&](int p) {
    const auto part = static_cast<size_t>(p);
    std::fill(gone.get() + n_pairs * part / n_parts,
              gone.get() + n_pairs * (part + 1) / n_parts, 0u);
  });
  RunParts(static_cast<int>(n_parts), [&](int p) {
    const auto part = static_cast<size_t>(p);
    for (size_t j = out.bounds[part]; j < out.bounds[part + 1]; ++j) {
      const Pair& c = pairs[order[j]];
      gone[order[j]] =
          c.call <= c.ret + window ? static_cast<uint32_t>(j + 1) : kStays;
    }
  });
  out.states.assign(n_parts, State{});
  std::vector<char> sorted(n_parts, 1);
  RunParts(static_cast<int>(n_parts), [&](int p) {
    const auto part = static_cast<size_t>(p);
    const size_t begin = out.bounds[part], end = out.bounds[part + 1];
    // The table's arrays by pointer, copied to this thread: a visit may
    // write a member of the table beside them (FindCandidates' part 0
    // fills table->cands), and reading the vectors there on every step
    // shared that cache line between the threads.
    const Pair* const pairs_at = pairs.data();
    const uint32_t* const ret_order = order.data();
    const size_t n = pairs.size();
    const trace::TimeNs w = window;
    const uint32_t* const by_call =
        table.call_order.empty() ? nullptr : table.call_order.data();
    auto call_index = [by_call](size_t i) {
      return by_call != nullptr ? by_call[i] : static_cast<uint32_t>(i);
    };
    auto call_time = [pairs_at, call_index](size_t i) {
      return pairs_at[call_index(i)].call;
    };
    EnclosingLists lists(pairs_at, n_nodes, w);
    size_t ci = first_call[part];
    for (size_t i = 0; i < ci; ++i) {
      const uint32_t k = call_index(i);
      const uint32_t g = gone[k];
      if (g == 0 || g > begin) lists.Start(k);
    }
    if (w > 0 && begin > 0) {
      const trace::TimeNs from = pairs_at[ret_order[begin]].ret - w;
      size_t lo = 0, hi = begin;
      while (lo < hi) {
        const size_t mid = lo + (hi - lo) / 2;
        if (pairs_at[ret_order[mid]].ret < from) {
          lo = mid + 1;
        } else {
          hi = mid;
        }
      }
      for (size_t j = lo; j < begin; ++j) lists.Returned(ret_order[j]);
    }
    // From here on, SweepEnclosing's loop, checking the orders as it goes.
    State& state = out.states[part];
    for (size_t j = begin; j < end; ++j) {
      const uint32_t child = ret_order[j];
      const trace::TimeNs ret = pairs_at[child].ret;
      if (j > 0 && ret < pairs_at[ret_order[j - 1]].ret) {
        sorted[part] = 0;
        return;
      }
      for (; ci < n && call_time(ci) <= ret + w; ++ci) {
        if (ci > 0 && call_time(ci) < call_time(ci - 1)) {
          sorted[part] = 0;
          return;
        }
        lists.Start(call_index(ci));
      }
      visit(state, p, child, lists.Return(child));
    }
    // The next part starts where this one ended; the last checks the calls
    // made after every return.
    if (part + 1 < n_parts) {
      if (ci != first_call[part + 1]) sorted[part] = 0;
    } else {
      for (size_t i = std::max<size_t>(ci, 1); i < n; ++i) {
        if (call_time(i) < call_time(i - 1)) {
          sorted[part] = 0;
          break;
        }
      }
    }
  });
  for (char s : sorted) {
    if (s == 0) return one_part();
  }
  return out;
}

// Fills table->cands and each pair's candidate range, under the windows
// of `params` (skew_window, or with skew_auto the edge's own `windows`).
// Sets stats->mean_parallelism (5.1.2).
void FindCandidates(const Params& params, const EdgeWindows& windows,
                    CallTable* table, InputStats* stats);

}  // namespace bbprof::nesting

#endif  // BBPROF_NESTING_STEPS_CANDIDATES_H_
