// EstimateOffsets: infers per-node clock offsets (and drifts) from per-host
// traces of the same traffic, so that skew can be removed before merging
// (paper section 6.5 merges per-host traces and leans on NTP; section 7.5.6
// de-skews "a multi-point trace" with outside information; this derives it
// from the trace itself, as NTP and Paxson's skew estimation do).
//
// A message from A to B appears in A's trace at its send time s (A's clock)
// and in B's at its receive time r (B's clock). With theta_X the amount X's
// clock is ahead and d >= 0 the transit time, r - s = d + theta_B - theta_A,
// so theta_B - theta_A <= r - s: an upper bound. A message from B to A gives
// a lower bound the same way. For an RPC (call sent t1 on A, received t2 on
// B, answered t3 on B, received t4 on A) that is the classic
// theta_B - theta_A in [t3 - t4, t2 - t1]. Messages are matched across the
// two files by (kind, sender, receiver, callid), FIFO per key, streaming.
//
// Bounds are combined per pair in time windows: a low quantile of each
// window's upper bounds and a high quantile of its lower bounds (so one
// mismatched message cannot set the bound), a robust line through the window
// mid-points (Theil-Sen) for the drift, then the detrended envelopes give the
// offset interval; the estimate is its middle and the uncertainty its
// half-width. Pairs are joined into a graph and each node's offset is
// propagated from the reference node along the path of least summed
// uncertainty. See docs/skewer.md.
#ifndef BBPROF_SKEWER_ESTIMATE_H_
#define BBPROF_SKEWER_ESTIMATE_H_

#include <string>
#include <vector>

#include "base/status.h"
#include "skewer/clock_model.h"
#include "trace/reader.h"

namespace bbprof::skewer {

struct EstimateInput {
  std::string path;
  std::string host;  // the capture host whose clock stamped this file
};

struct EstimateOptions {
  std::string reference;  // empty: the node with the most matched messages
  TimeNs window = 10 * trace::kNsPerSecond;
  // A message's two copies are matched only within this much of each other
  // (in the files' own clocks): the largest offset plus transit time.
  TimeNs match_horizon = 10 * trace::kNsPerSecond;
  uint64_t min_matches = 20;  // per direction, for a pair to count
  bool fit_drift = true;
  double quantile = 0.01;  // per-window robust quantile of the bounds
  bool quiet = false;
  trace::TraceOpener open;  // how inputs are opened (null: OpenTraceReader)
};

struct PairEstimate {
  std::string a, b;  // a < b; the estimate is theta_b - theta_a
  uint64_t upper_count = 0, lower_count = 0;  // bounds from a->b and b->a
  bool usable = false;
  TimeNs offset_ns = 0;  // theta_b - theta_a at the reference time
  int64_t drift_ppt = 0;
  TimeNs half_width_ns = 0;
  TimeNs lower_ns = 0, upper_ns = 0;  // the combined interval (detrended)
  bool inconsistent = false;  // bounds crossed: mismatches or a clock step
  uint64_t windows = 0, crossing_windows = 0;
};

struct NodeEstimate {
  std::string node;
  bool estimated = false;
  TimeNs offset_ns = 0;  // relative to the reference node's clock
  int64_t drift_ppt = 0;
  TimeNs uncertainty_ns = 0;
  uint64_t matched = 0;  // matched messages with this node at one end
  std::string via;       // the neighbour it was reached from
};

struct EstimateResult {
  std::string reference_node;
  TimeNs reference_time = 0;
  std::vector<NodeEstimate> nodes;  // sorted by name
  std::vector<PairEstimate> pairs;
  uint64_t records = 0, matched = 0, unmatched = 0;
};

Result<EstimateResult> EstimateOffsets(const std::vector<EstimateInput>& inputs,
                                       const EstimateOptions& options);

// The estimated nodes as an offsets file table (#stamp=host).
SkewTable ToSkewTable(const EstimateResult& result);
// The human report: one row per node, then one per host pair.
std::string FormatEstimateReport(const EstimateResult& result);

}  // namespace bbprof::skewer

#endif  // BBPROF_SKEWER_ESTIMATE_H_
