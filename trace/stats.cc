#include "trace/stats.h"

#include <cstdio>
#include <nlohmann/json.hpp>
#include <sstream>
#include <unordered_map>

#include "base/progress.h"
#include "trace/byte_stream.h"
#include "base/json_text.h"
#include "trace/timestamp.h"

namespace bbprof::trace {

double TraceStats::mean_outstanding_calls() const {
  double d = duration_s();
  if (d <= 0) return 0;
  double busy = 0;
  for (const auto& [name, n] : nodes) busy += n.busy_s;
  return busy / d;
}

Result<TraceStats> ComputeStats(TraceReader& reader,
                                const StatsOptions& options) {
  TraceStats s;
  s.path = reader.path();
  // Pending calls' start times, FIFO per key, as the nesting algorithm
  // matches.
  PendingCalls<TimeNs> open(options.max_pending_calls);
  std::vector<NodeStats> nodes;
  std::unordered_map<uint64_t, EdgeStats> edges;
  PendingCallKey key;
  Progress progress("stats", FileSizeOrZero(reader.path()), false);
  Record rec;
  while (reader.Next(rec)) {
    if (s.messages == 0) s.first_ts = rec.ts_ns;
    s.last_ts = rec.ts_ns;
    ++s.messages;
    progress.UpdateLazily([&] { return reader.raw_bytes_read(); });
    size_t need = std::max(rec.sender, rec.receiver) + 1;
    if (nodes.size() < need) nodes.resize(need);
    ++nodes[rec.sender].sent;
    ++nodes[rec.receiver].received;
    EdgeStats& e =
        edges[(static_cast<uint64_t>(rec.sender) << 32) | rec.receiver];
    switch (rec.kind) {
      case Kind::kCall: {
        ++s.calls;
        ++e.calls;
        key.Set(rec.sender, rec.receiver, rec);
        TimeNs evicted;
        if (open.Add(key, rec.ts_ns, &evicted) && open.evictions() == 1 &&
            options.on_limit) {
          options.on_limit(
              "more than " + std::to_string(options.max_pending_calls) +
              " calls waiting for their return: dropping the oldest as "
              "unmatched (raise --max-pending-calls)");
        }
        break;
      }
      case Kind::kReturn: {
        ++s.returns;
        ++e.returns;
        // A return travels back: its key is its call's.
        key.Set(rec.receiver, rec.sender, rec);
        TimeNs call_ts;
        if (!open.Take(key, &call_ts)) {
          ++s.returns_without_call;
          break;
        }
        TimeNs latency = rec.ts_ns - call_ts;
        EdgeStats& ce = edges[(static_cast<uint64_t>(rec.receiver) << 32) | rec.sender];
        ++ce.matched;
        ce.latency_sum_s += NsToSeconds(latency);
        nodes[rec.sender].busy_s += NsToSeconds(latency);
        break;
      }
      case Kind::kMessage:
        ++s.free_messages;
        ++e.messages;
        break;
    }
  }
  progress.Finish();
  if (!reader.status().ok()) return reader.status();
  s.pending_calls_evicted = open.evictions();
  s.calls_without_return = open.size() + open.evictions();
  s.node_names_folded = reader.nodes().folded();
  s.meta = reader.meta();
  s.bad_lines_skipped = reader.bad_lines_skipped();
  for (size_t i = 0; i < nodes.size(); ++i) {
    s.nodes[std::string(reader.nodes().Name(static_cast<NodeId>(i)))] = nodes[i];
  }
  for (const auto& [k, e] : edges) {
    s.edges[{std::string(reader.nodes().Name(static_cast<NodeId>(k >> 32))),
             std::string(reader.nodes().Name(static_cast<NodeId>(k & 0xffffffffu)))}] = e;
  }
  return s;
}

std::string StatsToText(const TraceStats& s) {
  std::ostringstream out;
  char buf[512];
  out << s.path << "\n";
  for (const auto& m : s.meta) out << "  #meta " << m << "\n";
  std::snprintf(buf, sizeof buf,
                "  messages   %llu (%llu CALL, %llu RET, %llu MSG)\n"
                "  time       %s to %s (%.6f s)\n"
                "  unmatched  %llu calls without a return, %llu returns without a call\n"
                "  parallelism %.2f calls in progress on average\n",
                static_cast<unsigned long long>(s.messages),
                static_cast<unsigned long long>(s.calls),
                static_cast<unsigned long long>(s.returns),
                static_cast<unsigned long long>(s.free_messages),
                FormatTimestamp(s.first_ts).c_str(), FormatTimestamp(s.last_ts).c_str(),
                s.duration_s(), static_cast<unsigned long long>(s.calls_without_return),
                static_cast<unsigned long long>(s.returns_without_call),
                s.mean_outstanding_calls());
  out << buf;
  if (s.bad_lines_skipped) out << "  skipped    " << s.bad_lines_skipped << " malformed lines\n";
  if (s.pending_calls_evicted) {
    out << "  evicted    " << s.pending_calls_evicted
        << " calls still pending past --max-pending-calls (counted "
           "unmatched)\n";
  }
  if (s.node_names_folded) {
    out << "  folded     " << s.node_names_folded
        << " mentions of node names past --max-nodes into "
        << NodeTable::kOverflowName << "\n";
  }
  out << "\nnodes (" << s.nodes.size() << "): sent, received, calls in progress on average\n";
  for (const auto& [name, n] : s.nodes) {
    std::snprintf(buf, sizeof buf, "  %-24s %10llu %10llu %8.2f\n", name.c_str(),
                  static_cast<unsigned long long>(n.sent),
                  static_cast<unsigned long long>(n.received),
                  s.duration_s() > 0 ? n.busy_s / s.duration_s() : 0.0);
    out << buf;
  }
  out << "\nedges (" << s.edges.size() << "): CALL, RET, MSG, mean call latency\n";
  for (const auto& [k, e] : s.edges) {
    std::string label = k.first + " -> " + k.second;
    std::snprintf(buf, sizeof buf, "  %-36s %9llu %9llu %9llu", label.c_str(),
                  static_cast<unsigned long long>(e.calls),
                  static_cast<unsigned long long>(e.returns),
                  static_cast<unsigned long long>(e.messages));
    out << buf;
    if (e.matched) {
      std::snprintf(buf, sizeof buf, "  %.3f ms", 1e3 * e.latency_sum_s / static_cast<double>(e.matched));
      out << buf;
    }
    out << "\n";
  }
  return out.str();
}

std::string StatsToJson(const TraceStats& s) {
  nlohmann::ordered_json j;
  j["tool"] = "bbprof stats";
  j["path"] = s.path;
  j["messages"] = s.messages;
  j["calls"] = s.calls;
  j["returns"] = s.returns;
  j["free_messages"] = s.free_messages;
  j["calls_without_return"] = s.calls_without_return;
  j["returns_without_call"] = s.returns_without_call;
  j["pending_calls_evicted"] = s.pending_calls_evicted;
  j["node_names_folded"] = s.node_names_folded;
  j["first_ts"] = FormatTimestamp(s.first_ts);
  j["last_ts"] = FormatTimestamp(s.last_ts);
  j["duration_s"] = s.duration_s();
  j["mean_outstanding_calls"] = s.mean_outstanding_calls();
  j["meta"] = s.meta;
  j["nodes"] = nlohmann::ordered_json::array();
  for (const auto& [name, n] : s.nodes) {
    j["nodes"].push_back({{"node", name}, {"sent", n.sent}, {"received", n.received},
                          {"mean_outstanding_calls", s.duration_s() > 0 ? n.busy_s / s.duration_s() : 0.0}});
  }
  j["edges"] = nlohmann::ordered_json::array();
  for (const auto& [k, e] : s.edges) {
    nlohmann::ordered_json ej = {{"from", k.first}, {"to", k.second}, {"calls", e.calls},
                                 {"returns", e.returns}, {"messages", e.messages}};
    if (e.matched) ej["mean_call_latency_s"] = e.latency_sum_s / static_cast<double>(e.matched);
    j["edges"].push_back(ej);
  }
  return JsonText(j);
}

}  // namespace bbprof::trace
