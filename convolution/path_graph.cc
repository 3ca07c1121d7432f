#include "convolution/path_graph.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>

namespace bbprof::convolution {

Result<MessageSet> LoadMessages(trace::TraceReader& reader) {
  MessageSet m;
  trace::Record rec;
  while (reader.Next(rec)) {
    const size_t need = std::max(rec.sender, rec.receiver) + size_t{1};
    if (m.by_sender.size() < need) {
      m.by_sender.resize(need);
      m.receives.resize(need, false);
      m.receives_calls.resize(need, false);
      m.sends_calls.resize(need, false);
    }
    if (rec.kind == trace::Kind::kCall) {
      m.receives_calls[rec.receiver] = true;
      m.sends_calls[rec.sender] = true;
    }
    // Section 5.3.1: calls and returns are just messages to this algorithm.
    m.by_sender[rec.sender].ts.push_back(rec.ts_ns);
    m.by_sender[rec.sender].to.push_back(rec.receiver);
    m.receives[rec.receiver] = true;
    if (m.messages == 0) m.first_ns = rec.ts_ns;
    m.last_ns = rec.ts_ns;
    ++m.messages;
  }
  if (!reader.status().ok()) return reader.status();
  if (m.messages == 0) {
    return Status::Error(reader.path() + ": the trace holds no messages");
  }
  for (size_t i = 0; i < reader.nodes().size(); ++i) {
    m.names.emplace_back(reader.nodes().Name(static_cast<trace::NodeId>(i)));
  }
  m.by_sender.resize(m.names.size());
  m.receives.resize(m.names.size(), false);
  m.receives_calls.resize(m.names.size(), false);
  m.sends_calls.resize(m.names.size(), false);
  return m;
}

Status ResolveParams(Params& p) {
  if (p.quantum_ns <= 0) return Status::Error("--quantum must be positive");
  if (p.max_delay_ns == 0) p.max_delay_ns = 1000 * p.quantum_ns;
  if (p.max_delay_ns < 0) return Status::Error("--max-delay must be positive");
  if (p.max_delay_ns / p.quantum_ns > kMaxLagQuanta) {
    return Status::Error("--max-delay / --quantum is " +
                         std::to_string(p.max_delay_ns / p.quantum_ns) +
                         " quanta; at most " + std::to_string(kMaxLagQuanta) +
                         " are allowed (raise --quantum or lower --max-delay)");
  }
  if (p.tolerance_ns < 0) p.tolerance_ns = p.quantum_ns;
  if (!(p.spikes.spike_sigma > 0) || !std::isfinite(p.spikes.spike_sigma)) {
    return Status::Error("--spike-sigma must be a positive number");
  }
  if (!(p.spikes.valley_sigma >= 0) ||
      !(p.spikes.valley_sigma < p.spikes.spike_sigma)) {
    return Status::Error(
        "--valley-sigma must be at least 0 and below --spike-sigma");
  }
  if (p.min_count < 1) return Status::Error("--min-count must be at least 1");
  if (p.max_depth < 1) return Status::Error("--max-depth must be at least 1");
  return Status::Ok();
}

namespace {

class Search {
 public:
  Search(const MessageSet& m, const Params& p) : m_(m), p_(p) {
    lag_ = (p.max_delay_ns + p.quantum_ns - 1) / p.quantum_ns;
    dest_count_.resize(m.names.size());
    for (size_t j = 0; j < m.names.size(); ++j) {
      for (trace::NodeId to : m.by_sender[j].to) ++dest_count_[j][to];
    }
  }

  void Root(trace::NodeId i) {
    graph_.roots.push_back(m_.names[i]);
    const int xi = AddVertex(i);
    std::map<trace::NodeId, std::vector<trace::TimeNs>> by_dest;
    const MessageSet::Sent& sent = m_.by_sender[i];
    for (size_t k = 0; k < sent.size(); ++k) by_dest[sent.to[k]].push_back(sent.ts[k]);
    for (auto& [j, v] : by_dest) {
      if (v.size() < p_.min_count) {
        ++graph_.suppressed_rare;
        continue;
      }
      const int xj = AddVertex(j);
      graph_.edges.push_back({xi, xj, v.size(), {{0.0, v.size()}}});
      std::vector<std::pair<trace::NodeId, trace::NodeId>> on_path{{i, j}};
      std::vector<int> path{xi, xj};
      std::vector<double> delays{0.0};
      Process(j, xj, v, on_path, path, delays, v.size());
    }
  }

  PathGraph Take() { return std::move(graph_); }

 private:
  int AddVertex(trace::NodeId n) {
    const int id = static_cast<int>(graph_.vertices.size());
    graph_.vertices.push_back({id, n});
    return id;
  }

  // Everything node j sends, as a signal. Built for each correlation and
  // dropped after it, not cached per node: a cache would hold a signal for
  // every node at once (16 bytes per message of the trace), and building
  // one is linear, cheap beside the correlation it feeds.
  SparseSignal OutSignal(trace::NodeId j) const {
    return MakeSignal(m_.by_sender[j].ts, p_.quantum_ns);
  }

  void EmitPath(const std::vector<int>& path, const std::vector<double>& delays,
                uint64_t count) {
    Path out;
    for (int x : path) out.nodes.push_back(m_.names[graph_.vertices[x].node]);
    out.delays_s = delays;
    out.count = count;
    graph_.paths.push_back(std::move(out));
  }

  // Figure 6, ProcessNode(j, x_j, V): V are the (sorted) timestamps of the
  // messages into j on this path.
  void Process(trace::NodeId j, int xj, const std::vector<trace::TimeNs>& v,
               std::vector<std::pair<trace::NodeId, trace::NodeId>>& on_path,
               std::vector<int>& path, std::vector<double>& delays,
               uint64_t last_count) {
    const auto& z = m_.by_sender[j];
    bool extended = false;
    if (!z.empty() && static_cast<int>(path.size()) - 1 < p_.max_depth) {
      std::vector<double> c;
      {  // V's signal is needed only for the correlation
        const SparseSignal s1 = MakeSignal(v, p_.quantum_ns);
        c = corr_.Correlate(s1, OutSignal(j), lag_);
      }
      ++graph_.correlations;
      std::vector<Spike> spikes = FindSpikes(c, p_.spikes);
      // Section 5.2.3: no negative delays.
      std::erase_if(spikes, [&](const Spike& s) { return s.position < lag_; });
      // Strongest spikes claim their messages first, so one message is
      // caused at most once.
      std::stable_sort(
          spikes.begin(), spikes.end(),
          [](const Spike& a, const Spike& b) { return a.value > b.value; });
      std::vector<int> claimed(z.size(), -1);
      std::vector<trace::TimeNs> diff(z.size(), 0);
      for (size_t s = 0; s < spikes.size(); ++s) {
        const trace::TimeNs d = (spikes[s].position - lag_) * p_.quantum_ns;
        // Section 5.2.2: z is caused if some v + d lies within the tolerance.
        size_t vi = 0;
        for (size_t k = 0; k < z.size(); ++k) {
          if (claimed[k] >= 0) continue;
          const trace::TimeNs t = z.ts[k];
          while (vi < v.size() && v[vi] + d < t - p_.tolerance_ns) ++vi;
          // The nearest candidate is vi or vi+1 (both within tolerance).
          size_t best = v.size();
          for (size_t q = vi; q < v.size() && v[q] + d <= t + p_.tolerance_ns;
               ++q) {
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
      // Group by destination, then by spike.
      struct Group {
        std::vector<trace::TimeNs> w;
        std::map<int, std::pair<uint64_t, double>>
            per_spike;  // count, sum diff
      };
      std::map<trace::NodeId, Group> groups;
      for (size_t k = 0; k < z.size(); ++k) {
        if (claimed[k] < 0) continue;
        Group& g = groups[z.to[k]];
        g.w.push_back(z.ts[k]);
        auto& ps = g.per_spike[claimed[k]];
        ++ps.first;
        ps.second += static_cast<double>(diff[k]);  // ns, exact up to 2^53
      }
      // The search goes depth first: free this level's per-message arrays
      // before descending, so that the memory held along a path is the
      // caused-message sets only (section 5.2.2), not one claim array per
      // level for every message the node sent.
      std::vector<int>().swap(claimed);
      std::vector<trace::TimeNs>().swap(diff);
      for (auto& [k, g] : groups) {
        if (g.w.size() < p_.min_count) {
          ++graph_.suppressed_rare;
          continue;
        }
        // Section 5.2.3, noise and accidentally short paths: in busy traffic
        // some messages j->k fall within the tolerance of a spike by chance.
        // With n_k messages j->k spread over the trace, each incoming message
        // matches a window of 2v + mu per spike; keep the set
        // only when it stands N Poisson deviations above that chance count.
        const double duration = static_cast<double>(
            std::max<trace::TimeNs>(m_.last_ns - m_.first_ns, p_.quantum_ns));
        const double window =
            static_cast<double>(2 * p_.tolerance_ns + p_.quantum_ns) *
            static_cast<double>(g.per_spike.size());
        // A given j->k message is hit by at least one of the |V| windows
        // with probability 1 - exp(-|V| window / T).
        const double chance =
            static_cast<double>(dest_count_[j][k]) *
            -std::expm1(-static_cast<double>(v.size()) * window / duration);
        if (static_cast<double>(g.w.size()) <
            chance + p_.spikes.spike_sigma * std::sqrt(chance)) {
          ++graph_.suppressed_rare;
          continue;
        }
        // Section 5.2.3: suppress cycles -- an edge already on this path
        // would just replay the path again (A->B->A is allowed once, as the
        // paper's derived RPC paths of section 5.3.1 are real causality).
        if (std::find(on_path.begin(), on_path.end(), std::make_pair(j, k)) !=
            on_path.end()) {
          ++graph_.suppressed_cycles;
          continue;
        }
        std::vector<DelaySpike> ds;
        for (auto& [s, cnt] : g.per_spike) {
          (void)s;
          ds.push_back(
              {cnt.second / static_cast<double>(cnt.first) / 1e9, cnt.first});
        }
        std::stable_sort(ds.begin(), ds.end(),
                         [](const DelaySpike& a, const DelaySpike& b) {
                           return a.count > b.count;
                         });
        const int xk = AddVertex(k);
        graph_.edges.push_back({xj, xk, g.w.size(), ds});
        on_path.emplace_back(j, k);
        path.push_back(xk);
        delays.push_back(ds.front().delay_s);
        extended = true;
        Process(k, xk, g.w, on_path, path, delays, g.w.size());
        delays.pop_back();
        path.pop_back();
        on_path.pop_back();
      }
    }
    (void)xj;
    if (!extended) EmitPath(path, delays, last_count);
  }

  const MessageSet& m_;
  const Params& p_;
  int64_t lag_;
  Correlator corr_;
  std::vector<std::map<trace::NodeId, uint64_t>> dest_count_;
  PathGraph graph_;

 public:
  const Correlator& corr() const { return corr_; }
};

}  // namespace

Result<PathGraph> FindPaths(const MessageSet& msgs, const Params& params) {
  std::vector<trace::NodeId> roots;
  if (params.roots.empty()) {
    for (trace::NodeId n = 0; n < msgs.names.size(); ++n) {
      if (!msgs.receives[n] && !msgs.by_sender[n].empty()) roots.push_back(n);
    }
    // In RPC traffic every node receives something (a client gets its
    // returns), but causality starts where calls start: at the nodes that
    // make calls and are never called (section 5.3.1 treats calls and
    // returns as plain messages; this only chooses where to look from).
    if (roots.empty()) {
      for (trace::NodeId n = 0; n < msgs.names.size(); ++n) {
        if (msgs.sends_calls[n] && !msgs.receives_calls[n]) roots.push_back(n);
      }
    }
    if (roots.empty()) {
      for (trace::NodeId n = 0; n < msgs.names.size(); ++n) {
        if (!msgs.by_sender[n].empty()) roots.push_back(n);
      }
    }
  } else {
    for (const std::string& name : params.roots) {
      auto it = std::find(msgs.names.begin(), msgs.names.end(), name);
      if (it == msgs.names.end()) {
        return Status::Error("--root " + name + ": no such node in the trace");
      }
      const auto n = static_cast<trace::NodeId>(it - msgs.names.begin());
      if (msgs.by_sender[n].empty()) {
        return Status::Error("--root " + name + ": the node sends no messages");
      }
      if (std::find(roots.begin(), roots.end(), n) == roots.end())
        roots.push_back(n);
    }
  }
  Search search(msgs, params);
  for (trace::NodeId r : roots) search.Root(r);
  PathGraph g = search.Take();
  g.sparse_correlations = search.corr().sparse_calls();
  g.fft_correlations = search.corr().fft_calls();
  return g;
}

std::string ResultJson(const MessageSet& msgs, const Params& params,
                       const PathGraph& graph, const std::string& input_path) {
  using nlohmann::ordered_json;
  ordered_json j;
  j["tool"] = "bbprof convolve";
  j["version"] = "0.1.0";
  j["input"] = {
      {"path", input_path},
      {"messages", msgs.messages},
      {"duration_s", trace::NsToSeconds(msgs.last_ns - msgs.first_ns)}};
  j["params"] = {{"quantum_s", trace::NsToSeconds(params.quantum_ns)},
                 {"spike_sigma", params.spikes.spike_sigma},
                 {"valley_sigma", params.spikes.valley_sigma},
                 {"variance_s", trace::NsToSeconds(params.tolerance_ns)},
                 {"max_delay_s", trace::NsToSeconds(params.max_delay_ns)},
                 {"min_count", params.min_count},
                 {"max_depth", params.max_depth}};
  j["roots"] = graph.roots;
  ordered_json vs = ordered_json::array();
  for (const Vertex& v : graph.vertices) {
    vs.push_back({{"id", v.id}, {"node", msgs.names[v.node]}});
  }
  j["vertices"] = vs;
  ordered_json es = ordered_json::array();
  for (const Edge& e : graph.edges) {
    ordered_json ds = ordered_json::array();
    for (const DelaySpike& d : e.delays)
      ds.push_back({{"delay_s", d.delay_s}, {"count", d.count}});
    es.push_back(
        {{"from", e.from}, {"to", e.to}, {"count", e.count}, {"delays", ds}});
  }
  j["edges"] = es;
  ordered_json ps = ordered_json::array();
  for (const Path& p : graph.paths) {
    ps.push_back(
        {{"nodes", p.nodes}, {"delays_s", p.delays_s}, {"count", p.count}});
  }
  j["paths"] = ps;
  return j.dump(2) + "\n";
}

std::string ResultText(const MessageSet& msgs, const PathGraph& graph) {
  std::ostringstream o;
  o << msgs.messages << " messages, " << graph.paths.size() << " paths from "
    << graph.roots.size() << " root(s)\n";
  for (const Path& p : graph.paths) {
    o << p.count << "\t" << p.nodes[0];
    for (size_t h = 1; h < p.nodes.size(); ++h) {
      o << " -> ";
      if (h >= 2 && h - 1 < p.delays_s.size()) {
        o << "[+" << p.delays_s[h - 1] * 1e3 << " ms] ";
      }
      o << p.nodes[h];
    }
    o << "\n";
  }
  return o.str();
}

}  // namespace bbprof::convolution
