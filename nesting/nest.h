// The nesting algorithm (Aguilera et al., SOSP 2003, section 5.1, Figure 4):
// from a trace of RPC calls and returns it infers which call caused which,
// groups the resulting call trees into causal path patterns and measures the
// latency every node adds on every pattern. It sits between trace/ (records
// in) and the result JSON (nesting/report.h) that viz/ and eval read.
//
// Steps, each cited where it is implemented in nest.cc:
//   1. FindCallPairs (5.1.1.1): CALL/RET matched by (sender, receiver,
//      callid), FIFO when callids are absent or repeat.
//   2. Candidate parents (5.1.1.1, widened by the skew window of 7.5.6).
//   3. ScoreNestings (5.1.1.2): log-binned (A,B,C) delay histograms, each
//      nesting weighted 1/|candidates|, optional Gaussian smoothing.
//   4. FindNestedPairs (5.1.1.3): raw score x the three child penalties,
//      ties to the earliest parent.
//   5. FindCallPaths (5.1.1.4): trees from every root, aggregated by shape.
#ifndef BBPROF_NESTING_NEST_H_
#define BBPROF_NESTING_NEST_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "base/status.h"
#include "nesting/distribution.h"
#include "trace/node_table.h"
#include "trace/reader.h"
#include "trace/record.h"

namespace bbprof::nesting {

struct NestParams {
  double penalty_overlap = 2.0;  // x
  double penalty_same = 0.0;     // y
  double penalty_generic = 0.0;  // z
  trace::TimeNs skew_window_ns = 0;
  double smoothing_bins = 0.0;  // Gaussian sd in bins; 0 = off
  double bin_base = 1.05;
};

// Checks parameter ranges; the message names the flag.
Status ValidateParams(const NestParams& params);

// The scoreboard's bins (5.1.1.2). Bin 0 holds delays below 1 us (and
// negative ones, possible under skew); bin k >= 1 holds
// [1us * base^(k-1), 1us * base^k); the last bin also holds everything
// from 2 hours on. With base 1.05 that is 468 bins (466 log bins between 1 us
// and 2 h, plus the two end bins).
class DelayBins {
 public:
  explicit DelayBins(double base);
  int Bin(trace::TimeNs delay_ns) const;
  int size() const { return size_; }

 private:
  double inv_log_base_;
  int size_;
};

// One node of an aggregated path pattern, in preorder within the pattern.
struct PatternNode {
  std::string node;
  std::string caller;  // the node that called it
  std::vector<int> children;  // indices into Pattern::nodes, signature order
  Distribution latency;
  Distribution call_delay;
  // Latency minus the time covered by its children's calls (their union,
  // so parallel children are not subtracted twice).
  Distribution own_time;
};

struct Pattern {
  std::string signature;
  uint64_t count = 0;
  double total_latency_s = 0;
  std::vector<PatternNode> nodes;  // nodes[0] is the root
};

struct InputStats {
  std::string path;
  uint64_t messages = 0;       // every record read, MSG included
  uint64_t call_pairs = 0;
  uint64_t unmatched_calls = 0;
  uint64_t unmatched_returns = 0;
  uint64_t other_messages = 0;  // MSG records, ignored by nesting
  double duration_s = 0;
  double mean_parallelism = 0;  // mean candidate parents per nested call
  uint64_t root_calls = 0;
};

struct NestResult {
  InputStats input;
  NestParams params;
  std::vector<Pattern> patterns;  // unranked until RankPatterns
};

// Per root call pair: which pattern it became and the trace indices (0-based
// record numbers, MSG records counted) of every CALL and RET message in it.
// Used by eval to score by instance and by message.
struct Assignment {
  uint32_t pattern = 0;  // index into NestResult::patterns before ranking
  std::vector<uint64_t> messages;
};

// Receives records in trace order and runs the algorithm at Finish().
class NestEngine {
 public:
  explicit NestEngine(NestParams params);
  ~NestEngine();
  NestEngine(const NestEngine&) = delete;
  NestEngine& operator=(const NestEngine&) = delete;

  // rec must be in non-decreasing timestamp order. Fails only when the
  // trace exceeds the engine's index range (2^32 - 2 messages).
  Status Add(const trace::Record& rec);
  // Runs steps 2-5. names resolves the records' NodeIds. If assignments is
  // non-null it receives one entry per root call pair.
  NestResult Finish(const trace::NodeTable& names,
                    std::vector<Assignment>* assignments = nullptr);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// Reads the whole trace at `path` (streaming) and runs the engine. Fails
// with a message naming the file on a bad or empty trace.
Result<NestResult> NestTrace(const std::string& path, const NestParams& params,
                             bool quiet,
                             std::vector<Assignment>* assignments = nullptr);

enum class RankBy { kCount, kTotalLatency, kMeanLatency };

// Sorts patterns by `by` (descending; ties by count, total latency, then
// signature), drops those under min_count, keeps the first `top` (0 = all).
// old_to_new (optional) maps pre-ranking indices to ranks-1 (-1 = dropped).
void RankPatterns(NestResult& result, RankBy by, uint64_t min_count,
                  uint64_t top, std::vector<int>* old_to_new = nullptr);

}  // namespace bbprof::nesting

#endif  // BBPROF_NESTING_NEST_H_
