// TraceStats: one streaming pass over a trace that summarises it: messages
// by kind, nodes, edges, duration, calls without returns and returns without
// calls, mean call latency per edge and a parallelism estimate. Memory grows
// with the number of nodes, edges and calls outstanding at once, never with
// the trace's length.
#ifndef BBPROF_TRACE_STATS_H_
#define BBPROF_TRACE_STATS_H_

#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "base/status.h"
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

Result<TraceStats> ComputeStats(TraceReader& reader);

std::string StatsToText(const TraceStats& s);
std::string StatsToJson(const TraceStats& s);

}  // namespace bbprof::trace

#endif  // BBPROF_TRACE_STATS_H_
