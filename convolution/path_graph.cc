#include "convolution/path_graph.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>

#include "base/version.h"
#include "convolution/search_steps.h"
#include "base/json_text.h"

namespace bbprof::convolution {

void TraceSummary::Add(const trace::Record& rec) {
  const size_t need = std::max(rec.sender, rec.receiver) + size_t{1};
  if (sent.size() < need) {
    sent.resize(need, 0);
    sent_to.resize(need);
    receives.resize(need, false);
    receives_calls.resize(need, false);
    sends_calls.resize(need, false);
  }
  if (rec.kind == trace::Kind::kCall) {
    receives_calls[rec.receiver] = true;
    sends_calls[rec.sender] = true;
  }
  // Section 5.3.1: calls and returns are just messages to this algorithm.
  ++sent[rec.sender];
  ++sent_to[rec.sender][rec.receiver];
  receives[rec.receiver] = true;
  if (messages == 0) first_ns = rec.ts_ns;
  last_ns = rec.ts_ns;
  ++messages;
}

Status TraceSummary::Finish(trace::TraceReader& reader) {
  if (!reader.status().ok()) return reader.status();
  if (messages == 0) {
    return Status::Error(reader.path() + ": the trace holds no messages");
  }
  names.clear();
  for (size_t i = 0; i < reader.nodes().size(); ++i) {
    names.emplace_back(reader.nodes().Name(static_cast<trace::NodeId>(i)));
  }
  sent.resize(names.size(), 0);
  sent_to.resize(names.size());
  receives.resize(names.size(), false);
  receives_calls.resize(names.size(), false);
  sends_calls.resize(names.size(), false);
  return Status::Ok();
}

Result<MessageSet> LoadMessagesUpTo(trace::TraceReader& reader,
                                    uint64_t max_messages, bool* complete) {
  MessageSet m;
  *complete = true;
  trace::Record rec;
  while (reader.Next(rec)) {
    if (m.messages == max_messages) {
      *complete = false;
      return m;
    }
    m.Add(rec);
    if (m.by_sender.size() < m.sent.size()) m.by_sender.resize(m.sent.size());
    m.by_sender[rec.sender].ts.push_back(rec.ts_ns);
    m.by_sender[rec.sender].to.push_back(rec.receiver);
  }
  if (Status s = m.Finish(reader); !s.ok()) return s;
  m.by_sender.resize(m.names.size());
  return m;
}

Result<MessageSet> LoadMessages(trace::TraceReader& reader) {
  bool complete = true;
  return LoadMessagesUpTo(reader, UINT64_MAX, &complete);
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
  // With spread windows each spike's window is its own spread (section
  // 5.2.2, internal::MatchWindows) and no fixed v is used.
  if (!p.spread_windows && p.tolerance_ns < 0) p.tolerance_ns = p.quantum_ns;
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
  Search(const MessageSet& m, const Params& p)
      : m_(m), p_(p), lag_(internal::LagQuanta(p)) {}

  void Root(trace::NodeId i) {
    graph_.roots.push_back(m_.names[i]);
    const int xi = AddVertex(i);
    std::map<trace::NodeId, std::vector<trace::TimeNs>> by_dest;
    const MessageSet::Sent& sent = m_.by_sender[i];
    for (size_t k = 0; k < sent.size(); ++k)
      by_dest[sent.to[k]].push_back(sent.ts[k]);
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
      Process(j, v, on_path, path, delays, v.size(), /*inherited=*/0.0,
              /*widened=*/false);
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
  // messages into j on this path; x_j is path.back(); `inherited` of them
  // are expected to be other instances' messages (internal::ChanceMembers);
  // `widened`: some window on the path before j was wider than the paper's.
  void Process(trace::NodeId j, const std::vector<trace::TimeNs>& v,
               std::vector<std::pair<trace::NodeId, trace::NodeId>>& on_path,
               std::vector<int>& path, std::vector<double>& delays,
               uint64_t last_count, double inherited, bool widened) {
    const int xj = path.back();
    const auto& z = m_.by_sender[j];
    bool extended = false;
    if (!z.empty() && static_cast<int>(path.size()) - 1 < p_.max_depth) {
      std::vector<internal::MatchWindow> windows;
      {  // V's signal and the lag array are needed only for the spikes
        const SparseSignal s1 = MakeSignal(v, p_.quantum_ns);
        const std::vector<double> c = corr_.Correlate(s1, OutSignal(j), lag_);
        const std::vector<Spike> spikes =
            internal::CausalSpikes(c, lag_, p_.spikes);
        windows = internal::MatchWindows(c, lag_, spikes, p_);
      }
      graph_.widest_tolerance_ns = std::max(graph_.widest_tolerance_ns,
                                            internal::WidestTolerance(windows));
      ++graph_.correlations;
      // Strongest spikes claim their messages first, so one message is
      // caused at most once.
      std::vector<int> claimed;
      std::vector<trace::TimeNs> diff;
      internal::ClaimCaused(z.ts, v, windows, claimed, diff);
      // Group by destination, then by spike.
      struct Group {
        std::vector<trace::TimeNs> w;
        internal::CausedGroup caused;
      };
      std::map<trace::NodeId, Group> groups;
      for (size_t k = 0; k < z.size(); ++k) {
        if (claimed[k] < 0) continue;
        Group& g = groups[z.to[k]];
        g.w.push_back(z.ts[k]);
        g.caused.Add(claimed[k], diff[k]);
      }
      // The search goes depth first: free this level's per-message arrays
      // before descending, so that the memory held along a path is the
      // caused-message sets only (section 5.2.2), not one claim array per
      // level for every message the node sent.
      std::vector<int>().swap(claimed);
      std::vector<trace::TimeNs>().swap(diff);
      // Section 5.2.3's chance filter, with what V's own chance members
      // carry once the path has left the paper's windows (internal::Carried).
      const bool carry = widened || internal::Widened(windows, p_.quantum_ns);
      const trace::TimeNs duration = m_.last_ns - m_.first_ns;
      std::vector<std::pair<uint64_t, double>> expected;
      for (const auto& [k, g] : groups) {
        expected.emplace_back(
            g.caused.count,
            internal::ExpectedByChance(g.caused, windows, m_.sent_to[j].at(k),
                                       v.size(), duration, p_));
      }
      const double carried =
          carry ? internal::Carried(inherited, expected, v.size()) : 0.0;
      size_t gi = 0;
      for (auto& [k, g] : groups) {
        const uint64_t sent_jk = m_.sent_to[j].at(k);
        const double chance = expected[gi++].second + carried;
        if (g.w.size() < p_.min_count ||
            !internal::AboveChance(g.caused.count, chance, p_)) {
          ++graph_.suppressed_rare;
          continue;
        }
        if (internal::OnPath(on_path, j, k)) {
          ++graph_.suppressed_cycles;
          continue;
        }
        std::vector<DelaySpike> ds = internal::EdgeDelays(g.caused);
        const int xk = AddVertex(k);
        graph_.edges.push_back({xj, xk, g.w.size(), ds});
        on_path.emplace_back(j, k);
        path.push_back(xk);
        delays.push_back(ds.front().delay_s);
        extended = true;
        Process(k, g.w, on_path, path, delays, g.w.size(),
                internal::ChanceMembers(g.caused, windows, sent_jk, v.size(),
                                        duration, carried, p_),
                carry);
        delays.pop_back();
        path.pop_back();
        on_path.pop_back();
      }
    }
    if (!extended) EmitPath(path, delays, last_count);
  }

  const MessageSet& m_;
  const Params& p_;
  int64_t lag_;
  Correlator corr_;
  PathGraph graph_;

 public:
  const Correlator& corr() const { return corr_; }
};

}  // namespace

Result<PathGraph> FindPaths(const MessageSet& msgs, const Params& params) {
  auto roots = internal::ChooseRoots(msgs, params);
  if (!roots.ok()) return roots.status();
  Search search(msgs, params);
  for (trace::NodeId r : *roots) search.Root(r);
  PathGraph g = search.Take();
  g.sparse_correlations = search.corr().sparse_calls();
  g.fft_correlations = search.corr().fft_calls();
  g.passes = 1;
  g.peak_buffered_messages = msgs.messages;
  return g;
}

trace::TimeNs UsedTolerance(const Params& params, const PathGraph& graph) {
  if (!params.spread_windows) return params.tolerance_ns;
  // Spread-aware windows: the widest used, at least the one quantum every
  // window spans either side of its delay.
  return std::max(params.quantum_ns, graph.widest_tolerance_ns);
}

std::string ResultJson(const TraceSummary& msgs, const Params& params,
                       const PathGraph& graph, const std::string& input_path) {
  using nlohmann::ordered_json;
  ordered_json j;
  j["tool"] = "bbprof convolve";
  j["version"] = kVersion;
  j["input"] = {
      {"path", input_path},
      {"messages", msgs.messages},
      {"duration_s", trace::NsToSeconds(msgs.last_ns - msgs.first_ns)}};
  j["params"] = {
      {"quantum_s", trace::NsToSeconds(params.quantum_ns)},
      {"spike_sigma", params.spikes.spike_sigma},
      {"valley_sigma", params.spikes.valley_sigma},
      {"variance_s", trace::NsToSeconds(UsedTolerance(params, graph))},
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
  return JsonText(j);
}

std::string ResultText(const TraceSummary& msgs, const PathGraph& graph) {
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
