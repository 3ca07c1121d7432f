#include "nesting/timeline/timeline.h"

#include <algorithm>
#include <array>
#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>
#include <unordered_map>
#include <utility>
#include <vector>

#include "base/pass_timings.h"
#include "base/small_sort.h"
#include "base/workers.h"

namespace bbprof::nesting {

namespace {

using trace::TimeNs;

class TimelineModel {
 public:
  TimelineModel(const Params& params, const BinScale& scale,
                const Penalties& penalties, CallTable* table)
      : smooth_bins_(params.smooth_bins),
        threads_(std::max(1, params.threads)),
        return_chain_(params.return_chain),
        chained_extra_passes_(params.chained_extra_passes),
        timings_(params.timings),
        scale_(scale),
        penalties_(penalties),
        table_(table),
        pairs_(table->pairs),
        cands_(table->cands) {}

  // The passes: learn, then re-choose every call with a choice, the parts
  // (PartitionByComponents) taken in turn by the threads.
  void Run(int passes, TimelineEdges&& edges,
           const std::vector<std::vector<uint32_t>>& parts) {
    if (!PrepareTimeline(std::move(edges))) return;
    const int n_parts = static_cast<int>(parts.size());
    // Learning is cut into one range of calls a thread; the re-choice
    // takes the parts in turn, each with its own scratch.
    const int threads = std::max(1, std::min(threads_, n_parts));
    scratch_.resize(parts.size());
    PassClock clock(timings_);
    for (int pass = 0; pass < passes; ++pass) {
      LearnTimeline(threads);
      clock.Lap("timeline learning");
      // Chains are chosen by the first learning: with one, more passes
      // (Params::chained_extra_passes).
      if (pass == 0 && AnyChained()) passes += chained_extra_passes_;
      RunPartsOn(threads, n_parts, [&](int part) {
        Scratch& scratch = scratch_[part];
        for (uint32_t child : parts[part]) {
          Pair& c = pairs_[child];
          if (c.cand_end - c.cand_begin < 2) continue;  // no choice
          if (HasCrowdedCandidate(*table_, child)) continue;
          const uint32_t previous = c.parent;
          if (previous != kNone) Detach(child);
          const TimelineChoice choice =
              ChooseByTimeline(scratch, child, previous);
          // The swap was made and undone when it was scored, so it can
          // be made again.
          if (choice.group &&
              SwapGroups(scratch, child, previous, choice.parent)) {
            continue;
          }
          if (choice.swap != kNone) {
            Detach(choice.swap);
            Attach(choice.swap, previous);
          }
          // None only when every candidate lies in the call's own subtree
          // and it had no parent (see AttachBreakingCycle).
          if (choice.parent != kNone) Attach(child, choice.parent);
        }
      });
      clock.Lap("timeline re-choice");
    }
  }

 private:
  // Attach and Detach (assignment.h), forgetting the cached likelihood of
  // the parent whose children change.
  void Attach(uint32_t child, uint32_t parent) {
    score_cache_[parent] = std::numeric_limits<float>::quiet_NaN();
    nesting::Attach(table_, child, parent);
    ForgetGroup(parent, edge_of_[child]);
  }
  void Detach(uint32_t child) {
    const uint32_t parent = pairs_[child].parent;
    score_cache_[parent] = std::numeric_limits<float>::quiet_NaN();
    ForgetGroup(parent, edge_of_[child]);
    nesting::Detach(table_, child);
  }
  // A member's timeline starts at its group's last arrival (ArrivalOf), so
  // a group that changes changes its members' likelihoods.
  void ForgetGroup(uint32_t parent, uint32_t e) {
    if (!WaitsForGroup(e) || !IsChained(edge_of_[parent], e)) return;
    for (uint32_t m = pairs_[parent].first_child; m != kNone;
         m = pairs_[m].next_sibling) {
      if (edge_of_[m] == e) {
        score_cache_[m] = std::numeric_limits<float>::quiet_NaN();
      }
    }
  }
  // When a call's own children can start: its arrival, or, for a member
  // of a chained group whose children wait for the whole group (fan-in,
  // LearnFanIn), the group's last arrival. Learning counts with the chains
  // and the waiting edges the previous learning found (the first, with
  // none, from every call's own arrival), scoring with the ones this
  // learning found: an edge that changes between passes is read one way
  // for one pass.
  TimeNs ArrivalOf(uint32_t parent) const {
    return WaitsForGroup(edge_of_[parent]) ? GroupArrival(parent)
                                           : pairs_[parent].call;
  }
  // Whether members on edge e have children that wait for their group
  // (never when no edge is chained: LearnFanIn finds none then).
  bool WaitsForGroup(uint32_t e) const {
    return e < waiting_members_.size() && waiting_members_[e] != 0;
  }
  [[gnu::noinline]] TimeNs GroupArrival(uint32_t parent) const {
    const TimeNs own = pairs_[parent].call;
    const TimeNs t = MemberTrigger(parent);
    return t == kNoTrigger ? own : std::max(t, own);
  }

  // Timeline scoring, beyond the paper. The scoreboards of 5.1.1.2 relate a
  // call only to the start of its parent, and the penalties of 5.1.1.3 only
  // guess at how many children a parent should have. But a server that
  // calls AUTH and then AP sends the AP call a short, steady time after
  // AUTH's reply arrives, and replies to its own caller a steady time after
  // its last child's reply: measured from the parent's start, the AP call
  // is blurred by every delay before it (at parallelism 30 the browse
  // path's AP call has an SD of 3.6 ms from the start of its web-server
  // call, 0.9 ms from AUTH's return). So, once the paper's assignment
  // exists, every call P into a node that makes calls is read as a
  // timeline of events: its arrival, each child's call and return, its own
  // return. Each child is spawned by an *anchor*, the latest event at or
  // before its call that can have triggered it (the arrival or an earlier
  // child's return), and the timeline's likelihood is
  //   for each anchor: P(the multiset of child edges it spawns | anchor edge)
  //   for each child:  density(call - anchor | anchor edge, child edge)
  //   for the return:  density(return - last child return | that edge)
  // all per edge of P, learned from the current assignment (hard EM: learn,
  // re-assign every call to the candidate whose timeline gains most, times
  // the paper's penalties, repeat). The multiset term is what tells a
  // parent that already has its AUTH from one that is missing it: {AUTH}
  // after the arrival is common, {AUTH, AUTH} rare, and {AP} with no AUTH
  // before it rare once most browse calls are assembled.
  static constexpr int kEdgeBits = 21;
  static constexpr uint32_t kArrival = (1u << kEdgeBits) - 1;  // anchor: P.call
  static constexpr uint32_t kReturn = (1u << kEdgeBits) - 2;   // the tail gap
  // Anchor: P's return, for a child called after P returned (an
  // asynchronous server; only a window admits such a parent, see
  // EstimateSkew). Its gap is from P's return.
  static constexpr uint32_t kAfterReturn = (1u << kEdgeBits) - 3;
  // Burst order (see ChainBursts): the gap of a child from the call of the
  // previous child on its edge spawned by the same anchor is keyed
  // GapKey(parent edge, kBurst, child edge). Learning also counts the gaps
  // of those later children from their anchor under kLater | their
  // anchor's key.
  static constexpr uint32_t kBurst = (1u << kEdgeBits) - 4;
  // Return order (see ChainReturns): a child's duration is keyed
  // GapKey(parent edge, kDuration, child edge), and the gap of its return
  // from the previous return on its edge under the same parent
  // GapKey(parent edge, kReturnChain, child edge). Learning also counts
  // the durations of those later children under kLater | their duration
  // key.
  static constexpr uint32_t kDuration = (1u << kEdgeBits) - 5;
  static constexpr uint32_t kReturnChain = (1u << kEdgeBits) - 6;
  static constexpr uint64_t kLater = uint64_t{1} << 63;
  // Scoring only: a density the term divides by (the duration a return
  // chain replaces), not one it multiplies by.
  static constexpr uint64_t kGiven = uint64_t{1} << 62;
  // Which chains a parent edge has (chains_), as bits.
  static constexpr uint8_t kCallChainBit = 1;
  static constexpr uint8_t kReturnChainBit = 2;
  static uint64_t GapKey(uint32_t parent_edge, uint32_t from, uint32_t to) {
    return (uint64_t{parent_edge} << (2 * kEdgeBits)) |
           (uint64_t{from} << kEdgeBits) | to;
  }

 public:
  // Numbers every (caller, callee) edge and marks the nodes that make
  // calls (NumberTimelineEdges, timeline.h).
  static TimelineEdges NumberEdges(const CallTable& table) {
    const Pairs& pairs = table.pairs;
    TimelineEdges edges;
    KeyIndex ids;  // edges numbered in the order they first call
    edges.edge_of.resize(pairs.size());
    edges.makes_calls.assign(table.names.size(), false);
    for (size_t i = 0; i < pairs.size(); ++i) {
      const Pair& p = pairs[i];
      const uint32_t id =
          ids.Insert(static_cast<uint64_t>(p.caller) << 32 |
                     table.KeyedCallee(static_cast<uint32_t>(i)))
              .first;
      if (ids.size() >= kReturnChain) return TimelineEdges{};
      edges.edge_of[i] = id;
      if (p.cand_end != p.cand_begin) edges.makes_calls[p.caller] = true;
    }
    edges.count = ids.size();
    edges.usable = true;
    return edges;
  }

 private:
  // Takes the numbered edges. False when there were too many edges for the
  // gap keys (then the timeline passes are skipped).
  bool PrepareTimeline(TimelineEdges&& edges) {
    if (!edges.usable) return false;
    edge_of_ = std::move(edges.edge_of);
    makes_calls_ = std::move(edges.makes_calls);
    edge_count_ = edges.count;
    const int bins = scale_.size();
    // A gap never seen in the assignment still has some density: one
    // pseudo-observation spread evenly over the bins.
    prior_log_.resize(static_cast<size_t>(bins));
    for (int b = 0; b < bins; ++b) {
      prior_log_[b] = static_cast<float>(std::log(scale_.InvWidth(b) / bins));
    }
    return true;
  }

  struct Kid {
    TimeNs call, ret;
    uint32_t edge;
    int anchor;    // index into the kids sorted by return; -1: the arrival
    bool burst;    // scored by its place in a burst (ChainBursts)
    bool imputed;  // its return is assumed (the real one was lost)
  };
  // The working vectors of ForEachTerm, one set per thread, each on cache
  // lines of its own (their ends move with every timeline scored).
  struct alignas(64) Scratch {
    std::vector<Kid> kids;
    std::vector<uint32_t> after;
    std::vector<std::pair<int, uint32_t>> spawned;
    std::vector<std::pair<uint32_t, int>> grand, grand_mine;  // GrandchildGain
    std::vector<int> order;                                   // ChainBursts
    std::vector<int> returned;                                // ChainReturns
    std::vector<uint32_t> group, saved_p, saved_r;            // group swaps
    std::vector<uint32_t> all, from_p, from_r;  // SwapGroups, GroupOf
  };

  // Calls gap(key, delay) for each child, set(context, multiset) for each
  // anchor and tail(key, delay) for the return (unless it was imputed), on
  // the timeline of `parent` with its children plus `extra`, less `exclude`
  // (kNone: none). A child on a burst edge (ChainBursts) is scored by its
  // place in its burst instead of its anchor's gap, and a child on a
  // return-chain edge (ChainReturns) by its return's gap from the previous
  // return on its edge, over its duration (gap gets that one's key with
  // kGiven: divide). With `groups` (learning), every child gives its
  // anchor's gap and its duration, the later children of a burst their
  // gap from the previous call too, those of a return chain their gap from
  // the previous return too, and each burst or return chain of two or more
  // children on one edge is listed as (its key, size).
  template <typename Gap, typename Set, typename Tail>
  void ForEachTerm(Scratch& scratch, uint32_t parent, uint32_t extra,
                   uint32_t exclude, Gap&& gap, Set&& set, Tail&& tail,
                   std::vector<std::pair<uint64_t, int>>* groups = nullptr) {
    const Pair& p = pairs_[parent];
    const uint32_t pe = edge_of_[parent];
    const TimeNs arrival = ArrivalOf(parent);
    auto& kids = scratch.kids;
    kids.clear();
    auto& after =
        scratch.after;  // edges of the children called after P returned
    after.clear();
    auto add = [&](uint32_t s) {
      const Pair& c = pairs_[s];
      if (c.call > p.ret) {
        after.push_back(edge_of_[s]);
        gap(GapKey(pe, kAfterReturn, edge_of_[s]), c.call - p.ret);
      } else {
        // (Grown here, so that the push below is inlined: this loop runs
        // for every child of every timeline scored.)
        if (kids.size() == kids.capacity()) [[unlikely]] {
          kids.reserve(2 * kids.size() + 8);
        }
        kids.push_back({c.call, c.ret, edge_of_[s], -1, false, c.imputed});
      }
    };
    for (uint32_t s = p.first_child; s != kNone; s = pairs_[s].next_sibling) {
      if (s != exclude) add(s);
    }
    if (extra != kNone) add(extra);
    {
      // The multiset of edges called after the return, like an anchor's.
      SortSmall(after.begin(), after.end());
      uint64_t h = Mix64(GapKey(pe, kAfterReturn, kReturn) ^ 0x5E75ULL);
      for (uint32_t e : after) h = Mix64(h ^ e);
      set(GapKey(pe, kAfterReturn, kReturn), h);
    }
    SortSmall(kids.begin(), kids.end(), [](const Kid& a, const Kid& b) {
      return a.ret != b.ret ? a.ret < b.ret : a.call < b.call;
    });
    const int n = static_cast<int>(kids.size());
    auto& spawned = scratch.spawned;  // (anchor, child edge)
    spawned.clear();
    for (int i = 0; i < n; ++i) {
      Kid& k = kids[i];
      // The latest return at or before this call, other than its own.
      int j = static_cast<int>(
          std::upper_bound(kids.begin(), kids.end(), k.call,
                           [](TimeNs t, const Kid& e) { return t < e.ret; }) -
          kids.begin());
      while (j > 0 && j - 1 == i) --j;
      k.anchor = j - 1;
      k.burst =
          groups == nullptr && (chains_[pe] & kCallChainBit) != 0 &&
          chain_index_.Find(GapKey(pe, kBurst, k.edge)) != FlatIndex::kMissing;
      if (k.burst) {
        // Scored by ChainBursts below.
      } else if (k.anchor >= 0) {
        gap(GapKey(pe, kids[k.anchor].edge, k.edge),
            k.call - kids[k.anchor].ret);
      } else {
        gap(GapKey(pe, kArrival, k.edge), k.call - arrival);
      }
      spawned.emplace_back(k.anchor, k.edge);
    }
    // Learning needs two children for a burst; scoring, every child on a
    // burst edge (the main loop left them to ChainBursts).
    if (groups != nullptr ? n >= 2 : (chains_[pe] & kCallChainBit) != 0) {
      ChainBursts(scratch, arrival, pe, gap, groups);
    }
    // Learning counts every child's duration; scoring needs a return-chain
    // edge.
    if (groups != nullptr ? return_chain_ && n >= 1
                          : (chains_[pe] & kReturnChainBit) != 0) {
      ChainReturns(scratch, pe, gap, groups);
    }
    SortSmall(spawned.begin(), spawned.end());
    size_t s = 0;
    for (int a = -1; a < n; ++a) {
      const uint32_t from = a < 0 ? kArrival : kids[a].edge;
      uint64_t h = Mix64(GapKey(pe, from, kReturn) ^ 0x5E75ULL);
      for (; s < spawned.size() && spawned[s].first == a; ++s) {
        h = Mix64(h ^ spawned[s].second);
      }
      set(GapKey(pe, from, kReturn), h);
    }
    if (p.imputed) return;  // its return time is not known
    if (n == 0) {
      tail(GapKey(pe, kArrival, kReturn), p.ret - arrival);
    } else {
      tail(GapKey(pe, kids.back().edge, kReturn), p.ret - kids.back().ret);
    }
  }

  // Burst order, beyond the paper. A server that fans out to one edge
  // (three concurrent parts of one request, sent by a pool of threads)
  // issues those calls back to back: each follows the previous one by a
  // short, steady gap, while the gap from the anchor (the arrival) carries
  // all the queueing before the burst. Measured from the anchor, the
  // second and third calls of one request look no likelier than those of
  // another request that arrived close to it, and the parts of the two
  // trade places unseen (two parents with three parts each: no count can
  // tell). So the children an anchor spawns on one edge, in call order,
  // can be scored as a chain instead: the first by its gap from the
  // anchor, each later one by its gap from the previous one's call. Both
  // ways are densities of the same call times, so learning (hard EM, like
  // every term here) keeps, per (parent edge, child edge), the one under
  // which the current assignment is likelier (ChooseChains). Where
  // calls are independent of their siblings (every maketrace sample: each
  // is drawn from its anchor) the anchor's gap fits better, and nothing
  // changes.
  template <typename Gap>
  void ChainBursts(Scratch& scratch, TimeNs arrival, uint32_t pe, Gap&& gap,
                   std::vector<std::pair<uint64_t, int>>* groups) {
    const auto& kids = scratch.kids;
    auto& order = scratch.order;
    order.resize(kids.size());
    for (size_t i = 0; i < kids.size(); ++i) order[i] = static_cast<int>(i);
    SortSmall(order.begin(), order.end(), [&](int a, int b) {
      const Kid& x = kids[a];
      const Kid& y = kids[b];
      if (x.anchor != y.anchor) return x.anchor < y.anchor;
      if (x.edge != y.edge) return x.edge < y.edge;
      return x.call != y.call ? x.call < y.call : a < b;
    });
    int run = 0;  // the burst's size so far
    for (size_t i = 0; i < order.size(); ++i) {
      const Kid& k = kids[order[i]];
      const Kid* prev = i > 0 ? &kids[order[i - 1]] : nullptr;
      const bool later =
          prev != nullptr && prev->anchor == k.anchor && prev->edge == k.edge;
      if (groups != nullptr) {
        if (!later && run >= 2) {
          groups->emplace_back(GapKey(pe, kBurst, prev->edge), run);
        }
        run = later ? run + 1 : 1;
      } else if (!k.burst) {
        continue;
      }
      // Scoring takes the anchor's gap for the first child, the previous
      // call's for the others. Learning (which counted every child's gap
      // from its anchor already) counts the later ones both ways, for
      // ChooseChains.
      const uint64_t anchor_key = k.anchor >= 0
                                      ? GapKey(pe, kids[k.anchor].edge, k.edge)
                                      : GapKey(pe, kArrival, k.edge);
      const TimeNs from_anchor =
          k.call - (k.anchor >= 0 ? kids[k.anchor].ret : arrival);
      if (later) {
        gap(GapKey(pe, kBurst, k.edge), k.call - prev->call);
        if (groups != nullptr) gap(kLater | anchor_key, from_anchor);
      } else if (groups == nullptr) {
        gap(anchor_key, from_anchor);
      }
    }
    if (groups != nullptr && run >= 2) {
      groups->emplace_back(GapKey(pe, kBurst, kids[order.back()].edge), run);
    }
  }

  // Return order, beyond the paper. A server that answers a request's
  // calls together (an event loop that holds the parts of a request until
  // the last arrives, then replies to all of them) returns them within a
  // few tens of microseconds of each other, while their durations, each
  // from its own call, vary with everything that came before the reply.
  // Taking every child's duration as given, the model cannot tell a parent
  // whose parts came back together from one whose parts came back
  // milliseconds apart. So the children of a parent on one edge, in
  // return order, can be scored as a chain: the first by its duration (as
  // given, so no term), each later one by the gap of its return from the
  // previous one's, over its duration (the density the chain replaces).
  // Which edges are chained is learned per (parent edge, child edge) with
  // the call chain's rule (ChooseChains). Children whose return is assumed
  // (lost) are left out: their return says nothing of order.
  template <typename Gap>
  void ChainReturns(Scratch& scratch, uint32_t pe, Gap&& gap,
                    std::vector<std::pair<uint64_t, int>>* groups) {
    const auto& kids = scratch.kids;  // in return order
    auto& returned = scratch.returned;
    returned.clear();
    for (int i = 0; i < static_cast<int>(kids.size()); ++i) {
      const Kid& k = kids[i];
      if (k.imputed) continue;
      if (groups == nullptr &&
          chain_index_.Find(GapKey(pe, kReturnChain, k.edge)) ==
              FlatIndex::kMissing) {
        continue;
      }
      returned.push_back(i);
    }
    // By edge, each edge's in return order (the kids' order).
    SortSmall(returned.begin(), returned.end(), [&](int a, int b) {
      return kids[a].edge != kids[b].edge ? kids[a].edge < kids[b].edge : a < b;
    });
    int run = 0;  // the chain's length so far
    for (size_t i = 0; i < returned.size(); ++i) {
      const Kid& k = kids[returned[i]];
      const Kid* prev = i > 0 ? &kids[returned[i - 1]] : nullptr;
      const bool later = prev != nullptr && prev->edge == k.edge;
      const uint64_t duration_key = GapKey(pe, kDuration, k.edge);
      if (groups != nullptr) {
        if (!later && run >= 2) {
          groups->emplace_back(GapKey(pe, kReturnChain, prev->edge), run);
        }
        run = later ? run + 1 : 1;
        gap(duration_key, k.ret - k.call);
      }
      if (!later) continue;
      gap(GapKey(pe, kReturnChain, k.edge), k.ret - prev->ret);
      gap((groups != nullptr ? kLater : kGiven) | duration_key, k.ret - k.call);
    }
    if (groups != nullptr && run >= 2) {
      groups->emplace_back(GapKey(pe, kReturnChain, kids[returned.back()].edge),
                           run);
    }
  }

  // What learning counts: per gap key a histogram of delays and its total,
  // per multiset (its hash includes its context) the context and a count,
  // and, once counting is done, per context a total. Counts only, in
  // doubles: integers, so the sums of parts are exact in any order. Each
  // KeyIndex numbers its keys; what a key counts sits at its number in the
  // arrays after it.
  struct alignas(64) LearnCounts {
    KeyIndex gap_index;
    std::vector<double> totals;
    std::vector<std::vector<double>> counts;
    KeyIndex sets;
    std::vector<uint64_t> set_context;
    std::vector<double> set_count;
    KeyIndex contexts;
    std::vector<double> context_total;
    // Per chain key, how many groups (bursts, return chains) had each size
    // (index: size).
    std::unordered_map<uint64_t, std::vector<double>> group_sizes;
  };

  // Counts the timelines of the parents in [begin, end).
  void CountTimelines(uint32_t begin, uint32_t end, Scratch& scratch,
                      LearnCounts* out) {
    // Named references, not a structured binding: lambdas capture them.
    auto& gap_index = out->gap_index;
    auto& totals = out->totals;
    auto& counts = out->counts;
    std::vector<std::pair<uint64_t, int>> groups;
    auto add = [&](uint64_t key, TimeNs delay) {
      const auto [k, inserted] = gap_index.Insert(key);
      if (inserted) {
        counts.emplace_back(static_cast<size_t>(scale_.size()), 0.0);
        totals.push_back(0);
      }
      counts[k][scale_.Bin(delay)] += 1;
      totals[k] += 1;
    };
    for (uint32_t i = begin; i < end; ++i) {
      const Pair& p = pairs_[i];
      if (p.ret < 0 || !makes_calls_[p.callee]) continue;
      ForEachTerm(
          scratch, i, kNone, kNone, add,
          [&](uint64_t context, uint64_t set) {
            AddSet(set, context, 1, out);
          },
          add, &groups);
      for (const auto& [key, size] : groups) {
        auto& sizes = out->group_sizes[key];
        if (sizes.size() <= static_cast<size_t>(size)) sizes.resize(size + 1);
        sizes[size] += 1;
      }
      groups.clear();
    }
  }

  // A multiset seen `n` more times, in `context` (the latest one kept, as
  // one pass over the parents in order keeps it).
  static void AddSet(uint64_t set, uint64_t context, double n,
                     LearnCounts* out) {
    const auto [k, inserted] = out->sets.Insert(set);
    if (inserted) {
      out->set_context.push_back(context);
      out->set_count.push_back(n);
      return;
    }
    out->set_context[k] = context;
    out->set_count[k] += n;
  }
  static void AddContext(uint64_t context, double n, LearnCounts* out) {
    const auto [k, inserted] = out->contexts.Insert(context);
    if (inserted) {
      out->context_total.push_back(n);
    } else {
      out->context_total[k] += n;
    }
  }

  // Adds the counts of a later part of the parents to `into`.
  static void MergeCounts(LearnCounts&& from, LearnCounts* into) {
    for (uint32_t k = 0; k < from.gap_index.size(); ++k) {
      const auto [to_k, inserted] =
          into->gap_index.Insert(from.gap_index.key(k));
      if (inserted) {
        into->counts.push_back(std::move(from.counts[k]));
        into->totals.push_back(from.totals[k]);
        continue;
      }
      std::vector<double>& to = into->counts[to_k];
      for (size_t b = 0; b < to.size(); ++b) to[b] += from.counts[k][b];
      into->totals[to_k] += from.totals[k];
    }
    for (uint32_t k = 0; k < from.sets.size(); ++k) {
      AddSet(from.sets.key(k), from.set_context[k], from.set_count[k], into);
    }
    for (const auto& [key, sizes] : from.group_sizes) {
      auto& to = into->group_sizes[key];
      if (to.size() < sizes.size()) to.resize(sizes.size());
      for (size_t m = 0; m < sizes.size(); ++m) to[m] += sizes[m];
    }
  }

  // Learns the gap densities and the spawn multiset frequencies from the
  // current assignment, the parents counted on `threads` threads.
  void LearnTimeline(int threads) {
    gap_boards_.clear();
    // Ranges cut as the threads go (WalkSplittingRanges), merged in order:
    // the keys numbered as one walk numbers them. (A range costs its
    // histograms, 7.5 KB a gap key at the default base, zeroed and merged:
    // none shorter than 2^15 calls, about 10 ms of counting.)
    std::vector<LearnCounts> part_counts = WalkSplittingRanges<LearnCounts>(
        threads, static_cast<uint32_t>(pairs_.size()), 1u << 15,
        [&](LearnCounts& out, SplitRange& items, int thread) {
          for (uint32_t begin, end; items.Claim(256, &begin, &end);) {
            CountTimelines(begin, end, scratch_[thread], &out);
          }
        });
    for (size_t part = 1; part < part_counts.size(); ++part) {
      MergeCounts(std::move(part_counts[part]), &part_counts[0]);
    }
    LearnCounts& learned = part_counts[0];
    // Each context's total: the sum of its multisets' counts (a multiset's
    // hash includes its context), added once here rather than counted with
    // every anchor (a third of counting's key lookups).
    for (uint32_t k = 0; k < learned.sets.size(); ++k) {
      AddContext(learned.set_context[k], learned.set_count[k], &learned);
    }
    const KeyIndex& gap_index = learned.gap_index;
    auto& totals = learned.totals;
    auto& counts = learned.counts;
    // Smooth each density a little (a bin is 5% of the delay; a few
    // thousand samples leave gaps between neighbouring bins) and turn it
    // into log density per nanosecond, with the prior's pseudo-observation.
    const GaussianSmoother smoother(std::max(1.0, smooth_bins_));
    const int bins = scale_.size();
    std::vector<double> smooth;
    gap_boards_.resize(counts.size() * static_cast<size_t>(bins));
    for (size_t k = 0; k < counts.size(); ++k) {
      smoother.Apply(counts[k], smooth, smoother.sum());
      float* out = &gap_boards_[k * static_cast<size_t>(bins)];
      for (int b = 0; b < bins; ++b) {
        out[b] = static_cast<float>(std::log(
            (smooth[b] + 1.0 / bins) / (totals[k] + 1.0) * scale_.InvWidth(b)));
      }
    }
    std::vector<std::pair<uint64_t, uint32_t>> items;
    items.reserve(gap_index.size());
    for (uint32_t k = 0; k < gap_index.size(); ++k) {
      items.emplace_back(gap_index.key(k), k);
    }
    gap_index_.Build(items);
    ChooseChains(learned, std::move(items));
    items.clear();
    // A multiset never seen after this anchor gets half an observation.
    // Each index holds the log probability itself, as the bits of a float
    // (finite, so never FlatIndex::kMissing, a NaN's): the lookup per
    // anchor scored is one memory access, not two.
    // (Every set's context was counted with it, so Find finds it.)
    for (uint32_t k = 0; k < learned.sets.size(); ++k) {
      const double total =
          learned.context_total[learned.contexts.Find(learned.set_context[k])];
      items.emplace_back(learned.sets.key(k),
                         std::bit_cast<uint32_t>(static_cast<float>(std::log(
                             (learned.set_count[k] + 0.5) / (total + 1.0)))));
    }
    set_index_.Build(items);
    items.clear();
    for (uint32_t k = 0; k < learned.contexts.size(); ++k) {
      items.emplace_back(
          learned.contexts.key(k),
          std::bit_cast<uint32_t>(static_cast<float>(
              std::log(0.5 / (learned.context_total[k] + 1.0)))));
    }
    unseen_index_.Build(items);
    score_cache_.assign(pairs_.size(), std::numeric_limits<float>::quiet_NaN());
    LearnGrandchildCounts(threads);
    LearnGroupOrder();
    LearnFanIn();
    LearnSharedIds();
  }

  // Shared ids, beyond the paper. Where an operation carries an id in its
  // route (/item/k7; KeyCallees reads which segments are ids), a service
  // often passes it on: /item/k7 asks /price/k7, /fanout/k3 asks
  // /stock/k3. A parent whose id its child repeats is then likelier than
  // one whose id differs, by as much as repeats are commoner under the
  // assigned parents than under the candidates not chosen. So, per (parent
  // edge, child edge) where both carry ids, learning counts how often the
  // child's id is its parent's (q) and how often it is that of a candidate
  // not chosen (the chance of a match, c), and a child under a parent with
  // an id scores log(q / c) when the two agree and log((1 - q) / (1 - c))
  // when they do not: the likelihood ratio of the parent against any other
  // candidate (hard EM, like every term here; both counts with one
  // pseudo-match in two). The chance is read over the candidates not
  // chosen, not over all candidates: those include the true parent, whose
  // matches would inflate it and weaken the term. Only where children
  // repeat their
  // parent's id more often than chance: ids that do not travel (/user/42
  // calling /orders/9) give no term, nor does a trace without ids (every
  // maketrace sample).
  void LearnSharedIds() {
    shared_ids_.clear();
    if (table_->id_of.empty()) return;
    struct Count {
      double assigned = 0, same = 0, candidates = 0, same_candidates = 0;
    };
    std::unordered_map<uint64_t, Count> counts;
    for (uint32_t i = 0; i < pairs_.size(); ++i) {
      const uint32_t id = table_->IdOf(i);
      if (id == 0) continue;
      const Pair& c = pairs_[i];
      if (c.parent != kNone && table_->IdOf(c.parent) != 0) {
        Count& n = counts[PairKey(edge_of_[c.parent], edge_of_[i])];
        n.assigned += 1;
        n.same += table_->IdOf(c.parent) == id ? 1 : 0;
      }
      for (uint32_t k = c.cand_begin; k < c.cand_end; ++k) {
        const uint32_t p = cands_[k];
        if (table_->IdOf(p) == 0) continue;
        Count& n = counts[PairKey(edge_of_[p], edge_of_[i])];
        n.candidates += 1;
        n.same_candidates += table_->IdOf(p) == id ? 1 : 0;
      }
    }
    for (const auto& [key, n] : counts) {
      if (n.assigned < kMinSharedIds) continue;
      const double q = (n.same + 1) / (n.assigned + 2);
      // The chance of a match: among the candidates not chosen.
      const double chance = (n.same_candidates - n.same + 1) /
                            (n.candidates - n.assigned + 2);
      if (q <= chance) continue;
      shared_ids_[key] = {static_cast<float>(std::log(q / chance)),
                          static_cast<float>(std::log((1 - q) / (1 - chance)))};
    }
  }
  // Fewer children with ids on a pair of edges say too little.
  static constexpr double kMinSharedIds = 20;

  // c under p: its shared-id term (LearnSharedIds).
  double IdGain(uint32_t c, uint32_t p) const {
    if (shared_ids_.empty()) return 0;
    const uint32_t a = table_->IdOf(c), b = table_->IdOf(p);
    if (a == 0 || b == 0) return 0;
    auto it = shared_ids_.find(PairKey(edge_of_[p], edge_of_[c]));
    if (it == shared_ids_.end()) return 0;
    return a == b ? it->second.first : it->second.second;
  }

  // The first call among p's children on edge e (-1: none).
  TimeNs GroupStart(uint32_t p, uint32_t e) const {
    TimeNs start = -1;
    for (uint32_t c = pairs_[p].first_child; c != kNone;
         c = pairs_[c].next_sibling) {
      if (edge_of_[c] == e && (start < 0 || pairs_[c].call < start)) {
        start = pairs_[c].call;
      }
    }
    return start;
  }

  // Group order (see GroupSwapGain): per chained (parent edge, child
  // edge), of consecutive parents on the edge (in arrival order) that both
  // have children on the child edge, the share whose groups start in the
  // same order, as the log odds of keeping order. Counted from the current
  // assignment, like every term here, on one thread in call order.
  void LearnGroupOrder() {
    group_order_.clear();
    group_size_.clear();
    // Only parents on a chained edge count: without one, the walk below
    // (every call, each pass) would find nothing.
    if (!AnyChained()) return;
    std::unordered_map<uint64_t, std::pair<TimeNs, TimeNs>> last;
    std::unordered_map<uint64_t, std::pair<double, double>> counts;
    std::unordered_map<uint64_t, std::array<uint32_t, kMaxGroup + 1>> sizes;
    std::vector<std::pair<uint32_t, int>> edges;
    for (uint32_t p = 0; p < pairs_.size(); ++p) {
      const uint32_t pe = edge_of_[p];
      if (pairs_[p].first_child == kNone || chains_[pe] == 0) continue;
      edges.clear();
      CountChildren(p, kNone, &edges);
      for (const auto& [e, n] : edges) {
        if (!IsChained(pe, e)) continue;
        const TimeNs start = GroupStart(p, e);
        const uint64_t key = PairKey(pe, e);
        auto [sit, fresh] = sizes.try_emplace(key);
        if (fresh) sit->second.fill(0);
        ++sit->second[std::min(n, kMaxGroup)];
        auto [it, first] = last.try_emplace(key, pairs_[p].call, start);
        if (!first) {
          if (it->second.first != pairs_[p].call &&
              it->second.second != start) {
            auto& [same, crossed] = counts[key];
            (it->second.second < start ? same : crossed) += 1;
          }
          it->second = {pairs_[p].call, start};
        }
      }
    }
    for (const auto& [key, c] : counts) {
      group_order_[key] =
          static_cast<float>(std::log((c.first + 1.0) / (c.second + 1.0)));
    }
    for (const auto& [key, hist] : sizes) {
      // The usual size of a group (two or more); a size past kMaxGroup
      // means no limit (0).
      const auto mode =
          std::max_element(hist.begin() + 2, hist.end()) - hist.begin();
      group_size_[key] = mode == kMaxGroup ? 0 : static_cast<uint32_t>(mode);
    }
  }
  static constexpr int kMaxGroup = 16;

  // Fan-in order, beyond the paper. A server that holds the calls of a
  // group until the last one arrives (a compose step: the real stack's
  // node holds a request's three parts, then calls /audit) makes the call
  // only
  // once its group is complete, and, serving its input first in, first
  // out, makes those calls in the order in which their groups completed.
  // Under load the gap from a group's last arrival to the call grows
  // heavy-tailed (the event loop lags its input), so the gap densities
  // cannot tell two calls given to each other's groups from two calls
  // given to their own: the sum of the two gaps is the same either way.
  // Their order can: a wrongly placed call mostly has a neighbour on its
  // edge whose group completed in the other order, a rightly placed one
  // rarely. So a call whose parent is a member of a chained
  // group (ChooseChains: a burst or return chain under the member's
  // parent) is also scored by
  //   whether its parent's group was complete when it was made, and
  //   for the previous and the next call on its edge (in call order),
  //   whether their parents' groups completed in the same order,
  // each as the log of its share among the current assignment's calls on
  // that edge (hard EM, like every term here). The neighbours' groups are
  // read from the assignment the pass started with, so every part of a
  // pass (PartitionByComponents) sees the same ones. Where no edge is
  // chained (every maketrace sample) nothing changes.
  //
  // Only where the group makes the call, not each member: a (member edge,
  // child edge) pair is scored, and its members timed from their group's
  // last arrival (ArrivalOf), when its groups make at most kFanInShare
  // calls on the child edge per member, and at least half of those once
  // the group was complete. A scatter-gather whose members each call on
  // (every shard querying its own store: one call per member) keeps each
  // member's own arrival, which says more than the group's last one
  // (ScatterGatherMembersKeepTheirOwnArrival). The share of calls made
  // after completion alone cannot tell the two apart: a scatter-gather
  // queued long before each call shows as high a share as a fan-in does
  // under the first passes' assignment.
  static constexpr double kFanInShare = 0.5;
  static constexpr TimeNs kNoTrigger = std::numeric_limits<TimeNs>::min();
  struct FanInOdds {
    float complete, incomplete, kept, crossed;
  };

  // Consecutive calls of each edge, in (corrected) call order.
  void PrepareNeighbours() {
    const size_t n = pairs_.size();
    nb_prev_.assign(n, kNone);
    nb_next_.assign(n, kNone);
    std::vector<uint32_t> last(edge_count_, kNone);
    const std::vector<uint32_t>& order = table_->call_order;
    for (size_t k = 0; k < n; ++k) {
      const uint32_t i = order.empty() ? static_cast<uint32_t>(k) : order[k];
      const uint32_t e = edge_of_[i];
      if (last[e] != kNone) {
        nb_prev_[i] = last[e];
        nb_next_[last[e]] = i;
      }
      last[e] = i;
    }
  }

  // When the group of g's children on edge e was complete: its last
  // call; kNoTrigger when e is not chained under g, or g has more
  // children than the timeline scores (walking them for every choice
  // would make the passes quadratic).
  TimeNs GroupTrigger(uint32_t g, uint32_t e) const {
    if (g == kNone || Crowded(g) || !IsChained(edge_of_[g], e)) {
      return kNoTrigger;
    }
    TimeNs last = kNoTrigger;
    for (uint32_t m = pairs_[g].first_child; m != kNone;
         m = pairs_[m].next_sibling) {
      if (edge_of_[m] == e) last = std::max(last, pairs_[m].call);
    }
    return last;
  }

  void LearnFanIn() {
    fanin_.clear();
    waiting_members_.assign(edge_count_, 0);
    if (!AnyChained()) return;
    if (nb_prev_.size() != pairs_.size()) PrepareNeighbours();
    const size_t n = pairs_.size();
    snap_trigger_.assign(n, kNoTrigger);
    // Per parent with children, its group's last arrival, once.
    for (uint32_t p = 0; p < n; ++p) {
      if (pairs_[p].first_child == kNone) continue;
      const TimeNs t = MemberTrigger(p);
      if (t == kNoTrigger) continue;
      for (uint32_t x = pairs_[p].first_child; x != kNone;
           x = pairs_[x].next_sibling) {
        snap_trigger_[x] = t;
      }
    }
    // complete, incomplete, kept, crossed per (member edge, child edge);
    // then the members of the groups that make such calls, and the calls.
    std::unordered_map<uint64_t, std::array<double, 6>> counts;
    for (uint32_t x = 0; x < n; ++x) {
      const TimeNs t = snap_trigger_[x];
      if (t == kNoTrigger) continue;
      auto& c =
          counts.try_emplace(PairKey(edge_of_[pairs_[x].parent], edge_of_[x]))
              .first->second;
      c[t <= pairs_[x].call ? 0 : 1] += 1;
      const uint32_t a = nb_prev_[x];
      if (a != kNone && snap_trigger_[a] != kNoTrigger) {
        c[snap_trigger_[a] <= t ? 2 : 3] += 1;
      }
    }
    std::vector<uint32_t> members;                     // their edges
    std::vector<std::pair<uint32_t, uint32_t>> calls;  // member, call edge
    for (uint32_t g = 0; g < n; ++g) {
      if (pairs_[g].first_child == kNone || chains_[edge_of_[g]] == 0 ||
          Crowded(g)) {
        continue;
      }
      members.clear();
      calls.clear();
      for (uint32_t m = pairs_[g].first_child; m != kNone;
           m = pairs_[m].next_sibling) {
        if (!IsChained(edge_of_[g], edge_of_[m])) continue;
        members.push_back(edge_of_[m]);
        for (uint32_t x = pairs_[m].first_child; x != kNone;
             x = pairs_[x].next_sibling) {
          calls.emplace_back(edge_of_[m], edge_of_[x]);
        }
      }
      std::sort(members.begin(), members.end());
      std::sort(calls.begin(), calls.end());
      for (size_t i = 0; i < calls.size();) {
        size_t j = i;
        while (j < calls.size() && calls[j] == calls[i]) ++j;
        const auto [lo, hi] =
            std::equal_range(members.begin(), members.end(), calls[i].first);
        auto it = counts.find(PairKey(calls[i].first, calls[i].second));
        if (it != counts.end()) {
          it->second[4] += static_cast<double>(hi - lo);
          it->second[5] += static_cast<double>(j - i);
        }
        i = j;
      }
    }
    for (const auto& [key, c] : counts) {
      if (c[0] < c[1] || c[5] > kFanInShare * c[4]) continue;
      auto log_share = [](double k, double of) {
        return static_cast<float>(std::log((k + 0.5) / (of + 1.0)));
      };
      fanin_[key] = {log_share(c[0], c[0] + c[1]), log_share(c[1], c[0] + c[1]),
                     log_share(c[2], c[2] + c[3]),
                     log_share(c[3], c[2] + c[3])};
      waiting_members_[static_cast<uint32_t>(key >> 32)] = 1;
    }
  }

  // The fan-in terms of call x under a member on edge `member_edge` whose
  // group completed at `t` (kNoTrigger: none); a neighbour that the same
  // trade moves (`moved`) is read with its group's new `moved_t`.
  double FanInTerm(uint32_t x, uint32_t member_edge, TimeNs t,
                   uint32_t moved = kNone, TimeNs moved_t = kNoTrigger) const {
    if (t == kNoTrigger || fanin_.empty()) return 0;
    const auto it = fanin_.find(PairKey(member_edge, edge_of_[x]));
    if (it == fanin_.end()) return 0;
    const FanInOdds& f = it->second;
    double sum = t <= pairs_[x].call ? f.complete : f.incomplete;
    auto neighbour = [&](uint32_t y, bool earlier) {
      if (y == kNone) return;
      const TimeNs ty = y == moved ? moved_t : snap_trigger_[y];
      if (ty == kNoTrigger) return;
      sum += (earlier ? ty <= t : t <= ty) ? f.kept : f.crossed;
    };
    neighbour(nb_prev_[x], true);
    neighbour(nb_next_[x], false);
    return sum;
  }

  // When member p's group was complete (GroupTrigger of its parent).
  TimeNs MemberTrigger(uint32_t p) const {
    return GroupTrigger(pairs_[p].parent, edge_of_[p]);
  }

  // x under the candidate p: its own fan-in terms.
  double FanInGain(uint32_t x, uint32_t p) const {
    if (fanin_.empty()) return 0;
    return FanInTerm(x, edge_of_[p], MemberTrigger(p));
  }

  // The fan-in terms of the children of g's members on edge e: what a
  // group swap changes (each group's last arrival moves with it). Single
  // moves and two-call trades of a member are scored without it: with it
  // they would move parts to suit their children's order, against the
  // evidence of the parts' own timing.
  double GroupFanIn(uint32_t g, uint32_t e) const {
    if (fanin_.empty()) return 0;
    const TimeNs t = GroupTrigger(g, e);
    if (t == kNoTrigger) return 0;
    double sum = 0;
    for (uint32_t m = pairs_[g].first_child; m != kNone;
         m = pairs_[m].next_sibling) {
      if (edge_of_[m] != e) continue;
      for (uint32_t x = pairs_[m].first_child; x != kNone;
           x = pairs_[x].next_sibling) {
        sum += FanInTerm(x, e, t);
      }
    }
    return sum;
  }

  // Which (parent edge, child edge) pairs are scored as bursts (see
  // ChainBursts) or as return chains (ChainReturns): those where such
  // groups are the rule (most anchors that spawn a call on the edge spawn
  // two or more; for returns, most parents with a child on the edge have
  // two or more) and the current assignment is likelier as chains. Each
  // way is scored by its leave-one-out log-likelihood (each observation
  // under the density learned from all the others), so the chain's extra
  // density wins no edge by fitting its few samples. The first child of a
  // group is scored the same both ways (its anchor's gap, its duration),
  // so the comparison is between the later children's gaps from their
  // anchor and from the previous call, or their durations and their gaps
  // from the previous return. The unchained way scores a group of m
  // children as a density of their unordered times (given their calls,
  // for returns), so it gains log m! as one of the ordered ones (what a
  // chain is). Keys are taken in their order, so the sums come out the
  // same however learning was cut into parts.
  void ChooseChains(const LearnCounts& learned,
                    std::vector<std::pair<uint64_t, uint32_t>> items) {
    std::sort(items.begin(), items.end());
    constexpr uint64_t kEdgeMask = (uint64_t{1} << kEdgeBits) - 1;
    auto from_of = [](uint64_t key) {
      return static_cast<uint32_t>((key >> kEdgeBits) & kEdgeMask);
    };
    const GaussianSmoother smoother(std::max(1.0, smooth_bins_));
    const int bins = scale_.size();
    std::vector<double> smooth;
    // The leave-one-out log-likelihood of the observations `of` under the
    // density of key index k (as LearnTimeline makes it; `of` are among
    // the observations it was learned from).
    auto loo = [&](uint32_t k, const std::vector<double>& of) {
      smoother.Apply(learned.counts[k], smooth, smoother.sum());
      double sum = 0;
      for (int b = 0; b < bins; ++b) {
        if (of[b] == 0) continue;
        const double mass = std::max(0.0, smooth[b] - 1.0 / smoother.sum());
        sum += of[b] * std::log((mass + 1.0 / bins) / learned.totals[k] *
                                scale_.InvWidth(b));
      }
      return sum;
    };
    // Per chain key: the later children's log-likelihood unchained and as
    // chains, and how many groups there were (the children counted
    // unchained less the later ones).
    struct Fit {
      double unchained = 0, chained = 0, groups = 0;
    };
    std::unordered_map<uint64_t, Fit> fits;
    for (const auto& [key, k] : items) {
      const uint32_t from = from_of(key);
      if ((from == kBurst || from == kReturnChain) && !(key & kLater)) {
        Fit& fit = fits[key];
        fit.chained = loo(k, learned.counts[k]);
        fit.groups -= learned.totals[k];
      }
    }
    // The unchained way: each anchor's gap for a burst, the duration for a
    // return chain.
    for (const auto& [key, k] : items) {
      const auto to = static_cast<uint32_t>(key & kEdgeMask);
      const uint32_t from = from_of(key);
      if (key & kLater || to == kReturn || from == kAfterReturn ||
          from == kBurst || from == kReturnChain) {
        continue;
      }
      auto it =
          fits.find(GapKey(static_cast<uint32_t>(key >> (2 * kEdgeBits)),
                           from == kDuration ? kReturnChain : kBurst, to));
      if (it == fits.end()) continue;
      it->second.groups += learned.totals[k];
      const uint32_t later = learned.gap_index.Find(key | kLater);
      if (later != KeyIndex::kMissing) {
        it->second.unchained += loo(k, learned.counts[later]);
      }
    }
    std::vector<std::pair<uint64_t, uint32_t>> chained;
    chains_.assign(edge_count_, 0);
    for (const auto& [key, k] : items) {
      auto it = fits.find(key);
      if (key & kLater || it == fits.end()) continue;
      auto [unchained, chain, groups] = it->second;
      double seen = 0;  // groups of two or more
      const auto sizes = learned.group_sizes.find(key);
      if (sizes != learned.group_sizes.end()) {
        for (size_t m = 2; m < sizes->second.size(); ++m) {
          unchained +=
              sizes->second[m] * std::lgamma(static_cast<double>(m + 1));
          seen += sizes->second[m];
        }
      }
      if (2 * seen > groups && chain > unchained) {
        chained.emplace_back(key, 1);
        chains_[key >> (2 * kEdgeBits)] |=
            from_of(key) == kBurst ? kCallChainBit : kReturnChainBit;
      }
    }
    chain_index_.Build(chained);
  }

  // Grandchild counts, beyond the paper. The penalties of 5.1.1.3 and the
  // multiset term above judge each parent's children alone. An aggregating
  // server breaks that independence: a request sends it three parts, and
  // the part that arrives last makes the one downstream call (an
  // asynchronous fan-in), so each part calls downstream with
  // probability 1/3, and yet the request has exactly one such call in all.
  // Per part, a second call on a part of the same request (and none on
  // another request's) looks no worse than the truth. So for every call G
  // (the request's call into the tier above) and every edge E its
  // grandchildren use, the count of G's grandchildren on E is scored
  // against the count that its children, each drawing its number of E
  // calls alone from its edge's distribution, would give (the convolution
  // of those distributions, a Poisson-binomial when counts are 0 or 1):
  //   log P(n | G's edge, E) - log P_independent(n | G's edge, E).
  // Where the children are independent (every maketrace sample but
  // async-fanin: a server's calls depend on its own call only) the two
  // agree and the term is about zero; where siblings share a request's
  // work it is what the per-parent terms cannot see. Both distributions
  // are learned from the current assignment, like the rest (hard EM).
  // Counts of kGrandchildCap and more share a bin.
  static constexpr int kGrandchildCap = 4;
  using CountDist = std::array<double, kGrandchildCap + 1>;
  static uint64_t PairKey(uint32_t a, uint32_t b) {
    return (uint64_t{a} << 32) | b;
  }

  // The children of `p` (less `exclude`) by edge: (edge, count) pairs.
  void CountChildren(uint32_t p, uint32_t exclude,
                     std::vector<std::pair<uint32_t, int>>* out) const {
    for (uint32_t c = pairs_[p].first_child; c != kNone;
         c = pairs_[c].next_sibling) {
      if (c == exclude) continue;
      const uint32_t e = edge_of_[c];
      auto it = std::find_if(out->begin(), out->end(),
                             [e](const auto& x) { return x.first == e; });
      if (it == out->end()) {
        out->emplace_back(e, 1);
      } else {
        ++it->second;
      }
    }
  }

  // The grandchildren of `g` by edge, leaving out child `exclude` with its
  // children, and the grandchild `exclude` if it is one.
  // False, with nothing counted, when g or one of those children is
  // crowded (see Crowded).
  bool CountGrandchildren(uint32_t g, uint32_t exclude,
                          std::vector<std::pair<uint32_t, int>>* out) const {
    out->clear();
    if (Crowded(g)) return false;
    for (uint32_t p = pairs_[g].first_child; p != kNone;
         p = pairs_[p].next_sibling) {
      if (p == exclude) continue;
      if (Crowded(p)) {
        out->clear();
        return false;
      }
      CountChildren(p, exclude, out);
    }
    return true;
  }

  static int CountOf(const std::vector<std::pair<uint32_t, int>>& counts,
                     uint32_t e) {
    for (const auto& [edge, n] : counts) {
      if (edge == e) return n;
    }
    return 0;
  }

  // Learned over ranges of the calls on `threads` threads: the counts of
  // children (whole numbers, so sums in any order are exact) merged in
  // range order, which numbers the pairs of edges as one walk would; the
  // expected distributions (sums of fractions, whose order shows in the
  // last bits) computed in parallel a stretch of calls at a time and then
  // added on one thread in call order, as one walk adds them.
  void LearnGrandchildCounts(int threads) {
    grand_log_.clear();
    const auto n_pairs = static_cast<uint64_t>(pairs_.size());
    const int n_threads = std::max(threads, 1);
    // Per (edge of a call, edge of its children): the distribution of the
    // number of such children per call; and per edge, the child edges.
    // (Edges are numbered densely: arrays by edge; the pairs of edges
    // numbered by a KeyIndex, their distributions under those numbers.)
    struct alignas(64) ChildCounts {
      KeyIndex index;
      std::vector<CountDist> dist;
      std::vector<double> calls_on_edge;
    };
    // Ranges cut as the threads go, merged in order below.
    std::vector<ChildCounts> part_counts = WalkSplittingRanges<ChildCounts>(
        n_threads, static_cast<uint32_t>(n_pairs), 1u << 15,
        [&](ChildCounts& out, SplitRange& items, int) {
          out.calls_on_edge.assign(edge_count_, 0.0);
          std::vector<std::pair<uint32_t, int>> counts;
          for (uint32_t begin, end; items.Claim(1024, &begin, &end);) {
            for (uint32_t p = begin; p < end; ++p) {
              if (pairs_[p].ret < 0) continue;
              out.calls_on_edge[edge_of_[p]] += 1;
              counts.clear();
              CountChildren(p, kNone, &counts);
              for (const auto& [e, n] : counts) {
                const auto [k, inserted] =
                    out.index.Insert(PairKey(edge_of_[p], e));
                if (inserted) out.dist.emplace_back().fill(0.0);
                out.dist[k][std::min(n, kGrandchildCap)] += 1;
              }
            }
          }
        });
    KeyIndex child_index;
    std::vector<CountDist> child_dist;
    std::vector<double> calls_on_edge(edge_count_, 0.0);
    std::vector<std::vector<uint32_t>> child_edges(edge_count_);
    for (ChildCounts& part : part_counts) {
      for (uint32_t local = 0; local < part.index.size(); ++local) {
        const uint64_t key = part.index.key(local);
        const auto [k, inserted] = child_index.Insert(key);
        if (inserted) {
          child_dist.emplace_back().fill(0.0);
          child_edges[static_cast<uint32_t>(key >> 32)].push_back(
              static_cast<uint32_t>(key));
        }
        for (int i = 0; i <= kGrandchildCap; ++i) {
          child_dist[k][i] += part.dist[local][i];
        }
      }
      for (size_t e = 0; e < edge_count_; ++e) {
        calls_on_edge[e] += part.calls_on_edge[e];
      }
    }
    part_counts.clear();
    for (uint32_t k = 0; k < child_index.size(); ++k) {
      CountDist& d = child_dist[k];
      const double total =
          calls_on_edge[static_cast<uint32_t>(child_index.key(k) >> 32)];
      double seen = 0;
      for (double x : d) seen += x;
      d[0] += total - seen;  // the calls with none
      for (double& x : d) x /= total;
    }
    // Per (edge of G, grandchild edge): observed counts, and the expected
    // distribution under independent children.
    KeyIndex grand_keys;
    std::vector<std::pair<CountDist, CountDist>> grand;
    auto add = [&](uint64_t key, int observed, const CountDist& independent) {
      const auto [k, inserted] = grand_keys.Insert(key);
      if (inserted) {
        grand.emplace_back();
        grand.back().first.fill(0.0);
        grand.back().second.fill(0.0);
      }
      grand[k].first[observed] += 1;
      for (int i = 0; i <= kGrandchildCap; ++i)
        grand[k].second[i] += independent[i];
    };
    // The calls from `begin` to `end`, each (G, grandchild edge) handed to
    // emit(key, observed count, expected distribution) in call order.
    auto walk = [&](uint32_t begin, uint32_t end, auto&& emit) {
      std::vector<std::pair<uint32_t, int>> counts;
      std::vector<uint32_t> edges;
      for (uint32_t g = begin; g < end; ++g) {
        if (pairs_[g].first_child == kNone || Crowded(g)) continue;
        edges.clear();
        for (uint32_t p = pairs_[g].first_child; p != kNone;
             p = pairs_[p].next_sibling) {
          const std::vector<uint32_t>& below = child_edges[edge_of_[p]];
          edges.insert(edges.end(), below.begin(), below.end());
        }
        if (edges.empty() || !CountGrandchildren(g, kNone, &counts)) continue;
        std::sort(edges.begin(), edges.end());
        edges.erase(std::unique(edges.begin(), edges.end()), edges.end());
        for (uint32_t e : edges) {
          CountDist independent{};
          independent[0] = 1;
          for (uint32_t p = pairs_[g].first_child; p != kNone;
               p = pairs_[p].next_sibling) {
            const uint32_t k = child_index.Find(PairKey(edge_of_[p], e));
            if (k == KeyIndex::kMissing) continue;
            const CountDist& dist = child_dist[k];
            CountDist sum{};
            for (int i = 0; i <= kGrandchildCap; ++i) {
              // (Skipping a zero adds nothing the sum would have had: the
              // counts are finite, 0 * x is +0.)
              if (independent[i] == 0) continue;
              for (int j = 0; j <= kGrandchildCap; ++j) {
                sum[std::min(i + j, kGrandchildCap)] += independent[i] * dist[j];
              }
            }
            independent = sum;
          }
          emit(PairKey(edge_of_[g], e),
               std::min(CountOf(counts, e), kGrandchildCap), independent);
        }
      }
    };
    if (n_threads == 1) {
      walk(0, static_cast<uint32_t>(n_pairs), add);
    } else {
      // The walk in chunks on the threads, the adding in call order on
      // this one (its sums of fractions show their order), each stretch
      // added while the threads walk the next, so that the adding keeps
      // no thread waiting after each stretch's walk.
      struct Expected {
        uint64_t key;
        int observed;
        CountDist independent;
      };
      WalkInChunksConsumeInOrder<std::vector<Expected>>(
          n_threads, n_pairs, 1 << 13, 8,
          [&](size_t begin, size_t end, std::vector<Expected>& list) {
            list.clear();
            walk(static_cast<uint32_t>(begin), static_cast<uint32_t>(end),
                 [&](uint64_t key, int observed, const CountDist& independent) {
                   list.push_back({key, observed, independent});
                 });
          },
          [&](const std::vector<Expected>& list) {
            for (const Expected& x : list) {
              add(x.key, x.observed, x.independent);
            }
          });
    }
    // Both with the multisets' half observation per count never seen.
    std::vector<std::pair<uint64_t, uint32_t>> items;
    for (uint32_t k = 0; k < grand_keys.size(); ++k) {
      const auto& dists = grand[k];
      double total = 0;
      for (double x : dists.first) total += x;
      total += 0.5 * (kGrandchildCap + 1);
      items.emplace_back(grand_keys.key(k),
                         static_cast<uint32_t>(grand_log_.size()));
      for (int n = 0; n <= kGrandchildCap; ++n) {
        grand_log_.push_back(
            static_cast<float>(std::log((dists.first[n] + 0.5) / total) -
                               std::log((dists.second[n] + 0.5) / total)));
      }
    }
    grand_index_.Build(items);
  }

  // The grandchild term's change as G's count on edge e goes from n to m.
  double GrandchildLogRatio(uint32_t g_edge, uint32_t e, int n, int m) const {
    const uint32_t k = grand_index_.Find(PairKey(g_edge, e));
    if (k == FlatIndex::kMissing) return 0;
    return grand_log_[k + std::min(m, kGrandchildCap)] -
           grand_log_[k + std::min(n, kGrandchildCap)];
  }

  // What giving child c (off its parent, or on p: then as if off) to p
  // changes in the grandchild terms: one more grandchild on c's edge under
  // p's parent, and c's children become grandchildren of p.
  double GrandchildGain(Scratch& scratch, uint32_t c, uint32_t p) {
    double sum = 0;
    auto& counts = scratch.grand;
    const uint32_t g = pairs_[p].parent;
    if (g != kNone && CountGrandchildren(g, c, &counts)) {
      const int n = CountOf(counts, edge_of_[c]);
      sum += GrandchildLogRatio(edge_of_[g], edge_of_[c], n, n + 1);
    }
    if (pairs_[c].first_child != kNone && !Crowded(c) &&
        CountGrandchildren(p, c, &counts)) {
      auto& mine = scratch.grand_mine;
      mine.clear();
      CountChildren(c, kNone, &mine);
      for (const auto& [e, k] : mine) {
        const int n = CountOf(counts, e);
        sum += GrandchildLogRatio(edge_of_[p], e, n, n + k);
      }
    }
    return sum;
  }

  // A call with more children than the timeline scores (a session that
  // encloses a whole capture), and its parent, get no grandchild term:
  // walking those grandchildren would make the passes quadratic.
  bool Crowded(uint32_t g) const {
    return pairs_[g].children > kTimelineMaxChildren;
  }

  double LogDensity(uint64_t key, TimeNs delay) const {
    const int bin = scale_.Bin(delay);
    uint32_t k = gap_index_.Find(key);
    return k == FlatIndex::kMissing
               ? prior_log_[bin]
               : gap_boards_[static_cast<size_t>(k) * prior_log_.size() + bin];
  }

  double LogSetProbability(uint64_t context, uint64_t set) const {
    uint32_t bits = set_index_.Find(set);
    if (bits == FlatIndex::kMissing) bits = unseen_index_.Find(context);
    // A context never seen at all: a single pseudo-observation.
    return bits == FlatIndex::kMissing ? std::log(0.5)
                                       : std::bit_cast<float>(bits);
  }

  double TimelineLogLikelihood(Scratch& scratch, uint32_t parent,
                               uint32_t extra, uint32_t exclude = kNone) {
    double sum = 0;
    auto gap = [&](uint64_t key, TimeNs delay) {
      if (key & kGiven) {
        sum -= LogDensity(key & ~kGiven, delay);
      } else {
        sum += LogDensity(key, delay);
      }
    };
    ForEachTerm(
        scratch, parent, extra, exclude, gap,
        [&](uint64_t context, uint64_t set) {
          sum += LogSetProbability(context, set);
        },
        gap);
    return sum;
  }

  // The parent's own likelihood, cached until its children change.
  double CachedLogLikelihood(Scratch& scratch, uint32_t parent) {
    float& c = score_cache_[parent];
    if (std::isnan(c))
      c = static_cast<float>(TimelineLogLikelihood(scratch, parent, kNone));
    return c;
  }

  // A call's new parent, and the sibling it trades places with (kNone: it
  // simply moves).
  struct TimelineChoice {
    uint32_t parent = kNone;
    uint32_t swap = kNone;
    bool group = false;  // SwapGroups(child, previous, parent)
  };
  // How many of the best-scoring candidates are tried for a swap.
  static constexpr int kSwapCandidates = 3;

  // The candidate whose timeline gains the most log-likelihood with the
  // call (plus the log of the paper's penalties; ties to the earliest
  // candidate). Then swaps: two concurrent calls of one edge, each on the
  // other's parent, are a local optimum for single moves (taking either
  // away leaves a parent one child short, with an unlikely timeline), so
  // for the best few candidates R and each child d of R on the call's
  // edge that could have had the call's previous parent, the trade (the
  // call to R, d to the previous parent) is scored as a whole and taken
  // when it gains more than any single move.
  TimelineChoice ChooseByTimeline(Scratch& scratch, uint32_t child,
                                  uint32_t previous) {
    const Pair& c = pairs_[child];
    TimelineChoice choice;
    double best = -std::numeric_limits<double>::infinity();
    uint32_t top[kSwapCandidates];
    double top_gain[kSwapCandidates];
    std::fill(top, top + kSwapCandidates, kNone);
    std::fill(top_gain, top_gain + kSwapCandidates,
              -std::numeric_limits<double>::infinity());
    for (uint32_t k = c.cand_begin; k < c.cand_end; ++k) {
      uint32_t pi = cands_[k];
      if (WouldCycle(*table_, child, pi)) continue;
      const Pair& p = pairs_[pi];
      double gain = TimelineLogLikelihood(scratch, pi, child) -
                    CachedLogLikelihood(scratch, pi) +
                    penalties_.Log(*table_, p, c) +
                    GrandchildGain(scratch, child, pi) + FanInGain(child, pi) +
                    IdGain(child, pi);
      if (choice.parent == kNone || gain > best ||
          (gain == best && p.call < pairs_[choice.parent].call)) {
        best = gain;
        choice.parent = pi;
      }
      for (int i = 0; i < kSwapCandidates; ++i) {
        if (gain > top_gain[i]) {
          std::copy_backward(top + i, top + kSwapCandidates - 1,
                             top + kSwapCandidates);
          std::copy_backward(top_gain + i, top_gain + kSwapCandidates - 1,
                             top_gain + kSwapCandidates);
          top[i] = pi;
          top_gain[i] = gain;
          break;
        }
      }
    }
    if (previous == kNone) return choice;
    const Pair& prev = pairs_[previous];
    // Fan-in: when the two parents' groups were complete (each trade moves
    // a neighbour's call to the other one's group).
    const bool fanin = !fanin_.empty();
    const TimeNs t_prev = fanin ? MemberTrigger(previous) : kNoTrigger;
    for (uint32_t r : top) {
      if (r == kNone || r == previous) continue;
      const TimeNs t_r = fanin ? MemberTrigger(r) : kNoTrigger;
      for (uint32_t d = pairs_[r].first_child; d != kNone;
           d = pairs_[d].next_sibling) {
        if (edge_of_[d] != edge_of_[child]) continue;
        const Pair& dp = pairs_[d];
        if (!IsCandidate(d, previous) || WouldCycle(*table_, d, previous)) {
          continue;
        }
        const double gain = TimelineLogLikelihood(scratch, r, child, d) -
                            CachedLogLikelihood(scratch, r) +
                            TimelineLogLikelihood(scratch, previous, d) -
                            CachedLogLikelihood(scratch, previous) +
                            penalties_.Log(*table_, pairs_[r], c, d) +
                            penalties_.Log(*table_, prev, dp) -
                            penalties_.Log(*table_, pairs_[r], dp, d) +
                            GrandchildGain(scratch, child, r) -
                            GrandchildGain(scratch, d, r) +
                            GrandchildGain(scratch, d, previous) +
                            FanInTerm(child, edge_of_[r], t_r, d, t_prev) -
                            FanInTerm(d, edge_of_[r], t_r) +
                            FanInTerm(d, edge_of_[previous], t_prev, child, t_r) +
                            IdGain(child, r) - IdGain(d, r) +
                            IdGain(d, previous);
        if (gain > best) {
          best = gain;
          choice = {r, d};
        }
      }
    }
    if (!IsChained(edge_of_[previous], edge_of_[child])) return choice;
    for (uint32_t r : top) {
      if (r == kNone || r == previous) continue;
      const double gain = GroupSwapGain(scratch, child, previous, r);
      if (gain > best) {
        best = gain;
        choice = {r, kNone, true};
      }
    }
    return choice;
  }

  // Whether p is among c's candidate parents.
  bool IsCandidate(uint32_t c, uint32_t p) const {
    const Pair& x = pairs_[c];
    return std::find(cands_.begin() + x.cand_begin, cands_.begin() + x.cand_end,
                     p) != cands_.begin() + x.cand_end;
  }

  // Group swaps, beyond the paper. Where a parent's children on an edge
  // are scored as a chain (ChainBursts, ChainReturns), they hold together:
  // an event loop that answers a request's three parts within
  // microseconds of each other keeps the parts of one request one group
  // under every assignment the passes reach. What can still be wrong is
  // which parent holds which group (wrongly placed parts have a sibling
  // returning as close to them as rightly placed ones do). No single move
  // or trade of two calls can fix that: taking one part of a group away
  // breaks two chains at once.
  // So a call on a chained edge also tries trading its whole group (its
  // previous parent's children on its edge, and itself) for the group a
  // candidate has on that edge, scored as a whole: both parents'
  // timelines, their penalties and the grandchild terms around them. On
  // unchained edges (every maketrace sample) nothing changes.
  bool IsChained(uint32_t parent_edge, uint32_t child_edge) const {
    const uint8_t bits = chains_[parent_edge];
    return ((bits & kCallChainBit) != 0 &&
            chain_index_.Find(GapKey(parent_edge, kBurst, child_edge)) !=
                FlatIndex::kMissing) ||
           ((bits & kReturnChainBit) != 0 &&
            chain_index_.Find(GapKey(parent_edge, kReturnChain, child_edge)) !=
                FlatIndex::kMissing);
  }

  // The paper's penalties of all of p's children, each against the
  // siblings that started before it (as the greedy pass gives them, in
  // call order).
  double ChildrenPenalty(Scratch& scratch, uint32_t p) {
    if (!penalties_.Any()) return 0;
    auto& kids = scratch.group;
    kids.clear();
    for (uint32_t c = pairs_[p].first_child; c != kNone;
         c = pairs_[c].next_sibling) {
      kids.push_back(c);
    }
    std::sort(kids.begin(), kids.end());
    double sum = 0;
    for (size_t i = 0; i < kids.size(); ++i) {
      sum += penalties_.LogAmong(*table_, kids.data(), i, pairs_[kids[i]]);
    }
    return sum;
  }

  // The grandchild terms of the calls whose grandchildren a group swap
  // between p and r moves: p and r, and their parents.
  void GroupSwapGrandparents(uint32_t p, uint32_t r,
                             std::array<uint32_t, 4>* gs) const {
    *gs = {p, r, pairs_[p].parent, pairs_[r].parent};
    for (size_t i = 1; i < gs->size(); ++i) {
      for (size_t j = 0; j < i; ++j) {
        if ((*gs)[i] == (*gs)[j]) (*gs)[i] = kNone;
      }
    }
  }

  // Moves child (detached) and previous's children on its edge to r, and
  // r's children on that edge to previous. False, with nothing moved, when
  // a call would go to a parent that is not its candidate, or a cycle
  // would close.
  // `starts`, if given: the first call of each group moved (the one that
  // was at previous, with child; the one that was at r, -1 if empty).
  // (Its lists live in the thread's scratch: it runs for every group swap
  // tried, so it must not allocate.)
  bool SwapGroups(Scratch& scratch, uint32_t child, uint32_t previous,
                  uint32_t r, std::pair<TimeNs, TimeNs>* starts = nullptr) {
    const uint32_t e = edge_of_[child];
    auto size_it = group_size_.find(PairKey(edge_of_[previous], e));
    const size_t size = size_it == group_size_.end() ? 0 : size_it->second;
    std::vector<uint32_t>& from_p = scratch.from_p;
    std::vector<uint32_t>& from_r = scratch.from_r;
    GroupOf(previous, e, child, size, &scratch.all, &from_p);
    GroupOf(r, e, kNone, size, &scratch.all, &from_r);
    for (uint32_t c : from_p) {
      if (!IsCandidate(c, r) || WouldCycle(*table_, c, r)) return false;
    }
    for (uint32_t c : from_r) {
      if (!IsCandidate(c, previous) || WouldCycle(*table_, c, previous)) {
        return false;
      }
    }
    if (starts != nullptr) {
      *starts = {pairs_[child].call, -1};
      for (uint32_t c : from_p) {
        starts->first = std::min(starts->first, pairs_[c].call);
      }
      for (uint32_t c : from_r) {
        if (starts->second < 0 || pairs_[c].call < starts->second) {
          starts->second = pairs_[c].call;
        }
      }
    }
    for (uint32_t c : from_p) Detach(c);
    for (uint32_t c : from_r) Detach(c);
    for (uint32_t c : from_r) Attach(c, previous);
    for (uint32_t c : from_p) Attach(c, r);
    Attach(child, r);
    if (WouldCycle(*table_, previous, pairs_[previous].parent) ||
        WouldCycle(*table_, r, pairs_[r].parent)) {
      Detach(child);
      for (uint32_t c : from_p) Detach(c);
      for (uint32_t c : from_r) Detach(c);
      for (uint32_t c : from_r) Attach(c, r);
      for (uint32_t c : from_p) Attach(c, previous);
      return false;
    }
    return true;
  }

  // The group that p's children on edge e form (with `extra`, detached,
  // counted among them; it is not listed): all of them when they are no
  // more than `size` (the usual group on the edge, see LearnGroupOrder),
  // otherwise the `size` consecutive ones in return order, holding
  // `extra` if given, that return closest together (ties to the first).
  // `all` is working space.
  void GroupOf(uint32_t p, uint32_t e, uint32_t extra, size_t size,
               std::vector<uint32_t>* all_space,
               std::vector<uint32_t>* out) const {
    std::vector<uint32_t>& all = *all_space;
    all.clear();
    for (uint32_t c = pairs_[p].first_child; c != kNone;
         c = pairs_[c].next_sibling) {
      if (edge_of_[c] == e) all.push_back(c);
    }
    if (extra != kNone) all.push_back(extra);
    out->clear();
    if (size == 0 || all.size() <= size) {
      for (uint32_t c : all) {
        if (c != extra) out->push_back(c);
      }
      return;
    }
    std::sort(all.begin(), all.end(), [&](uint32_t a, uint32_t b) {
      const Pair& x = pairs_[a];
      const Pair& y = pairs_[b];
      return x.ret != y.ret ? x.ret < y.ret : a < b;
    });
    size_t best = all.size();
    TimeNs best_span = 0;
    for (size_t i = 0; i + size <= all.size(); ++i) {
      if (extra != kNone && std::find(all.begin() + i, all.begin() + i + size,
                                      extra) == all.begin() + i + size) {
        continue;
      }
      const TimeNs span = pairs_[all[i + size - 1]].ret - pairs_[all[i]].ret;
      if (best == all.size() || span < best_span) {
        best = i;
        best_span = span;
      }
    }
    for (size_t i = best; i < best + size; ++i) {
      if (all[i] != extra) out->push_back(all[i]);
    }
  }

  // The sum of the terms a group swap changes, for both parents.
  double GroupTerms(Scratch& scratch, uint32_t previous, uint32_t r,
                    uint32_t child_edge, const std::array<uint32_t, 4>& gs) {
    double sum = GroupFanIn(previous, child_edge) + GroupFanIn(r, child_edge) +
                 CachedLogLikelihood(scratch, previous) +
                 CachedLogLikelihood(scratch, r) +
                 ChildrenPenalty(scratch, previous) +
                 ChildrenPenalty(scratch, r);
    for (uint32_t g : gs) {
      if (g == kNone || !CountGrandchildren(g, kNone, &scratch.grand)) {
        continue;
      }
      for (const auto& [edge, n] : scratch.grand) {
        sum += GrandchildLogRatio(edge_of_[g], edge, 0, n);
      }
    }
    return sum;
  }

  // What SwapGroups(child, previous, r) gains over child left detached
  // (the base of every gain ChooseByTimeline compares); -infinity when it
  // cannot be made. Made, scored and undone, restoring every child list in
  // its order and the two cached likelihoods.
  double GroupSwapGain(Scratch& scratch, uint32_t child, uint32_t previous,
                       uint32_t r) {
    std::array<uint32_t, 4> gs;
    GroupSwapGrandparents(previous, r, &gs);
    const float cached_p = score_cache_[previous];
    const float cached_r = score_cache_[r];
    const double before = GroupTerms(scratch, previous, r, edge_of_[child], gs);
    auto& saved_p = scratch.saved_p;
    auto& saved_r = scratch.saved_r;
    saved_p.clear();
    saved_r.clear();
    for (uint32_t c = pairs_[previous].first_child; c != kNone;
         c = pairs_[c].next_sibling) {
      saved_p.push_back(c);
    }
    for (uint32_t c = pairs_[r].first_child; c != kNone;
         c = pairs_[c].next_sibling) {
      saved_r.push_back(c);
    }
    std::pair<TimeNs, TimeNs> starts;
    if (!SwapGroups(scratch, child, previous, r, &starts)) {
      score_cache_[previous] = cached_p;
      score_cache_[r] = cached_r;
      return -std::numeric_limits<double>::infinity();
    }
    double after = GroupTerms(scratch, previous, r, edge_of_[child], gs);
    // The shared-id terms of the calls that trade parents.
    after += IdGain(child, r);
    for (uint32_t c : saved_p) {
      if (edge_of_[c] == edge_of_[child]) {
        after += IdGain(c, r) - IdGain(c, previous);
      }
    }
    for (uint32_t c : saved_r) {
      if (edge_of_[c] == edge_of_[child]) {
        after += IdGain(c, previous) - IdGain(c, r);
      }
    }
    // The order of the two groups against the order of their parents'
    // arrivals: the groups trade places, so the swap turns kept order
    // into crossed or back, worth the learned log odds.
    if (edge_of_[previous] == edge_of_[r]) {
      auto it = group_order_.find(PairKey(edge_of_[previous], edge_of_[child]));
      const auto [start_p, start_r] = starts;
      if (it != group_order_.end() && start_r >= 0 && start_p != start_r &&
          pairs_[previous].call != pairs_[r].call) {
        const bool kept_before =
            (pairs_[previous].call < pairs_[r].call) == (start_p < start_r);
        after += kept_before ? -it->second : it->second;
      }
    }
    // Undo: empty both lists and attach the saved ones back to front
    // (Attach prepends), which restores their order.
    Detach(child);
    while (pairs_[previous].first_child != kNone) {
      Detach(pairs_[previous].first_child);
    }
    while (pairs_[r].first_child != kNone) Detach(pairs_[r].first_child);
    for (auto it = saved_p.rbegin(); it != saved_p.rend(); ++it) {
      Attach(*it, previous);
    }
    for (auto it = saved_r.rbegin(); it != saved_r.rend(); ++it) {
      Attach(*it, r);
    }
    score_cache_[previous] = cached_p;
    score_cache_[r] = cached_r;
    return after - before;
  }

  bool AnyChained() const {
    return std::any_of(chains_.begin(), chains_.end(),
                       [](uint8_t bits) { return bits != 0; });
  }

  double smooth_bins_;
  int threads_;        // Params::threads
  bool return_chain_;  // Params::return_chain
  int chained_extra_passes_;
  PassTimings* timings_;  // not owned; null: no laps
  const BinScale& scale_;
  const Penalties& penalties_;
  CallTable* table_;
  Pairs& pairs_;
  const HugeVector<uint32_t>& cands_;
  std::vector<uint32_t> edge_of_;
  std::vector<bool> makes_calls_;
  std::vector<float> prior_log_;
  FlatIndex gap_index_, set_index_, unseen_index_;
  // Chained edges (ChooseChains): their keys (kBurst or kReturnChain), and
  // by parent edge which kinds it has (the scoring's shortcut).
  FlatIndex chain_index_;
  std::vector<uint8_t> chains_;
  size_t edge_count_ = 0;
  // Per gap key (gap_index_), its log densities: one row of the scale's
  // bins each, rows end to end (one memory access per lookup).
  std::vector<float> gap_boards_;
  std::vector<float> score_cache_;
  std::vector<Scratch> scratch_;  // by part
  // Grandchild terms (LearnGrandchildCounts): per (edge of G, grandchild
  // edge) the offset of its log ratios in grand_log_.
  FlatIndex grand_index_;
  std::vector<float> grand_log_;
  // Group order (LearnGroupOrder): per PairKey(parent edge, child edge).
  std::unordered_map<uint64_t, float> group_order_;
  std::unordered_map<uint64_t, uint32_t> group_size_;
  // Fan-in order (LearnFanIn): consecutive calls of each edge, the last
  // arrival of each call's parent's group as the pass started, and the
  // learned log shares per child edge.
  std::vector<uint32_t> nb_prev_, nb_next_;
  std::vector<TimeNs> snap_trigger_;
  std::unordered_map<uint64_t, FanInOdds> fanin_;  // by PairKey
  // Shared ids (LearnSharedIds): per PairKey(parent edge, child edge) the
  // log odds of a child whose id is its parent's, and of one whose is not.
  std::unordered_map<uint64_t, std::pair<float, float>> shared_ids_;
  std::vector<uint8_t> waiting_members_;           // by member edge
};

}  // namespace

TimelineEdges NumberTimelineEdges(const CallTable& table) {
  return TimelineModel::NumberEdges(table);
}

void RunTimelinePasses(const Params& params, const BinScale& scale,
                       const Penalties& penalties, TimelineEdges&& edges,
                       const std::vector<std::vector<uint32_t>>& parts,
                       CallTable* table) {
  if (params.timeline_passes <= 0) return;
  TimelineModel model(params, scale, penalties, table);
  model.Run(params.timeline_passes, std::move(edges), parts);
}

}  // namespace bbprof::nesting
