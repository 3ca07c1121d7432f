#include "convolution/search_steps.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>

namespace bbprof::convolution::internal {

int64_t LagQuanta(const Params& p) {
  return (p.max_delay_ns + p.quantum_ns - 1) / p.quantum_ns;
}

Result<std::vector<trace::NodeId>> ChooseRoots(const TraceSummary& s,
                                               const Params& p) {
  std::vector<trace::NodeId> roots;
  const auto nodes = static_cast<trace::NodeId>(s.names.size());
  if (p.roots.empty()) {
    for (trace::NodeId n = 0; n < nodes; ++n) {
      if (!s.receives[n] && s.sent[n] > 0) roots.push_back(n);
    }
    // In RPC traffic every node receives something (a client gets its
    // returns), but causality starts where calls start: at the nodes that
    // make calls and are never called (section 5.3.1 treats calls and
    // returns as plain messages; this only chooses where to look from).
    if (roots.empty()) {
      for (trace::NodeId n = 0; n < nodes; ++n) {
        if (s.sends_calls[n] && !s.receives_calls[n]) roots.push_back(n);
      }
    }
    if (roots.empty()) {
      for (trace::NodeId n = 0; n < nodes; ++n) {
        if (s.sent[n] > 0) roots.push_back(n);
      }
    }
  } else {
    for (const std::string& name : p.roots) {
      auto it = std::find(s.names.begin(), s.names.end(), name);
      if (it == s.names.end()) {
        return Status::Error("--root " + name + ": no such node in the trace");
      }
      const auto n = static_cast<trace::NodeId>(it - s.names.begin());
      if (s.sent[n] == 0) {
        return Status::Error("--root " + name + ": the node sends no messages");
      }
      if (std::find(roots.begin(), roots.end(), n) == roots.end())
        roots.push_back(n);
    }
  }
  return roots;
}

std::vector<Spike> CausalSpikes(std::span<const double> c, int64_t lag,
                                const SpikeParams& p) {
  std::vector<Spike> spikes = FindSpikes(c, p);
  // Section 5.2.3: no negative delays.
  std::erase_if(spikes, [&](const Spike& s) { return s.position < lag; });
  std::stable_sort(
      spikes.begin(), spikes.end(),
      [](const Spike& a, const Spike& b) { return a.value > b.value; });
  return spikes;
}

namespace {

// Section 5.2.2 asks for a wider v "when the variance is significant"; a
// wider window also catches more coincidences.  C's mean is the chance
// level: with square-root counts of sparse bins, C(d) counts pairs of
// messages d apart, and the mean is what unrelated traffic gives.  Widening
// from the spike's own point [pos] to [a, b] pays when, over the positions
// it adds, the bump's excess over the mean is at least the mean: at least
// half of what the added width catches is caused.  On a quiet hop (a queue
// of a few messages a minute) the bump stands far above the chance level
// and the window widens; on busy traffic, where a window a few quanta wider
// catches as many concurrent requests as caused ones, the paper's one
// quantum stays.  (What keeps the chance members a widened window does take
// in from leading a path astray later is Carried.)
bool WideningPays(std::span<const double> c, double mean, int64_t pos,
                  int64_t a, int64_t b) {
  double excess = 0, chance = 0;
  for (int64_t i = a; i <= b; ++i) {
    if (i == pos) continue;
    excess += c[static_cast<size_t>(i)] - mean;
    chance += mean;
  }
  return excess >= chance;
}

}  // namespace

std::vector<MatchWindow> MatchWindows(std::span<const double> c, int64_t lag,
                                      std::span<const Spike> spikes,
                                      const Params& p) {
  const trace::TimeNs mu = p.quantum_ns;
  std::vector<MatchWindow> out;
  out.reserve(spikes.size());
  if (!p.spread_windows) {
    for (const Spike& s : spikes) {
      const trace::TimeNs d = (s.position - lag) * mu;
      out.push_back({d, d - p.tolerance_ns, d + p.tolerance_ns});
    }
    return out;
  }
  // Section 5.2.2 without a given v: each spike's own extent (see the
  // header).  The baseline is the mean of c, as for FindSpikes.
  const auto n = static_cast<int64_t>(c.size());
  double sum = 0;
  for (double x : c) sum += x;
  const double mean = n > 0 ? sum / static_cast<double>(n) : 0.0;
  // Windows as inclusive ranges of positions in c, stronger spikes first.
  std::vector<std::pair<int64_t, int64_t>> taken;
  for (const Spike& s : spikes) {
    const int64_t pos = s.position;
    auto taken_at = [&](int64_t i) {
      for (const auto& [ta, tb] : taken)
        if (ta <= i && i <= tb) return true;
      return false;
    };
    if (taken_at(pos)) continue;  // a bump of a stronger spike's spread delay
    // The run of points at or above half the height `top` (over the mean)
    // around `from`, at delays >= 0, outside stronger spikes' windows and
    // never above the spike's peak (that would be another bump).  On a flank
    // already two points wide, one point between a quarter and half the
    // height is noise; two, one lower, or a dip right next to `from` end it
    // (distinct delays a quantum or two apart look like that).
    const double peak = c[static_cast<size_t>(pos)];
    auto run = [&](int64_t from, double top) {
      const double half = mean + (top - mean) / 2;
      const double quarter = mean + (top - mean) / 4;
      auto edge = [&](int64_t step) {
        int64_t last = from;
        for (int64_t i = from + step; i >= lag && i < n && !taken_at(i);
             i += step) {
          const double x = c[static_cast<size_t>(i)];
          if (x > peak) break;
          if (x >= half) {
            last = i;
            continue;
          }
          if (x < quarter || i != last + step || last == from) break;
        }
        return last;
      };
      return std::make_pair(edge(-1), edge(+1));
    };
    auto [ha, hb] = run(pos, peak);
    int64_t a = pos, b = pos;
    trace::TimeNs delay = (pos - lag) * mu;
    if (hb - ha + 1 > 2) {
      // A spread delay.  Its largest point is noise on top of the bump (the
      // paper's representative, right for detection, too high a height
      // for a width): measure the run again from the run's middle at the
      // height of the three points there.
      const int64_t m = (ha + hb) / 2;
      double sum3 = 0;
      int k = 0;
      for (int64_t i = std::max<int64_t>(m - 1, 0); i <= std::min(m + 1, n - 1);
           ++i, ++k)
        sum3 += c[static_cast<size_t>(i)];
      if (!taken_at(m)) {
        const auto [ra, rb] = run(m, sum3 / k);
        if (rb - ra > hb - ha) {
          ha = ra;
          hb = rb;
        }
      }
      // The half-height run of w points spans +-1.18 sd of a Gaussian
      // (w = 2.355 sd); the window reaches +-2.5 sd = 1.06 w either side.
      const int64_t w = hb - ha + 1;
      const int64_t half_w = (w * 106 + 99) / 100;
      // Centred on the excess's centroid over that range rather than on
      // the run, which a noisy point may have cut short on one side.
      const int64_t mc = (ha + hb) / 2;
      double m0 = 0, m1 = 0;
      for (int64_t i = std::max(mc - half_w, lag);
           i <= std::min(mc + half_w, n - 1); ++i) {
        if (taken_at(i)) continue;
        const double x = std::max(0.0, c[static_cast<size_t>(i)] - mean);
        m0 += x;
        m1 += x * static_cast<double>(i);
      }
      const int64_t mid =
          m0 > 0 ? static_cast<int64_t>(std::llround(m1 / m0)) : mc;
      a = std::min(mid - half_w, pos);
      b = std::max(mid + half_w, pos);
      delay = (mid - lag) * mu;
    }
    // No negative delays (5.2.3), nothing past the lag window.
    a = std::max(a, lag);
    b = std::min(b, 2 * lag);
    // Not into a stronger spike's window.
    for (const auto& [ta, tb] : taken) {
      if (ta > pos) b = std::min(b, ta - 1);
      if (tb < pos) a = std::max(a, tb + 1);
    }
    if (!p.spread_always && (a < pos || b > pos) &&
        !WideningPays(c, mean, pos, a, b)) {
      a = b = pos;
      delay = (pos - lag) * mu;
    }
    taken.emplace_back(a, b);
    // Position q pairs messages whose delay lies in ((q-lag-1) mu,
    // (q-lag+1) mu): a one-point window is the paper's d +- one quantum.
    const trace::TimeNs lo = (a - lag - 1) * mu, hi = (b - lag + 1) * mu;
    out.push_back({std::clamp(delay, lo, hi), lo, hi});
  }
  return out;
}

bool Widened(std::span<const MatchWindow> windows, trace::TimeNs quantum_ns) {
  return std::any_of(windows.begin(), windows.end(), [&](const MatchWindow& w) {
    return w.hi - w.lo > 2 * quantum_ns;
  });
}

trace::TimeNs WidestTolerance(std::span<const MatchWindow> windows) {
  trace::TimeNs w = 0;
  for (const MatchWindow& x : windows)
    w = std::max({w, x.delay - x.lo, x.hi - x.delay});
  return w;
}

void ClaimCaused(std::span<const trace::TimeNs> z,
                 std::span<const trace::TimeNs> v,
                 std::span<const MatchWindow> windows,
                 std::vector<int>& claimed, std::vector<trace::TimeNs>& diff) {
  claimed.assign(z.size(), -1);
  diff.assign(z.size(), 0);
  for (size_t s = 0; s < windows.size(); ++s) {
    const MatchWindow& w = windows[s];
    const trace::TimeNs d = w.delay;
    // Section 5.2.2: z is caused if z - v lies within the spike's window.
    size_t vi = 0;
    for (size_t k = 0; k < z.size(); ++k) {
      if (claimed[k] >= 0) continue;
      const trace::TimeNs t = z[k];
      while (vi < v.size() && v[vi] + w.hi < t) ++vi;
      // The candidate nearest to t - d: scan up to the first past it.
      size_t best = v.size();
      for (size_t q = vi; q < v.size() && v[q] + w.lo <= t; ++q) {
        if (best == v.size() ||
            std::llabs(t - v[q] - d) < std::llabs(t - v[best] - d))
          best = q;
        if (v[q] + d > t) break;
      }
      if (best == v.size()) continue;
      // Causes precede effects even within the tolerance.
      if (t < v[best]) continue;
      claimed[k] = static_cast<int>(s);
      diff[k] = t - v[best];
    }
  }
}

namespace {

// |V| w / T: the share of the trace the group's windows cover, w summed over
// the spikes that claimed its messages (hi - lo + mu each: 2v + mu with a
// fixed v).
double WindowCover(const CausedGroup& g, std::span<const MatchWindow> windows,
                   uint64_t v_count, trace::TimeNs duration_ns,
                   const Params& p) {
  const double duration =
      static_cast<double>(std::max<trace::TimeNs>(duration_ns, p.quantum_ns));
  double window = 0;
  for (const auto& [s, cnt] : g.per_spike) {
    (void)cnt;
    const MatchWindow& w = windows[static_cast<size_t>(s)];
    window += static_cast<double>(w.hi - w.lo + p.quantum_ns);
  }
  return static_cast<double>(v_count) * window / duration;
}

}  // namespace

double ExpectedByChance(const CausedGroup& g,
                        std::span<const MatchWindow> windows, uint64_t sent_jk,
                        uint64_t v_count, trace::TimeNs duration_ns,
                        const Params& p) {
  // In busy traffic some messages j->k fall within the tolerance of a spike
  // by chance: a given one is hit by at least one of the |V| windows with
  // probability 1 - exp(-|V| w / T).
  return static_cast<double>(sent_jk) *
         -std::expm1(-WindowCover(g, windows, v_count, duration_ns, p));
}

bool AboveChance(uint64_t count, double expected, const Params& p) {
  return !(static_cast<double>(count) <
           expected + p.spikes.spike_sigma * std::sqrt(expected));
}

double Carried(double inherited,
               std::span<const std::pair<uint64_t, double>> count_expected,
               uint64_t v_count) {
  if (inherited <= 0 || v_count == 0) return 0;
  double yield = 0;
  for (const auto& [count, expected] : count_expected)
    yield = std::max(yield, static_cast<double>(count) - expected);
  return inherited * std::min(1.0, yield / static_cast<double>(v_count));
}

double ChanceMembers(const CausedGroup& g, std::span<const MatchWindow> windows,
                     uint64_t sent_jk, uint64_t v_count,
                     trace::TimeNs duration_ns, double carried,
                     const Params& p) {
  if (!p.spread_windows) return 0;
  const double n = static_cast<double>(g.count);
  const double unclaimed = std::max(0.0, static_cast<double>(sent_jk) - n);
  const double own =
      unclaimed * std::expm1(WindowCover(g, windows, v_count, duration_ns, p));
  return std::min(n, own + carried);
}

std::vector<DelaySpike> EdgeDelays(const CausedGroup& g) {
  std::vector<DelaySpike> ds;
  for (const auto& [s, cnt] : g.per_spike) {
    (void)s;
    ds.push_back(
        {cnt.second / static_cast<double>(cnt.first) / 1e9, cnt.first});
  }
  std::stable_sort(ds.begin(), ds.end(),
                   [](const DelaySpike& a, const DelaySpike& b) {
                     return a.count > b.count;
                   });
  return ds;
}

bool OnPath(std::span<const std::pair<trace::NodeId, trace::NodeId>> on_path,
            trace::NodeId j, trace::NodeId k) {
  // Section 5.2.3: an edge already on this path would just replay the path
  // again (A->B->A is allowed once, as the paper's derived RPC paths of
  // section 5.3.1 are real causality).
  return std::find(on_path.begin(), on_path.end(), std::make_pair(j, k)) !=
         on_path.end();
}

}  // namespace bbprof::convolution::internal
