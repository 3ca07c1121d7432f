// TraceStats: one streaming pass over a trace that summarises it: messages
// by kind, nodes, edges, duration, calls without returns and returns without
// calls, mean call latency per edge and a parallelism estimate. Memory grows
// with the number of nodes, edges and calls outstanding at once (bounded by
// StatsOptions::max_pending_calls), never with the trace's length.
#ifndef BBPROF_TRACE_STATS_H_
#define BBPROF_TRACE_STATS_H_

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "base/status.h"
#include "trace/pending_calls.h"
#include "trace/reader.h"

namespace bbprof::trace {

struct EdgeStats {
  uint64_t calls = 0, returns = 0, messages = 0;
  uint64_t matched = 0;         // calls on this edge that got their return
  double latency_sum_s = 0;     // over matched calls
};

struct NodeStats {
  uint64_t sent = 0, received = 0;
  double busy_s = 0;  // sum of latencies of matched calls into this node
};

struct TraceStats {
  std::string path;
  uint64_t messages = 0, calls = 0, returns = 0, free_messages = 0;
  uint64_t calls_without_return = 0, returns_without_call = 0;
  // Of calls_without_return: those dropped while still pending because more
  // than StatsOptions::max_pending_calls were (trace/pending_calls.h).
  uint64_t pending_calls_evicted = 0;
  // Mentions of node names past the reader's limit, folded into the node
  // {other-nodes} (NodeTable::SetLimit).
  uint64_t node_names_folded = 0;
  TimeNs first_ts = 0, last_ts = 0;
  std::vector<std::string> meta;
  std::map<std::string, NodeStats> nodes;
  std::map<std::pair<std::string, std::string>, EdgeStats> edges;  // sender, receiver
  uint64_t bad_lines_skipped = 0;

  double duration_s() const { return NsToSeconds(last_ts - first_ts); }
  // Little's law: the time-averaged number of calls in progress is the sum
  // of call latencies over the trace's duration.
  double mean_outstanding_calls() const;
};

struct StatsOptions {
  // Calls waiting for their return kept at once (0: no limit); past it the
  // oldest is evicted and counted (trace/pending_calls.h).
  uint64_t max_pending_calls = kDefaultMaxPendingCalls;
  // Called once, the first time a call is evicted, with a message naming
  // the flag that raises the limit.
  std::function<void(std::string_view)> on_limit;
};

Result<TraceStats> ComputeStats(TraceReader& reader,
                                const StatsOptions& options = {});

std::string StatsToText(const TraceStats& s);
std::string StatsToJson(const TraceStats& s);

}  // namespace bbprof::trace

#endif  // BBPROF_TRACE_STATS_H_
