#include "nesting/skew/skew.h"

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <numeric>
#include <optional>
#include <utility>
#include <vector>

#include "base/workers.h"

namespace bbprof::nesting {

namespace {

using trace::TimeNs;

// Bounds are read at the 1st percentile of each list, not at its extreme:
// the assignment they come from has some wrong parents, and each of those
// can give any value inside the windows it was chosen with.
constexpr double kBoundQuantile = 0.01;
// Edges are solved side by side from this many samples in all (a thread
// costs 18-100 us to start; the first 100,000 calls of a multitier trace
// give about 300,000).
constexpr size_t kParallelSamples = 65536;
// Drift is read off the lower envelope of each list in this many slices of
// the trace's time, at this percentile of each slice.
constexpr int kDriftSlices = 8;
constexpr double kDriftQuantile = 0.05;
// Quartz drifts by tens of parts per million; a slope beyond this is noise.
constexpr double kMaxDrift = 1e-3;

TimeNs LowQuantile(std::vector<TimeNs>& v, double q) {
  const auto k = static_cast<size_t>(q * static_cast<double>(v.size()));
  std::nth_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(k),
                   v.end());
  return v[k];
}

// Which of `n` equal slices of [t0, t1] (t1 > t0) time t falls in; times
// outside go to the nearest.
size_t SliceOf(TimeNs t, TimeNs t0, TimeNs t1, int n) {
  const double width = static_cast<double>(t1 - t0) / n;
  return static_cast<size_t>(std::clamp(
      static_cast<int>(static_cast<double>(t - t0) / width), 0, n - 1));
}

// The slope, in seconds per second, of a line through the low percentile of
// each slice of time that holds enough samples, each at the mean time of its
// samples; none with fewer than three such slices. (Not at the slice's
// middle: a slice that traffic fills only in part, at the edge of a lull,
// would put its percentile seconds away from where it was read, and bend
// the slope.)
std::optional<double> EnvelopeSlope(const std::vector<ClockSample>& samples,
                                    TimeNs t0, TimeNs t1) {
  if (t1 <= t0) return std::nullopt;
  std::vector<std::vector<TimeNs>> slice(kDriftSlices);
  std::vector<double> time_sum(kDriftSlices, 0.0);
  for (const ClockSample& s : samples) {
    const size_t k = SliceOf(s.t, t0, t1, kDriftSlices);
    slice[k].push_back(s.v);
    time_sum[k] += static_cast<double>(s.t - t0);
  }
  double n = 0, sx = 0, sy = 0, sxx = 0, sxy = 0;
  for (int k = 0; k < kDriftSlices; ++k) {
    auto& v = slice[static_cast<size_t>(k)];
    if (v.size() < kMinClockEvidence) continue;
    const double x =
        time_sum[static_cast<size_t>(k)] / static_cast<double>(v.size());
    const auto y = static_cast<double>(LowQuantile(v, kDriftQuantile));
    n += 1;
    sx += x;
    sy += y;
    sxx += x * x;
    sxy += x * y;
  }
  if (n < 3) return std::nullopt;
  return (n * sxy - sx * sy) / (n * sxx - sx * sx);
}

// The low percentile of the samples once a drift `slope` (from tc) is taken
// out of them, `sign` saying whether they grow (+1) or shrink (-1) with d.
TimeNs DetrendedQuantile(const std::vector<ClockSample>& samples, double slope,
                         int sign, TimeNs tc, double q) {
  std::vector<TimeNs> v;
  v.reserve(samples.size());
  for (const ClockSample& s : samples) {
    v.push_back(s.v - sign * static_cast<TimeNs>(
                                 slope * static_cast<double>(s.t - tc)));
  }
  return LowQuantile(v, q);
}

}  // namespace

bool ClockCorrection::any() const {
  return std::any_of(offset.begin(), offset.end(),
                     [](TimeNs o) { return o != 0; }) ||
         std::any_of(drift.begin(), drift.end(),
                     [](double d) { return d != 0; });
}

trace::TimeNs ChooseSkewWindow(std::vector<trace::TimeNs>& needs,
                               uint64_t children) {
  // A clock offset d makes every child whose true gap to its parent's
  // start (or end) is below d miss by d minus that gap: needs spread from
  // 0 up to d, with a sharp upper edge at d. Lost parents (a sniffer drop)
  // also leave children missing, by whatever the distance to another call
  // is, so the edge is read at the 99th percentile, not the maximum. That
  // percentile is low: each miss is measured to the nearest call, which,
  // with other calls in flight, is often nearer than the cause (most of all
  // for a call made after its cause returned, an asynchronous server). So
  // the window is twice it, not a margin of a tenth: the window must reach
  // the cause, not the nearest call (docs/nesting.md, "Windows per
  // edge").
  if (needs.size() < 5 || static_cast<double>(needs.size()) <
                              0.005 * static_cast<double>(children)) {
    return 0;
  }
  const size_t k = (needs.size() * 99 + 99) / 100 - 1;
  std::nth_element(needs.begin(),
                   needs.begin() + static_cast<std::ptrdiff_t>(k), needs.end());
  const trace::TimeNs w = needs[k] * 2;
  return std::min(w, kAutoSkewCap);
}

// Each edge bounds its offset d from above (every child starts after its
// parent, every call returns after it was made) and, when its calls have
// parents, from below (every child returns before its parent): the bound
// argument of clock synchronisation (a message cannot arrive before it was
// sent; Lamport 1978, and NTP's filter of the smallest round trips, RFC
// 5905), applied to the nesting of calls instead of to messages. Drift is
// the slope of the lists' lower envelopes over time (as NTP's frequency
// discipline follows the trend of the offsets it filters), taken out before
// the bounds are read; with two lists only (an edge with no children, or
// whose calls have no parent: an external client's), the slope nearer 0,
// since a list's values also follow the trend of its gaps (latencies that
// grow or shrink with the load over a run) and only a slope both lists
// show is the clock's. An edge whose interval holds 0 shows no skew and
// gets d = 0, drift 0 (an unskewed trace is left exactly as it is), unless
// the trace is long (kClockPieceSpan) and some stretch of it, read as
// stamped, does not hold 0: a drift left over, kept; otherwise d is the
// interval's midpoint, or its upper bound when there is no lower one. The
// bounds (not the drift) are read off the children that had one candidate
// when an edge has at least kMinClockEvidence of them: a wrong parent
// always tightens a bound, so at high load the 1st percentile
// of all children crosses the true offset, while a child with one
// candidate has its true parent. The drift stays with every child: wrong
// parents shift a lower envelope by about as much in every slice of time,
// which leaves its slope, and few samples per slice would not. When the
// assignment's bounds contradict each other, only the latency bound, which
// needs no assignment, is kept against the lower one; failing that, the lower
// one goes. The nodes' clocks then follow from the edges along a spanning tree
// that takes the narrowest intervals first (Kruskal's algorithm), one tree per
// connected part, its first node at 0. Offsets only matter as differences
// between the nodes of an edge, so where the root sits changes nothing.
ClockCorrection SolveClockOffsets(std::vector<EdgeClockEvidence>& edges,
                                  size_t nodes, TimeNs t0, TimeNs t1,
                                  size_t calls, int threads) {
  struct Estimate {
    trace::NodeId caller, callee;
    TimeNs d;
    double drift;
    TimeNs width;  // max(): one-sided
  };
  constexpr TimeNs kOpen = std::numeric_limits<TimeNs>::max();
  const TimeNs tc = t0 + (t1 - t0) / 2;
  const int pieces = static_cast<int>(std::min<int64_t>(
      {(t1 - t0) / kClockPieceSpan,
       static_cast<int64_t>(calls / kClockPieceCalls), kMaxClockPieces}));
  // One edge's estimate, none when it has too little evidence.
  auto estimate = [&](EdgeClockEvidence& e) -> std::optional<Estimate> {
    if (e.latencies.empty() && e.child_starts.size() < kMinClockEvidence)
      return std::nullopt;
    std::vector<double> slopes;
    for (auto [list, sign] :
         {std::pair{&e.latencies, 1}, std::pair{&e.child_starts, 1},
          std::pair{&e.parent_ends, -1}}) {
      if (auto b = EnvelopeSlope(*list, t0, t1)) slopes.push_back(sign * *b);
    }
    double drift = 0;
    if (!slopes.empty()) {
      std::sort(slopes.begin(), slopes.end());
      const size_t m = slopes.size() / 2;
      // With two lists there is no third to break a tie, and their mean
      // would take one list's own trend for the clock's: the slope nearer
      // 0 is the one both lists support.
      drift = slopes.size() % 2 != 0                          ? slopes[m]
              : std::abs(slopes[m - 1]) < std::abs(slopes[m]) ? slopes[m - 1]
                                                              : slopes[m];
      if (!(std::abs(drift) <= kMaxDrift)) drift = 0;
    }
    const auto& starts = e.sure_child_starts.size() >= kMinClockEvidence
                             ? e.sure_child_starts
                             : e.child_starts;
    const auto& ends = e.sure_parent_ends.size() >= kMinClockEvidence
                           ? e.sure_parent_ends
                           : e.parent_ends;
    struct Interval {
      TimeNs lower, upper;
      bool has_lower;
      TimeNs d;
    };
    auto interval_of = [&](const std::vector<ClockSample>& lat,
                           const std::vector<ClockSample>& st,
                           const std::vector<ClockSample>& en, double slope) {
      const TimeNs by_latency =
          lat.empty() ? kOpen : DetrendedQuantile(lat, slope, 1, tc, 0.0);
      const TimeNs by_children =
          st.size() >= kMinClockEvidence
              ? DetrendedQuantile(st, slope, 1, tc, kBoundQuantile)
              : kOpen;
      Interval r{0, std::min(by_latency, by_children),
                 en.size() >= kMinClockEvidence, 0};
      if (r.has_lower) {
        r.lower = -DetrendedQuantile(en, slope, -1, tc, kBoundQuantile);
      }
      if (r.has_lower && r.lower > r.upper) {
        if (r.lower <= by_latency) {
          r.upper = by_latency;
        } else {
          r.has_lower = false;
        }
      }
      if (r.has_lower) {
        r.d = (r.lower <= 0 && r.upper >= 0) ? 0
                                             : r.lower + (r.upper - r.lower) / 2;
      } else {
        r.d = std::min<TimeNs>(0, r.upper);
      }
      return r;
    };
    auto interval = [&](double slope) {
      return interval_of(e.latencies, starts, ends, slope);
    };
    // An edge whose bounds as stamped hold 0 shows no skew: a drift read
    // off few samples (or off the trend of the gaps themselves) must not
    // move an interval that holds 0 off it.
    Interval r = interval(0.0);
    if (r.d != 0) r = interval(drift);
    // But on a long trace a drift left over by the last round (read to a
    // few tenths of a ppm: a hundred microseconds over minutes) is near 0
    // mid-trace and only misses 0 at the ends, and the whole trace's
    // interval, read at the 1st percentile of every sample, holds 0, so
    // the rounds would stop with the ends of the trace skewed
    // (docs/nesting.md, "Clock offsets"). So each
    // stretch of about kClockPieceSpan is read as stamped too, and when
    // one does not hold 0 the edge keeps its drift, and the offset of its
    // detrended interval (0 when that holds 0).
    bool drifts = false;
    if (r.d == 0 && drift != 0 && pieces >= 2) {
      // Each list cut into the stretches in one pass.
      auto cut = [&](const std::vector<ClockSample>& from) {
        std::vector<std::vector<ClockSample>> to(static_cast<size_t>(pieces));
        for (const ClockSample& x : from) {
          to[SliceOf(x.t, t0, t1, pieces)].push_back(x);
        }
        return to;
      };
      const auto lat = cut(e.latencies), st = cut(starts), en = cut(ends);
      for (size_t k = 0; k < lat.size() && !drifts; ++k) {
        drifts = interval_of(lat[k], st[k], en[k], 0.0).d != 0;
      }
    }
    if (drifts) r = interval(drift);
    if (r.d == 0 && !drifts) drift = 0;
    return Estimate{e.caller, e.callee, r.d, drift,
                    r.has_lower ? r.upper - r.lower : kOpen};
  };
  // The edges side by side when their samples are many (each edge's
  // quantiles copy and partly sort its lists), in edge order after.
  size_t samples = 0;
  for (const EdgeClockEvidence& e : edges) {
    samples +=
        e.latencies.size() + e.child_starts.size() + e.parent_ends.size();
  }
  std::vector<std::optional<Estimate>> by_edge(edges.size());
  RunPartsOn(samples >= kParallelSamples ? threads : 1,
             static_cast<int>(edges.size()),
             [&](int k) { by_edge[k] = estimate(edges[k]); });
  std::vector<Estimate> est;
  for (const std::optional<Estimate>& e : by_edge) {
    if (e) est.push_back(*e);
  }
  ClockCorrection clocks;
  clocks.t0 = tc;
  clocks.offset.assign(nodes, 0);
  clocks.drift.assign(nodes, 0.0);
  clocks.root.resize(nodes);
  std::iota(clocks.root.begin(), clocks.root.end(), 0u);
  if (std::all_of(est.begin(), est.end(),
                  [](const Estimate& e) { return e.d == 0 && e.drift == 0; })) {
    return clocks;
  }
  std::stable_sort(
      est.begin(), est.end(),
      [](const Estimate& a, const Estimate& b) { return a.width < b.width; });
  NodeParts joined(nodes);
  // Tree edges per node: the neighbour, and its clock minus this one's.
  struct Link {
    size_t to;
    TimeNs d;
    double drift;
  };
  std::vector<std::vector<Link>> tree(nodes);
  for (const Estimate& e : est) {
    const size_t a = e.caller, b = e.callee;
    if (a >= nodes || b >= nodes || a == b) continue;
    if (!joined.Join(static_cast<uint32_t>(a), static_cast<uint32_t>(b)))
      continue;
    tree[a].push_back({b, e.d, e.drift});
    tree[b].push_back({a, -e.d, -e.drift});
  }
  std::vector<bool> seen(nodes, false);
  std::vector<size_t> stack;
  for (size_t s = 0; s < nodes; ++s) {
    if (seen[s]) continue;
    seen[s] = true;
    stack.push_back(s);
    while (!stack.empty()) {
      const size_t u = stack.back();
      stack.pop_back();
      for (const Link& l : tree[u]) {
        if (seen[l.to]) continue;
        seen[l.to] = true;
        clocks.offset[l.to] = clocks.offset[u] + l.d;
        clocks.drift[l.to] = clocks.drift[u] + l.drift;
        clocks.root[l.to] = static_cast<uint32_t>(s);
        stack.push_back(l.to);
      }
    }
  }
  return clocks;
}

}  // namespace bbprof::nesting
