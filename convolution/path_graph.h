// The convolution algorithm's path search (section 5.2, Figure 6) and its
// result document (shared/spec/results-json.md, "Convolution result").
//
// Place in the pipeline: trace reader -> MessageSet (all messages, CALL, RET
// and MSG alike, grouped by sender) -> FindPaths (depth-first from the roots,
// correlating each vertex's incoming messages with everything its node sends,
// correlation.h) -> PathGraph -> JSON / text.
#ifndef BBPROF_CONVOLUTION_PATH_GRAPH_H_
#define BBPROF_CONVOLUTION_PATH_GRAPH_H_

#include <cstdint>
#include <string>
#include <vector>

#include "base/status.h"
#include "convolution/correlation.h"
#include "trace/node_table.h"
#include "trace/reader.h"
#include "trace/record.h"

namespace bbprof::convolution {

// All messages of a trace, by sender, in timestamp order.
struct MessageSet {
  // What one node sent, in time order, as two columns (12 bytes a message,
  // where a struct would take 16 with its padding): long traces are held
  // here whole.
  struct Sent {
    std::vector<trace::TimeNs> ts;
    std::vector<trace::NodeId> to;
    size_t size() const { return ts.size(); }
    bool empty() const { return ts.empty(); }
  };
  std::vector<std::string> names;  // NodeId -> name
  std::vector<Sent> by_sender;
  std::vector<bool> receives;        // node receives at least one message
  std::vector<bool> receives_calls;  // node receives at least one CALL
  std::vector<bool> sends_calls;     // node sends at least one CALL
  uint64_t messages = 0;
  trace::TimeNs first_ns = 0, last_ns = 0;
};

// Reads every record of reader (errors carry FILE:LINE from the reader).
// An empty trace is an error: there is nothing to correlate.
Result<MessageSet> LoadMessages(trace::TraceReader& reader);

struct Params {
  trace::TimeNs quantum_ns = 1'000'000;  // mu
  trace::TimeNs max_delay_ns = 0;        // 0: 1000 quanta
  trace::TimeNs tolerance_ns = -1;       // v; < 0: one quantum
  SpikeParams spikes;
  uint64_t min_count = 5;          // drop edges with fewer messages
  int max_depth = 10;              // hops from the root
  // Empty: nodes that receive nothing; else, in an RPC trace, the nodes that
  // make calls and receive none (the clients); else every sender.
  std::vector<std::string> roots;
};

// Largest lag window (quanta each side) we accept: it bounds memory
// (a few arrays of 2*D+1 doubles and FFTs of ~4D).
constexpr int64_t kMaxLagQuanta = int64_t{1} << 24;

// Checks params against each other; fills the defaults (max_delay_ns,
// tolerance_ns) in place.  Errors are usage errors.
Status ResolveParams(Params& p);

struct DelaySpike {
  double delay_s;  // mean observed delay of the messages this spike matched
  uint64_t count;  // messages matched at this delay
};

struct Vertex {
  int id;
  trace::NodeId node;
};

struct Edge {
  int from, to;
  uint64_t count;
  std::vector<DelaySpike> delays;  // declining count
};

struct Path {
  std::vector<std::string> nodes;
  std::vector<double> delays_s;  // one per hop; the root's first hop is 0
  uint64_t count;                // messages on the last edge
};

struct PathGraph {
  std::vector<std::string> roots;
  std::vector<Vertex> vertices;
  std::vector<Edge> edges;
  std::vector<Path> paths;
  // Work statistics (not part of the JSON contract's required fields).
  uint64_t correlations = 0, sparse_correlations = 0, fft_correlations = 0;
  uint64_t suppressed_cycles = 0, suppressed_rare = 0;
};

// Runs Figure 6 from each root.  Errors: a root that sends nothing or does
// not exist.
Result<PathGraph> FindPaths(const MessageSet& msgs, const Params& params);

// The result document, exactly as results-json.md specifies.
std::string ResultJson(const MessageSet& msgs, const Params& params,
                       const PathGraph& graph, const std::string& input_path);

// A readable report: one line per path with the delay of every hop.
std::string ResultText(const MessageSet& msgs, const PathGraph& graph);

}  // namespace bbprof::convolution

#endif  // BBPROF_CONVOLUTION_PATH_GRAPH_H_
