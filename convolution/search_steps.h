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

// Where one spike matches messages (section 5.2.2): a message z of j is
// caused by a message v into j when lo <= z - v <= hi (ns), the nearest such
// v to z - delay winning.  delay is the spike's position as a delay.
struct MatchWindow {
  trace::TimeNs delay, lo, hi;
};

// The windows of the spikes (in claim order, as CausalSpikes returns them)
// of the correlation c (2*lag+1 entries), in claim order.
//
// With an explicit tolerance v (!p.spread_windows): [d - v, d + v] around
// each spike's delay d, the paper's rule.
//
// By default (spread_windows, !spread_always) a spread spike keeps the window
// below only when widening pays: over the positions it adds to the spike's
// own point, the excess of c over its mean (the chance level) is at least
// the mean, i.e. at least half of what the added width catches is caused;
// otherwise it keeps d +- one quantum.  spread_always (`--tolerance auto`)
// skips that test.
//
// Without one (p.spread_windows), each spike's own spread, measured on c
// (section 5.2.2: "when the variance is significant ... increasing v to
// allow delay variations of that magnitude"; here v is chosen per spike).
// The extent is the run of points around the peak at or above half its
// height over the mean of c; on a flank already two points wide one point
// down to a quarter of the height is noise, two end it.  A spike at most
// two quanta wide is as sharp as quantization makes any fixed delay and
// keeps one quantum either side (the paper's default: sharp spikes match
// exactly as with --tolerance of one quantum).  A wider one is a spread
// delay: its peak is noise on top of a bump, so the run is measured again
// from its middle at the height of the three points there; a half-height
// run of w points spans +-1.18 sd of a Gaussian, and the window reaches
// 1.06 w (+-2.5 sd) either side of the excess's centroid, which is also
// the window's delay.  No window reaches negative delays (5.2.3) or past
// the lag window, and windows do not overlap: a weaker spike whose peak
// lies in a stronger spike's window is part of that spread delay and is
// dropped; otherwise its run stops at, and its window is cut at, the
// stronger one's edge (messages in the boundary quantum both windows touch
// go to the stronger spike: ClaimCaused's claim order).
std::vector<MatchWindow> MatchWindows(std::span<const double> c, int64_t lag,
                                      std::span<const Spike> spikes,
                                      const Params& p);

// Whether some window is wider than the paper's d +- one quantum.
bool Widened(std::span<const MatchWindow> windows, trace::TimeNs quantum_ns);

// The widest half-window (max of delay - lo and hi - delay) among windows.
trace::TimeNs WidestTolerance(std::span<const MatchWindow> windows);

// Section 5.2.2: which messages of z (sorted send times of node j) are caused
// by the messages v (sorted times of the messages into j on this path).
// claimed[k] is the index of the first window (claim order) for which some
// v has z[k] - v in [lo, hi] (the v nearest to z[k] - delay, and never after
// z[k]), or -1; diff[k] is z[k] minus that v.  A message's claim depends only
// on the v within [z[k] - max(hi), z[k] - min(lo)]: the streaming search
// relies on that to decide claims a window at a time.
void ClaimCaused(std::span<const trace::TimeNs> z,
                 std::span<const trace::TimeNs> v,
                 std::span<const MatchWindow> windows,
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

// Section 5.2.3, noise and accidentally short paths: the number of j->k
// messages (`sent_jk` in all) that |V| = v_count windows catch by chance
// over a trace of duration_ns.  windows: those the group's messages were
// claimed by (indexed as in CausedGroup::per_spike).
double ExpectedByChance(const CausedGroup& g,
                        std::span<const MatchWindow> windows, uint64_t sent_jk,
                        uint64_t v_count, trace::TimeNs duration_ns,
                        const Params& p);

// Whether a group of `count` messages stands N Poisson deviations above
// `expected`, what needs no causal chain from this path's root: the chance
// count (ExpectedByChance) plus what V's chance members cause (Carried).
bool AboveChance(uint64_t count, double expected, const Params& p);

// What the `inherited` members of V that came by chance (other instances'
// messages that earlier claims took in, ChanceMembers) cause into any one
// destination.  Each is a real message of another instance, whose effects
// follow it at the delays of its own path, as this path's members' do: each
// member is taken to bring as many messages into the windows as the best
// group of this vertex gets per member of V above chance, max over k of
// (|g_k| - expected_k) / |V|, at most one.  This is what lets a path follow
// a concurrent instance's messages (a reply to the other web server) without
// a single correlation showing it.
double Carried(double inherited,
               std::span<const std::pair<uint64_t, double>> count_expected,
               uint64_t v_count);

// The members of a kept group j->k expected to be other instances' messages:
// those of the group that came by chance, plus those V's chance members
// caused (carried), at most the group's size.  Of the sent_jk - |g| messages
// j->k no window claimed, none caused by V, a share P = 1 - exp(-|V| w / T)
// falls in some window by chance, so the group holds (sent_jk - |g|) P /
// (1 - P) = (sent_jk - |g|) expm1(|V| w / T) of them.  With a fixed
// tolerance (!p.spread_windows, the paper's rule as published) nothing is
// inherited: 0.
double ChanceMembers(const CausedGroup& g, std::span<const MatchWindow> windows,
                     uint64_t sent_jk, uint64_t v_count,
                     trace::TimeNs duration_ns, double carried,
                     const Params& p);

// An edge's delays: one per claiming spike, the mean observed delay of its
// messages, declining count.
std::vector<DelaySpike> EdgeDelays(const CausedGroup& g);

// Whether the edge j->k is on the path already (a cycle, 5.2.3).
bool OnPath(std::span<const std::pair<trace::NodeId, trace::NodeId>> on_path,
            trace::NodeId j, trace::NodeId k);

}  // namespace bbprof::convolution::internal

#endif  // BBPROF_CONVOLUTION_SEARCH_STEPS_H_
