#include "nesting/skew/skew_estimation.h"

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <map>
#include <numeric>
#include <set>
#include <string>
#include <tuple>
#include <type_traits>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "base/workers.h"
#include "nesting/assignment.h"
#include "nesting/bins.h"
#include "nesting/steps/candidates.h"
#include "nesting/steps/parent_choice.h"
#include "trace/timestamp.h"

namespace bbprof::nesting {

using trace::NodeId;
using trace::TimeNs;

// For every call B->C the sweep finds the call into B that misses enclosing
// it by the least (how much later it starts, how much earlier it ends; zero
// if it encloses it). Without skew every caused call is enclosed by its
// cause, so nothing misses; a clock offset of d makes the children whose
// true gap is below d miss by up to d, and ChooseSkewWindow reads d off
// those misses, for the start and the end separately (the two involve
// different pairs of clocks). Calls with no call into B within
// kAutoSkewCap (a client's requests) are not counted, nor are ends
// measured with an assumed return (ImputeLostReturns). Pathids are
// ignored, so evaluation's "cheating" run gets the same windows.
void EstimateSkew(const CallTable& table, SkewState* state, Params* params) {
  const Pair* const pairs = table.pairs.data();
  struct Needs {
    uint64_t children = 0, missed = 0;
    std::vector<TimeNs> start, end;
  };
  // Per edge, numbered by a flat index as the sweep first meets it (one
  // flat lookup per child: a node-based map's lookup would be most of
  // this pass). Each
  // part of the sweep numbers its own; merged in part order below, the
  // edges and their lists are in the order one sweep would give.
  struct alignas(64) Part {
    KeyIndex edge_ids;
    std::vector<Needs> by_id;
  };
  SweepParts<Part> parts = SweepEnclosingInParts<Part>(
      table, kAutoSkewCap, params->threads,
      [&](Part& part, int, uint32_t child, const std::vector<uint32_t>& calls) {
        const Pair& c = pairs[child];
        TimeNs best_start = 0, best_end = 0, best = -1;
        for (uint32_t p : calls) {
          const Pair& pp = pairs[p];
          const bool starts_before =
              pp.call < c.call || (pp.call == c.call && p < child);
          const TimeNs s =
              starts_before ? 0 : std::max<TimeNs>(1, pp.call - c.call);
          // An assumed return (the real one lost) says nothing of clocks.
          const TimeNs e =
              pp.imputed || c.imputed ? 0 : std::max<TimeNs>(0, c.ret - pp.ret);
          if (s > kAutoSkewCap || e > kAutoSkewCap) continue;
          const TimeNs m = std::max(s, e);
          if (best < 0 || m < best ||
              (m == best && s + e < best_start + best_end)) {
            best = m;
            best_start = s;
            best_end = e;
          }
        }
        if (best < 0) return;
        const auto [id, inserted] =
            part.edge_ids.Insert(CallTable::EdgeKey(c));
        if (inserted) part.by_id.emplace_back();
        Needs& n = part.by_id[id];
        ++n.children;
        if (best == 0) return;
        ++n.missed;
        if (best_start > 0) n.start.push_back(best_start);
        if (best_end > 0) n.end.push_back(best_end);
      });
  KeyIndex& edge_ids = parts.states[0].edge_ids;
  std::vector<Needs>& by_id = parts.states[0].by_id;
  for (size_t p = 1; p < parts.states.size(); ++p) {
    Part& part = parts.states[p];
    for (uint32_t local = 0; local < part.edge_ids.size(); ++local) {
      const auto [id, inserted] = edge_ids.Insert(part.edge_ids.key(local));
      if (inserted) by_id.emplace_back();
      Needs& n = by_id[id];
      Needs& more = part.by_id[local];
      n.children += more.children;
      n.missed += more.missed;
      n.start.insert(n.start.end(), more.start.begin(), more.start.end());
      n.end.insert(n.end.end(), more.end.begin(), more.end.end());
    }
  }
  TimeNs widest = 0;
  for (uint32_t id = 0; id < edge_ids.size(); ++id) {
    const uint64_t edge = edge_ids.key(id);
    Needs& n = by_id[id];
    const TimeNs ws = ChooseSkewWindow(n.start, n.children);
    const TimeNs we = ChooseSkewWindow(n.end, n.children);
    if (ws == 0 && we == 0) continue;
    state->windows[edge] = {ws, we};
    widest = std::max({widest, ws, we});
    EdgeSkew e;
    e.caller = table.names[static_cast<NodeId>(edge >> 32)];
    e.callee = table.names[static_cast<NodeId>(edge & 0xFFFFFFFFu)];
    e.start_window_s = trace::NsToSeconds(ws);
    e.end_window_s = trace::NsToSeconds(we);
    e.children = n.children;
    e.missed = n.missed;
    state->skew.push_back(std::move(e));
  }
  std::sort(state->skew.begin(), state->skew.end(),
            [](const EdgeSkew& a, const EdgeSkew& b) {
              return std::tie(a.caller, a.callee) <
                     std::tie(b.caller, b.callee);
            });
  params->skew_window = widest;
}

namespace {

// The clocks that a first assignment under `windows` bounds (the
// assignment is undone): half a round of CorrectClocks.
ClockCorrection BoundClocks(const BinScale& scale, CallTable* table,
                            const Params& params, const EdgeWindows& windows,
                            InputStats* stats) {
  Pairs& pairs = table->pairs;
  const size_t n_nodes = table->names.size();
  {
    // The clocks are preprocessing shared by every way of choosing
    // parents: the first assignment is the default model's (or more
    // passes), without pathids, so that the baselines and evaluation's
    // cheating run are compared after the same skew handling.
    Params first = params;
    first.use_pathids = false;
    first.assign = Assign::kModel;
    first.refine_passes =
        std::max(params.refine_passes, Params().refine_passes);
    first.timeline_passes =
        std::max(params.timeline_passes, Params().timeline_passes);
    // Nor with the return chain (timeline.cc, ChainReturns): a first
    // assignment made with it can lose a node's offset on a skewed trace
    // of busy fan-ins, so the offsets never depend on it
    // (docs/nesting.md, "Burst order"); the final assignment, on the
    // corrected clocks, gets the term.
    first.return_chain = false;
    first.chained_extra_passes = 0;
    // Every edge that shows no skew gets the probe window (skew.h,
    // kProbeWindow) for this assignment: where long calls into the caller
    // enclose every child (a slow route beside fast ones), a skew that
    // keeps the true parent from enclosing its child shows no miss, and
    // the assignment would give the child to the long call.
    // The edges are found in ranges on the threads, each range's in the
    // order its calls first name them, and entered range after range: the
    // map gets its keys in the order one walk of the calls would give it.
    EdgeWindows probe = windows;
    const int parts = RangeParts(params.threads, pairs.size());
    std::vector<std::vector<uint64_t>> named(static_cast<size_t>(parts));
    RunRanges(parts, pairs.size(), [&](int part, size_t begin, size_t end) {
      std::vector<uint64_t>& keys = named[static_cast<size_t>(part)];
      std::unordered_set<uint64_t> seen;
      for (size_t i = begin; i < end; ++i) {
        const uint64_t key = CallTable::EdgeKey(pairs[i]);
        if (seen.insert(key).second) keys.push_back(key);
      }
    });
    for (const std::vector<uint64_t>& keys : named) {
      for (uint64_t key : keys) {
        probe.try_emplace(key, EdgeWindow{kProbeWindow, kProbeWindow, true});
      }
    }
    first.skew_window = std::max(first.skew_window, kProbeWindow);
    // Its passes are timed as the clock correction's, not as the final
    // assignment's (`nest --timings`).
    first.timings = nullptr;
    AssignParents(first, probe, scale, table, stats);
  }
  // Each edge's bounds are gathered twice: from every child, and from the
  // children whose parent was their only candidate (skew.h). A wrong parent
  // can give any value its window allows, always on the side that tightens
  // a bound (a later-starting wrong parent lowers the child-start bound, an
  // earlier-returning one raises the parent-end bound), so at high load,
  // where a good share of the first assignment's parents are wrong, even
  // the 1st percentile of all children can cross the true offset. A child
  // with one candidate has its true parent, unless that parent is outside
  // the windows or lost.
  //
  // Gathered in ranges of the calls on the threads, each range's lists
  // then appended to the first's in range order: every list in call order,
  // as one walk gives it (on a skewed trace every round walks all of it).
  struct alignas(64) Gathered {
    std::unordered_map<uint64_t, EdgeClockEvidence> evidence;
    TimeNs t0 = std::numeric_limits<TimeNs>::max(),
           t1 = std::numeric_limits<TimeNs>::min();
    size_t returned = 0;
  };
  const int parts = RangeParts(params.threads, pairs.size());
  std::vector<Gathered> gathered(static_cast<size_t>(parts));
  RunRanges(parts, pairs.size(), [&](int part, size_t begin, size_t end) {
    Gathered& g = gathered[static_cast<size_t>(part)];
    auto edge = [&](const Pair& p) -> EdgeClockEvidence& {
      EdgeClockEvidence& e = g.evidence[CallTable::EdgeKey(p)];
      e.caller = p.caller;
      e.callee = p.callee;
      return e;
    };
    for (size_t i = begin; i < end; ++i) {
      const Pair& c = pairs[i];
      if (c.ret < 0) continue;
      ++g.returned;
      g.t0 = std::min(g.t0, c.call);
      g.t1 = std::max(g.t1, c.call);
      EdgeClockEvidence& ce = edge(c);
      if (!c.imputed) ce.latencies.push_back({c.call, c.ret - c.call});
      if (c.parent == kNone) continue;
      const Pair& p = pairs[c.parent];
      const bool sure = c.cand_end - c.cand_begin == 1;
      EdgeClockEvidence& pe = edge(p);
      pe.child_starts.push_back({c.call, c.call - p.call});
      if (sure) pe.sure_child_starts.push_back(pe.child_starts.back());
      // A child made after its parent returned (an asynchronous server)
      // says nothing about the order of the two returns.
      if (!c.imputed && !p.imputed && c.call <= p.ret) {
        ce.parent_ends.push_back({c.ret, p.ret - c.ret});
        if (sure) ce.sure_parent_ends.push_back(ce.parent_ends.back());
      }
    }
  });
  std::unordered_map<uint64_t, EdgeClockEvidence>& evidence =
      gathered[0].evidence;
  TimeNs t0 = gathered[0].t0, t1 = gathered[0].t1;
  size_t returned = gathered[0].returned;
  for (size_t part = 1; part < gathered.size(); ++part) {
    Gathered& g = gathered[part];
    t0 = std::min(t0, g.t0);
    t1 = std::max(t1, g.t1);
    returned += g.returned;
    for (auto& [key, later] : g.evidence) {
      auto [it, inserted] = evidence.try_emplace(key, std::move(later));
      if (inserted) continue;
      EdgeClockEvidence& e = it->second;
      auto append = [](std::vector<ClockSample>& to,
                       const std::vector<ClockSample>& from) {
        to.insert(to.end(), from.begin(), from.end());
      };
      append(e.child_starts, later.child_starts);
      append(e.parent_ends, later.parent_ends);
      append(e.latencies, later.latencies);
      append(e.sure_child_starts, later.sure_child_starts);
      append(e.sure_parent_ends, later.sure_parent_ends);
    }
  }
  std::vector<EdgeClockEvidence> edges;
  edges.reserve(evidence.size());
  for (auto& [key, e] : evidence) edges.push_back(std::move(e));
  std::sort(edges.begin(), edges.end(),
            [](const EdgeClockEvidence& a, const EdgeClockEvidence& b) {
              return std::tie(a.caller, a.callee) <
                     std::tie(b.caller, b.callee);
            });
  ClockCorrection clocks =
      SolveClockOffsets(edges, n_nodes, t0, t1, returned, params.threads);
  ResetAssignment(table);
  return clocks;
}

// The other half: every timestamp moved back by its stamping node's clock,
// the orders sorted again and the windows worked out anew.
void ApplyClocks(const ClockCorrection& clocks, CallTable* table,
                 Params* params, SkewState* state) {
  Pairs& pairs = table->pairs;
  const size_t n_nodes = table->names.size();
  ClockCorrection& total = state->clock_total;
  // The times as stamped are kept by the first round, as it shifts them.
  const bool first_round = state->observed.empty();
  if (first_round) {
    state->observed.resize(pairs.size());
    total.t0 = clocks.t0;
    total.offset.assign(n_nodes, 0);
    total.drift.assign(n_nodes, 0.0);
    total.root.resize(n_nodes);
    std::iota(total.root.begin(), total.root.end(), 0u);
  }
  // The rounds' parts joined: a part's first node is the first node of its
  // part in every round (a round's part lies within the union), so it
  // stays at 0 and the sums stay relative to it.
  NodeParts parts(std::move(total.root));
  for (size_t n = 0; n < n_nodes; ++n) {
    total.offset[n] += clocks.Offset(static_cast<NodeId>(n), total.t0);
    total.drift[n] += clocks.drift[n];
    parts.Join(static_cast<uint32_t>(n), clocks.root[n]);
  }
  total.root.resize(n_nodes);
  for (size_t n = 0; n < n_nodes; ++n) {
    total.root[n] = parts.Find(static_cast<uint32_t>(n));
  }
  const int threads = std::max(1, params->threads);
  RunRanges(RangeParts(threads, pairs.size()), pairs.size(),
            [&](int, size_t begin, size_t end) {
              for (size_t i = begin; i < end; ++i) {
                Pair& p = pairs[i];
                if (first_round) state->observed[i] = {p.call, p.ret};
                p.call -= clocks.Offset(p.caller, p.call);
                if (p.ret >= 0) p.ret -= clocks.Offset(p.callee, p.ret);
              }
            });
  // Both orders sorted again, stably (ties keep their order: the call
  // order's, index order; the return order's, the previous one). The two
  // are independent, and a large share of a clock round: side by side on
  // two threads. Indices sorted by the times in their pairs: the orders
  // are nearly sorted already, so the pairs are read nearly in order, and
  // copies of the times beside the indices (16 bytes an element, not 4)
  // would only move more memory.
  std::vector<uint32_t>& call_order = table->call_order;
  call_order.resize(pairs.size());
  std::iota(call_order.begin(), call_order.end(), 0u);
  auto sort_calls = [&] {
    std::stable_sort(
        call_order.begin(), call_order.end(),
        [&](uint32_t a, uint32_t b) { return pairs[a].call < pairs[b].call; });
  };
  auto sort_returns = [&] {
    std::stable_sort(
        table->ret_order.begin(), table->ret_order.end(),
        [&](uint32_t a, uint32_t b) { return pairs[a].ret < pairs[b].ret; });
  };
  RunParts(std::min(threads, 2), [&](int job) {
    if (job == 0) sort_calls();
    if (job == 1 || threads == 1) sort_returns();
  });
  state->windows.clear();
  state->skew.clear();
  EstimateSkew(*table, state, params);
}

// One round of CorrectClocks: returns whether any clock moved.
bool CorrectClocksOnce(const BinScale& scale, CallTable* table, Params* params,
                       SkewState* state, InputStats* stats) {
  const ClockCorrection clocks =
      BoundClocks(scale, table, *params, state->windows, stats);
  // No clock disagrees: the windows stand (asynchrony).
  if (!clocks.any()) return false;
  ApplyClocks(clocks, table, params, state);
  return true;
}

// The first `n` calls of `table` (in call order as stamped: pair order),
// with their returns, node names and op keys: nothing else is set before
// the first assignment.
CallTable FirstCalls(const CallTable& table, size_t n) {
  CallTable sample;
  sample.names = table.names;
  sample.pairs.assign(table.pairs.begin(),
                      table.pairs.begin() + static_cast<std::ptrdiff_t>(n));
  for (uint32_t i : table.ret_order) {
    if (i < n) sample.ret_order.push_back(i);
  }
  auto first = [n](const auto& v) {
    return std::decay_t<decltype(v)>(
        v.begin(), v.begin() + static_cast<std::ptrdiff_t>(std::min(n, v.size())));
  };
  sample.op_of = first(table.op_of);
  sample.id_of = first(table.id_of);
  sample.key_callee = first(table.key_callee);
  return sample;
}

}  // namespace

// The windows admit a wrong parent anywhere in their width, and an offset
// shift admits none. So when the trace needs windows, a first assignment
// is made with them (the default model, no pathids, so that evaluation's
// cheating run gets the same offsets), and each edge's children, parents
// and latencies bound the offset between its two clocks
// (SolveClockOffsets, skew.h). Every timestamp is then moved back by its
// stamping node's offset (a call's start by the caller's, its return by
// the callee's), the windows are worked out again for what skew is left,
// and the parents are chosen afresh. Observed times come back before paths
// are built (RestoreObservedTimes), so latencies and call delays are
// reported as stamped. Each round learns from the assignment the previous
// round's clocks allowed, so a first assignment spoilt by wide windows
// (many requests in flight) is mended by the next; rounds stop when no
// window is left or the offsets stop moving.
void CorrectClocks(const BinScale& scale, CallTable* table, Params* params,
                   SkewState* state, InputStats* stats) {
  constexpr int kClockRounds = 3;
  if (table->ret_order.empty()) return;  // no call returned: no bound
  // A trace that needs no window is probed once: its clocks are bounded
  // from an assignment with the probe windows, and the correction is kept
  // only if it leaves every child enclosed as before. A correction that
  // makes calls miss was read off wrong parents (many calls in flight, few
  // children with one candidate), not off a skew the trace hid, and the
  // trace is left exactly as it was stamped.
  // The probe's cost is bounded: on a long trace its clocks are bounded
  // from the first kProbeCalls calls (offsets do not change with the
  // length of a trace), then applied to all of it.
  if (state->windows.empty()) {
    ClockCorrection clocks;
    if (table->pairs.size() > kProbeCalls) {
      CallTable sample = FirstCalls(*table, kProbeCalls);
      InputStats sample_stats = *stats;
      clocks = BoundClocks(scale, &sample, *params, state->windows,
                           &sample_stats);
    } else {
      clocks = BoundClocks(scale, table, *params, state->windows, stats);
    }
    if (!clocks.any()) return;
    std::vector<uint32_t> stamped_call_order = table->call_order;
    std::vector<uint32_t> stamped_ret_order = table->ret_order;
    ApplyClocks(clocks, table, params, state);
    if (!state->windows.empty()) {
      RestoreObservedTimes(table, state, params->threads);
      table->call_order = std::move(stamped_call_order);
      table->ret_order = std::move(stamped_ret_order);
      *state = SkewState{};
      params->skew_window = 0;
      return;
    }
  } else {
    for (int round = 0; round < kClockRounds && !state->windows.empty();
         ++round) {
      if (!CorrectClocksOnce(scale, table, params, state, stats)) break;
    }
  }
  const ClockCorrection& total = state->clock_total;
  for (size_t n = 0; n < total.offset.size(); ++n) {
    if (total.offset[n] != 0 || total.drift[n] != 0) {
      state->clock_offsets.push_back({table->names[n],
                                      trace::NsToSeconds(total.offset[n]),
                                      total.drift[n] * 1e6,
                                      table->names[total.root[n]]});
    }
  }
  std::sort(state->clock_offsets.begin(), state->clock_offsets.end(),
            [](const NodeClockOffset& a, const NodeClockOffset& b) {
              return a.node < b.node;
            });
}

void RestoreObservedTimes(CallTable* table, SkewState* state, int threads) {
  if (state->observed.empty()) return;
  const size_t n = table->pairs.size();
  RunRanges(RangeParts(threads, n), n, [&](int, size_t begin, size_t end) {
    for (size_t i = begin; i < end; ++i) {
      table->pairs[i].call = state->observed[i].first;
      table->pairs[i].ret = state->observed[i].second;
    }
  });
  state->observed.clear();
  state->observed.shrink_to_fit();
}

namespace {

// Weighted least squares for per-node values x, 0 at the pinned nodes,
// from equations x[a] - x[b] = v (weight w), by Gauss-Seidel sweeps: each
// node takes the weighted mean its equations ask of it. Each connected part
// is a graph's Laplacian with one node pinned, so the sweeps converge; when
// every equation has a pinned node as its b (every range used the part's
// reference) one sweep is exact.
struct Difference {
  uint32_t a, b;
  double v, w;
};
std::vector<double> SolveDifferences(const std::vector<Difference>& eqs,
                                     const std::vector<bool>& pinned) {
  const size_t n = pinned.size();
  std::vector<double> x(n, 0.0);
  std::vector<std::vector<uint32_t>> touching(n);
  for (uint32_t i = 0; i < eqs.size(); ++i) {
    touching[eqs[i].a].push_back(i);
    touching[eqs[i].b].push_back(i);
  }
  constexpr int kMaxSweeps = 10'000;
  for (int sweep = 0; sweep < kMaxSweeps; ++sweep) {
    double moved = 0, scale = 0;
    for (uint32_t u = 0; u < n; ++u) {
      if (pinned[u] || touching[u].empty()) continue;
      double sum = 0, weight = 0;
      for (uint32_t i : touching[u]) {
        const Difference& e = eqs[i];
        sum += e.w * (e.a == u ? x[e.b] + e.v : x[e.a] - e.v);
        weight += e.w;
      }
      const double next = sum / weight;
      moved = std::max(moved, std::abs(next - x[u]));
      scale = std::max(scale, std::abs(next));
      x[u] = next;
    }
    if (moved <= 1e-12 * std::max(scale, 1e-9)) break;
  }
  return x;
}

}  // namespace

std::vector<NodeClockOffset> MergeRangeClocks(
    const std::vector<RangeClocks>& ranges, trace::TimeNs at) {
  // Nodes numbered in name order, so that the result comes out by name.
  std::map<std::string, uint32_t> ids;
  for (const RangeClocks& r : ranges) {
    for (const NodeClockOffset& o : r.clocks) {
      ids[o.node];
      ids[o.reference];
    }
  }
  const size_t n = ids.size();
  std::vector<std::string> names;
  names.reserve(n);
  for (auto& [name, i] : ids) {
    i = static_cast<uint32_t>(names.size());
    names.push_back(name);
  }
  // Parts: nodes joined by some range's offset. Each part's reference: the
  // node the ranges leaned on most (a range counts once per reference it
  // used; ids are in name order, so the first of equal weights wins).
  NodeParts parts(n);
  std::vector<double> as_reference(n, 0.0);
  for (const RangeClocks& r : ranges) {
    std::set<uint32_t> used;
    for (const NodeClockOffset& o : r.clocks) {
      parts.Join(ids[o.node], ids[o.reference]);
      used.insert(ids[o.reference]);
    }
    for (uint32_t u : used) as_reference[u] += r.weight;
  }
  std::vector<uint32_t> reference(n);
  for (uint32_t u = 0; u < n; ++u) reference[u] = parts.Find(u);
  for (uint32_t u = 0; u < n; ++u) {
    uint32_t& best = reference[parts.Find(u)];
    if (as_reference[u] > as_reference[best]) best = u;
  }
  std::vector<bool> pinned(n, false);
  for (uint32_t u = 0; u < n; ++u) pinned[reference[parts.Find(u)]] = true;
  // The drifts first; then each range's offsets moved to `at` by them.
  std::vector<Difference> eqs;
  for (const RangeClocks& r : ranges) {
    for (const NodeClockOffset& o : r.clocks) {
      eqs.push_back({ids[o.node], ids[o.reference], o.drift_ppm, r.weight});
    }
  }
  const std::vector<double> drift = SolveDifferences(eqs, pinned);
  eqs.clear();
  for (const RangeClocks& r : ranges) {
    for (const NodeClockOffset& o : r.clocks) {
      const uint32_t a = ids[o.node], b = ids[o.reference];
      const double moved =
          (drift[a] - drift[b]) * 1e-6 * trace::NsToSeconds(at - r.at);
      eqs.push_back({a, b, o.offset_s + moved, r.weight});
    }
  }
  const std::vector<double> offset = SolveDifferences(eqs, pinned);
  std::vector<NodeClockOffset> merged;
  for (uint32_t u = 0; u < n; ++u) {
    if (pinned[u]) continue;
    merged.push_back(
        {names[u], offset[u], drift[u], names[reference[parts.Find(u)]]});
  }
  return merged;  // by name: ids are in name order
}

}  // namespace bbprof::nesting
