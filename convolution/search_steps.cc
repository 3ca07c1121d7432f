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

std::vector<trace::TimeNs> SpikeDelaysNs(std::span<const Spike> spikes,
                                         int64_t lag, trace::TimeNs quantum) {
  std::vector<trace::TimeNs> d;
  d.reserve(spikes.size());
  for (const Spike& s : spikes) d.push_back((s.position - lag) * quantum);
  return d;
}

void ClaimCaused(std::span<const trace::TimeNs> z,
                 std::span<const trace::TimeNs> v,
                 std::span<const trace::TimeNs> delays, trace::TimeNs tol,
                 std::vector<int>& claimed, std::vector<trace::TimeNs>& diff) {
  claimed.assign(z.size(), -1);
  diff.assign(z.size(), 0);
  for (size_t s = 0; s < delays.size(); ++s) {
    const trace::TimeNs d = delays[s];
    // Section 5.2.2: z is caused if some v + d lies within the tolerance.
    size_t vi = 0;
    for (size_t k = 0; k < z.size(); ++k) {
      if (claimed[k] >= 0) continue;
      const trace::TimeNs t = z[k];
      while (vi < v.size() && v[vi] + d < t - tol) ++vi;
      // The nearest candidate is vi or vi+1 (both within tolerance).
      size_t best = v.size();
      for (size_t q = vi; q < v.size() && v[q] + d <= t + tol; ++q) {
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

bool AboveChance(const CausedGroup& g, uint64_t sent_jk, uint64_t v_count,
                 trace::TimeNs duration_ns, const Params& p) {
  // In busy traffic some messages j->k fall within the tolerance of a spike
  // by chance.  With n_k messages j->k spread over the trace, each incoming
  // message matches a window of 2v + mu per spike; keep the set only when it
  // stands N Poisson deviations above that chance count.
  const double duration =
      static_cast<double>(std::max<trace::TimeNs>(duration_ns, p.quantum_ns));
  const double window = static_cast<double>(2 * p.tolerance_ns + p.quantum_ns) *
                        static_cast<double>(g.per_spike.size());
  // A given j->k message is hit by at least one of the |V| windows with
  // probability 1 - exp(-|V| window / T).
  const double chance =
      static_cast<double>(sent_jk) *
      -std::expm1(-static_cast<double>(v_count) * window / duration);
  return !(static_cast<double>(g.count) <
           chance + p.spikes.spike_sigma * std::sqrt(chance));
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
