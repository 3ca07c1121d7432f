// The steps of Figure 6's ProcessNode (section 5.2) that the in-memory and
// the streaming path search (path_graph.h) share, so that both decide every
// spike, claim and edge with the same code.  Internal to convolution/.
#ifndef BBPROF_CONVOLUTION_SEARCH_STEPS_H_
#define BBPROF_CONVOLUTION_SEARCH_STEPS_H_

#include <cstdint>
#include <map>
#include <span>
#include <utility>
#include <vector>

#include "base/status.h"
#include "convolution/correlation.h"
#include "convolution/path_graph.h"
#include "trace/record.h"

namespace bbprof::convolution::internal {

// Lag window in quanta each side: ceil(max delay / mu).
int64_t LagQuanta(const Params& p);

// The roots Figure 6 starts from (see Params::roots).  Errors: a --root that
// does not exist or sends nothing.
Result<std::vector<trace::NodeId>> ChooseRoots(const TraceSummary& s,
                                               const Params& p);

// FindSpikes on a correlation array of 2*lag+1 entries, without the spikes
// at negative delays (section 5.2.3), strongest first (stable: the earlier
// of equal spikes first).  This order is the order in which spikes claim
// messages.
std::vector<Spike> CausalSpikes(std::span<const double> c, int64_t lag,
                                const SpikeParams& p);

// The delay of each spike in ns, in the spikes' order.
std::vector<trace::TimeNs> SpikeDelaysNs(std::span<const Spike> spikes,
                                         int64_t lag, trace::TimeNs quantum);

// Section 5.2.2: which messages of z (sorted send times of node j) are caused
// by the messages v (sorted times of the messages into j on this path).
// claimed[k] is the index of the first spike (in `delays` order) for which
// some v + d lies within the tolerance of z[k] (the nearest such v, and
// never after z[k]), or -1; diff[k] is z[k] minus that v.  A message's claim
// depends only on the v within [z[k] - max(d) - tol, z[k] + tol]: the
// streaming search relies on that to decide claims a window at a time.
void ClaimCaused(std::span<const trace::TimeNs> z,
                 std::span<const trace::TimeNs> v,
                 std::span<const trace::TimeNs> delays, trace::TimeNs tol,
                 std::vector<int>& claimed, std::vector<trace::TimeNs>& diff);

// The messages j->k claimed at one vertex: their number, and per claiming
// spike (its index in claim order) their number and summed delay in ns.
struct CausedGroup {
  uint64_t count = 0;
  std::map<int, std::pair<uint64_t, double>> per_spike;
  void Add(int spike, trace::TimeNs diff) {
    ++count;
    auto& ps = per_spike[spike];
    ++ps.first;
    ps.second += static_cast<double>(diff);  // ns, exact up to 2^53
  }
};

// Section 5.2.3, noise and accidentally short paths: whether the group
// stands N Poisson deviations above the number of j->k messages
// (`sent_jk` in all) that |V| = v_count windows would catch by chance over
// a trace of duration_ns.
bool AboveChance(const CausedGroup& g, uint64_t sent_jk, uint64_t v_count,
                 trace::TimeNs duration_ns, const Params& p);

// An edge's delays: one per claiming spike, the mean observed delay of its
// messages, declining count.
std::vector<DelaySpike> EdgeDelays(const CausedGroup& g);

// Whether the edge j->k is on the path already (a cycle, 5.2.3).
bool OnPath(std::span<const std::pair<trace::NodeId, trace::NodeId>> on_path,
            trace::NodeId j, trace::NodeId k);

}  // namespace bbprof::convolution::internal

#endif  // BBPROF_CONVOLUTION_SEARCH_STEPS_H_
