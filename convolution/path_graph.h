// The convolution algorithm's path search (section 5.2, Figure 6) and its
// result document (shared/spec/results-json.md, "Convolution result").
//
// Place in the pipeline: trace reader -> MessageSet (all messages, CALL, RET
// and MSG alike, grouped by sender) -> FindPaths (depth-first from the roots,
// correlating each vertex's incoming messages with everything its node sends,
// correlation.h) -> PathGraph -> JSON / text.  For traces too long to hold,
// FindPathsStreaming makes a few passes over the messages instead, holding a
// window at a time (stream_search.cc); Convolve chooses between the two.
#ifndef BBPROF_CONVOLUTION_PATH_GRAPH_H_
#define BBPROF_CONVOLUTION_PATH_GRAPH_H_

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "base/status.h"
#include "convolution/correlation.h"
#include "trace/node_table.h"
#include "trace/reader.h"
#include "trace/record.h"

namespace bbprof::convolution {

// What the search needs to know about a trace besides its messages: node
// names, who sends and receives what, and the time span.
struct TraceSummary {
  std::vector<std::string> names;  // NodeId -> name
  std::vector<uint64_t> sent;      // messages each node sends
  // sent_to[j][k]: messages j->k (the chance filter of 5.2.3 and the roots'
  // first edges).
  std::vector<std::map<trace::NodeId, uint64_t>> sent_to;
  std::vector<bool> receives;        // node receives at least one message
  std::vector<bool> receives_calls;  // node receives at least one CALL
  std::vector<bool> sends_calls;     // node sends at least one CALL
  uint64_t messages = 0;
  trace::TimeNs first_ns = 0, last_ns = 0;

  // Counts one record (section 5.3.1: calls and returns are just messages
  // to this algorithm).
  void Add(const trace::Record& rec);
  // After the last record: names from the reader's table, every per-node
  // vector sized to it.  Error: an empty trace (nothing to correlate).
  Status Finish(trace::TraceReader& reader);
};

// All messages of a trace, by sender, in timestamp order.
struct MessageSet : TraceSummary {
  // What one node sent, in time order, as two columns (12 bytes a message,
  // where a struct would take 16 with its padding): long traces are held
  // here whole.
  struct Sent {
    std::vector<trace::TimeNs> ts;
    std::vector<trace::NodeId> to;
    size_t size() const { return ts.size(); }
    bool empty() const { return ts.empty(); }
  };
  std::vector<Sent> by_sender;
};

// Reads every record of reader (errors carry FILE:LINE from the reader).
// An empty trace is an error: there is nothing to correlate.
Result<MessageSet> LoadMessages(trace::TraceReader& reader);

// As LoadMessages, but stops once the trace turns out to hold more than
// max_messages: *complete is then false and the set is to be dropped.
Result<MessageSet> LoadMessagesUpTo(trace::TraceReader& reader,
                                    uint64_t max_messages, bool* complete);

struct Params {
  trace::TimeNs quantum_ns = 1'000'000;  // mu
  trace::TimeNs max_delay_ns = 0;        // 0: 1000 quanta
  // v of section 5.2.2: a message matches a spike at delay d within
  // [d - v, d + v]; < 0 (the default): one quantum.
  trace::TimeNs tolerance_ns = -1;
  // Section 5.2.2 per spike (the default): a spike's window may be its own
  // spread, measured on the correlation (search_steps.h, MatchWindows; a
  // sharp spike's is d +- one quantum), and tolerance_ns is not used. False:
  // the fixed [d - v, d + v] of the paper with v = tolerance_ns.
  bool spread_windows = true;
  // With spread_windows: every spread spike gets its spread window
  // (`--tolerance auto`). False (the default): only where widening catches
  // more caused messages than coincidences (docs/convolution.md, "How v is
  // chosen").  Either way, a path with a widened window also answers for the
  // chance members it carries (search_steps.h, Carried), which keeps
  // concurrent paths from leaking into each other.
  bool spread_always = false;
  SpikeParams spikes;
  uint64_t min_count = 5;  // drop edges with fewer messages
  int max_depth = 10;      // hops from the root
  // Empty: nodes that receive nothing; else, in an RPC trace, the nodes that
  // make calls and receive none (the clients); else every sender.
  std::vector<std::string> roots;
};

// Largest lag window (quanta each side) we accept: it bounds memory
// (a few arrays of 2*D+1 doubles and FFTs of ~4D).
constexpr int64_t kMaxLagQuanta = int64_t{1} << 24;

// Checks params against each other; fills the defaults (max_delay_ns, and
// tolerance_ns unless spread_windows) in place.  Errors are usage errors.
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
  // Reads of the whole input (1 for the in-memory search) and the most
  // messages held at once (the whole trace for the in-memory search; the
  // streaming search's window).
  uint64_t passes = 0, peak_buffered_messages = 0;
  // The widest half-window any spike matched within (ns): with spread-aware
  // windows (Params::spread_windows), what the result records as v.
  trace::TimeNs widest_tolerance_ns = 0;
};

// The v a result records (`variance_s`): the given tolerance, or with
// spread-aware windows the widest half-window used (at least one quantum).
trace::TimeNs UsedTolerance(const Params& params, const PathGraph& graph);

// Runs Figure 6 from each root.  Errors: a root that sends nothing or does
// not exist.
Result<PathGraph> FindPaths(const MessageSet& msgs, const Params& params);

// Opens the input afresh, at its first record; the streaming search calls it
// once per pass.
using ReaderFactory =
    std::function<Result<std::unique_ptr<trace::TraceReader>>()>;

// Tuning of the streaming search; the defaults suit any trace.  Tests shrink
// them to put many window boundaries into small traces.
struct StreamOptions {
  // Each pass steps through the trace in windows of this many quanta plus
  // the margins the search needs (see FindPathsStreaming); 0: chosen from
  // the delay range, the depth and the mean message rate.
  int64_t chunk_quanta = 0;
  // With chunk_quanta = 0, aim at about this many messages per window
  // (never a window shorter than 16 times its margins).
  uint64_t chunk_messages = 65536;
  // Correlation arrays (2D+1 doubles each) computed in one pass; more
  // vertices at one level take more passes.
  uint64_t correlation_bytes = uint64_t{64} << 20;
  // Copy the messages (16 bytes each) to an unlinked file in $TMPDIR (else
  // /tmp) during the first read and run the later passes from it, instead of
  // opening and decoding the input again: for inputs slow to decode (text,
  // compressed, captures) or that cannot be read twice (standard input).
  // `open` is then called once.
  bool spool = false;
};

struct StreamResult {
  TraceSummary summary;
  PathGraph graph;
};

// Figure 6 without holding the trace: the same result as LoadMessages +
// FindPaths (the same JSON, byte for byte), in memory bounded by the delay
// range (max delay, tolerance, depth) times the message rate, whatever the
// duration.  The search is run breadth first, one level of the path tree at
// a time, each step a pass over the messages (the input opened again through
// `open`, or its spooled copy, see StreamOptions::spool):
//   pass 1: counts (names, roots, messages per edge, duration);
//   then for level 1: a pass for the cost of each vertex's correlation
//   (which decides direct or FFT as Correlator's kAuto would), and for each
//   level L: one pass (or more, see correlation_bytes) accumulating the
//   correlations of level L's vertices, then one pass claiming the caused
//   messages of every spike found (5.2.2), which gives level L+1's vertices
//   and the cost of their correlations.
// Every step relates messages at most max delay + tolerance apart, so each
// pass walks the trace in windows and re-derives, within a window and its
// margins, which messages belong to which vertex; sums are accumulated in
// time order, as the in-memory search does, so they are equal bit for bit.
// Errors: those of the reader (FILE:LINE), of ChooseRoots, of the spool, or
// an input that changed between passes.
Result<StreamResult> FindPathsStreaming(const ReaderFactory& open,
                                        const Params& params,
                                        const StreamOptions& options = {});

enum class SearchMode { kAuto, kMemory, kStream };

struct SearchOptions {
  SearchMode mode = SearchMode::kAuto;
  // kAuto: the in-memory search for traces of up to this many messages (it
  // reads the input once, at about 32 bytes a message), else streaming.
  uint64_t stream_above_messages = uint64_t{1} << 20;
  StreamOptions stream;
};

// The whole analysis: reads the input and runs the search chosen by
// options.mode.  An input that cannot be read twice (reopenable false:
// standard input) gets the in-memory search, unless the mode is kStream and
// options.stream.spool is set.
Result<StreamResult> Convolve(const ReaderFactory& open, bool reopenable,
                              const Params& params,
                              const SearchOptions& options = {});

// The result document, exactly as results-json.md specifies.
std::string ResultJson(const TraceSummary& msgs, const Params& params,
                       const PathGraph& graph, const std::string& input_path);

// A readable report: one line per path with the delay of every hop.
std::string ResultText(const TraceSummary& msgs, const PathGraph& graph);

}  // namespace bbprof::convolution

#endif  // BBPROF_CONVOLUTION_PATH_GRAPH_H_
