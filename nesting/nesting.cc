#include "nesting/nesting.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <deque>
#include <limits>
#include <map>
#include <numeric>
#include <optional>
#include <string_view>
#include <tuple>
#include <unordered_map>

#include "base/progress.h"
#include "nesting/intervals.h"
#include "nesting/skew.h"
#include "trace/byte_stream.h"
#include "trace/pending_calls.h"
#include "trace/timestamp.h"

namespace bbprof::nesting {

namespace {

using trace::Kind;
using trace::NodeId;
using trace::TimeNs;

constexpr uint32_t kNone = std::numeric_limits<uint32_t>::max();
// Deepest causal chain we follow; a deeper one means a pathological trace
// and is reported rather than risking the stack.
constexpr int kMaxDepth = 512;

struct Pair {
  TimeNs call = 0;
  TimeNs ret = -1;  // -1 until matched
  NodeId caller = 0;
  NodeId callee = 0;
  uint32_t cand_begin = 0;
  uint32_t cand_end = 0;
  uint32_t parent = kNone;
  uint32_t first_child = kNone;
  uint32_t next_sibling = kNone;
  bool imputed = false;  // ret is assumed: the real return was lost
  // Children attached, saturating (see HasCrowdedCandidate). These two sit
  // before pathid in what would be padding, so a pair stays 56 bytes.
  uint16_t children = 0;
  uint64_t pathid = 0;  // hash of the ground-truth pathid (evaluation only)
};
static_assert(sizeof(Pair) == 56, "one Pair per call: keep it small");

// Scoreboard bins (5.1.1.2): histograms indexed by log_base(delta). The
// paper's 340 bins cover 1 ms to 2 hours; LAN RPCs take microseconds, so our
// range starts at 1 us (delays below it share the first bin) and, because a
// skew window admits parents that start after their child, negative delays
// get a mirrored range.
class BinScale {
 public:
  explicit BinScale(double base)
      : inv_log_base_(1.0 / std::log(base)) {
    constexpr double kMinNs = 1e3;              // 1 us
    constexpr double kMaxNs = 2.0 * 3600 * 1e9;  // 2 hours
    positive_bins_ = 1 + static_cast<int>(std::ceil(std::log(kMaxNs / kMinNs) *
                                                    inv_log_base_));
    // lower_[k]: the smallest magnitude in positive bin k >= 1.
    lower_.resize(static_cast<size_t>(positive_bins_) + 2);
    for (int k = 1; k <= positive_bins_ + 1; ++k) {
      lower_[k] = kMinNs * std::exp((k - 1) / inv_log_base_);
    }
    // cell_first_bin_[e * 256 + j]: the bin of the cell's smallest
    // magnitude, 2^e * (1 + j / 256) us.
    cell_first_bin_.resize(static_cast<size_t>(kCellExponents) * kCellsPerOctave);
    int k = 1;  // cells ascend, so their first bins do too
    for (int e = 0; e < kCellExponents; ++e) {
      for (int j = 0; j < kCellsPerOctave; ++j) {
        const double v = kMinNs * std::ldexp(1.0 + static_cast<double>(j) / kCellsPerOctave, e);
        while (k < positive_bins_ && v >= lower_[k + 1]) ++k;
        cell_first_bin_[static_cast<size_t>(e) * kCellsPerOctave + j] = k;
      }
    }
  }
  int size() const { return 2 * positive_bins_ + 1; }
  // Width of a bin in nanoseconds (the first bin spans -1 us to 1 us).
  double Width(int bin) const {
    int k = bin >= positive_bins_ ? bin - positive_bins_ : positive_bins_ - bin;
    if (k == 0) return 2e3;
    double lo = 1e3 * std::exp((k - 1) / inv_log_base_);
    return lo * (std::exp(1.0 / inv_log_base_) - 1.0);
  }
  // Bin k holds magnitudes in [1 us * base^(k-1), 1 us * base^k). Called
  // tens of millions of times by the timeline passes, so instead of a log
  // it reads the magnitude's binary exponent and top 8 mantissa bits (a cell
  // 0.4% wide, narrower than a bin at the default base) off the double, takes
  // the first bin of that cell from a table, and steps up while the
  // magnitude reaches the next bin's lower bound (once at most, at bases of
  // 1.004 and more).
  int Bin(TimeNs delta) const {
    TimeNs mag = delta < 0 ? -delta : delta;
    int k;
    if (mag < 1000) {
      k = 0;
    } else {
      const double x = static_cast<double>(mag);
      const uint64_t bits = std::bit_cast<uint64_t>(x * 1e-3);  // in us, >= 1
      const int e = static_cast<int>(bits >> 52) - 1023;
      if (e >= kCellExponents) {
        k = positive_bins_;
      } else {
        k = cell_first_bin_[static_cast<size_t>(e) * kCellsPerOctave +
                            ((bits >> (52 - kCellBits)) & (kCellsPerOctave - 1))];
        while (k < positive_bins_ && x >= lower_[k + 1]) ++k;
        // (x * 1e-3 may round into the next cell, a bin boundary there.)
        while (k > 1 && x < lower_[k]) --k;
      }
    }
    return delta < 0 ? positive_bins_ - k : positive_bins_ + k;
  }

 private:
  double inv_log_base_;
  static constexpr int kCellBits = 8;
  static constexpr int kCellsPerOctave = 1 << kCellBits;
  static constexpr int kCellExponents = 34;  // 1 us * 2^34 > 2 hours
  int positive_bins_;
  std::vector<double> lower_;
  std::vector<int> cell_first_bin_;
};

// A Gaussian of sd bins (out to 3 sd) run over a histogram: the scoreboards'
// optional smoothing (7.5.6) and the timeline densities' (FindNestedPairs).
class GaussianSmoother {
 public:
  explicit GaussianSmoother(double sd)
      : radius_(static_cast<int>(std::ceil(3 * sd))), kernel_(2 * radius_ + 1) {
    for (int i = -radius_; i <= radius_; ++i) {
      kernel_[i + radius_] = std::exp(-0.5 * (i / sd) * (i / sd));
      sum_ += kernel_[i + radius_];
    }
  }
  // The sum of the kernel's weights (dividing by it keeps a histogram's mass).
  double sum() const { return sum_; }
  // out = h smoothed, every contribution divided by `divisor`.
  void Apply(const std::vector<double>& h, std::vector<double>& out,
             double divisor) const {
    const int size = static_cast<int>(h.size());
    out.assign(h.size(), 0.0);
    for (int b = 0; b < size; ++b) {
      if (h[b] == 0) continue;
      for (int i = -radius_; i <= radius_; ++i) {
        int t = b + i;
        if (t >= 0 && t < size) out[t] += h[b] * kernel_[i + radius_] / divisor;
      }
    }
  }

 private:
  int radius_;
  std::vector<double> kernel_;
  double sum_ = 0;
};

// A read-only map from 64-bit keys to small values, built once per
// timeline pass and looked up tens of millions of times: open addressing
// with linear probing in one array, so a lookup is one or two cache lines
// where std::unordered_map chases a pointer per lookup (9% of the passes'
// time on the parallelism-30 sample).
class FlatIndex {
 public:
  static constexpr uint32_t kMissing = 0xFFFFFFFFu;
  void Build(const std::vector<std::pair<uint64_t, uint32_t>>& items) {
    size_t cap = 16;
    while (cap < 2 * items.size()) cap *= 2;
    mask_ = cap - 1;
    slots_.assign(cap, Slot{0, kMissing});
    for (const auto& [k, v] : items) {
      size_t i = Hash(k) & mask_;
      while (slots_[i].value != kMissing) i = (i + 1) & mask_;
      slots_[i] = {k, v};
    }
  }
  uint32_t Find(uint64_t key) const {
    for (size_t i = Hash(key) & mask_;; i = (i + 1) & mask_) {
      const Slot& s = slots_[i];
      if (s.value == kMissing) return kMissing;
      if (s.key == key) return s.value;
    }
  }

 private:
  struct Slot {
    uint64_t key;
    uint32_t value;
  };
  static size_t Hash(uint64_t k) {
    return static_cast<size_t>((k * 0x9E3779B97F4A7C15ULL) >> 17);
  }
  size_t mask_ = 0;
  std::vector<Slot> slots_{Slot{0, kMissing}};  // empty: value kMissing
};

class Engine {
 public:
  Engine(trace::TraceReader& reader, const Params& params,
         CallLabels* labels = nullptr)
      : reader_(reader), params_(params), scale_(params.bin_base), labels_(labels) {
    any_penalty_ = params.penalty_overlap != 0 || params.penalty_same != 0 ||
                   params.penalty_generic != 0;
    for (int n = 0; n < 64; ++n) log1p_.push_back(std::log(1.0 + n));
  }

  Result<NestingResult> Run() {
    BBPROF_RETURN_IF_ERROR(FindCallPairs());
    if (params_.use_pathids && !any_pathid_) {
      return Status::Error(reader_.path() +
                           ": no CALL has a pathid; evaluation needs a trace "
                           "with ground truth (from maketrace, or capture "
                           "--truth-header)");
    }
    FoldExternalClients();
    KeyCallees();
    if (params_.impute_lost_returns) ImputeLostReturns();
    // Early returns (skew window) and assumed ones joined ret_order_ out of
    // return-time order: restore the order the candidate sweep relies on.
    auto by_return = [&](uint32_t a, uint32_t b) {
      return pairs_[a].ret < pairs_[b].ret;
    };
    if (!std::is_sorted(ret_order_.begin(), ret_order_.end(), by_return)) {
      std::stable_sort(ret_order_.begin(), ret_order_.end(), by_return);
    }
    if (params_.skew_auto) {
      EstimateSkew();
      // Windows mean some call misses every call that could have caused
      // it: skew, or an asynchronous server. Offsets tell the two apart.
      if (!edge_windows_.empty()) CorrectClocks();
    }
    FindCandidates();
    ScoreNestings();
    FindNestedPairs();
    RestoreObservedTimes();
    NestingResult result;
    result.params = params_;
    result.skew = skew_;
    result.clock_offsets = clock_offsets_;
    BBPROF_RETURN_IF_ERROR(FindCallPaths(&result.patterns));
    result.input = stats_;
    for (const std::string& m : reader_.meta()) {
      if (result.input.meta.size() == kMaxInputMeta) break;
      result.input.meta.push_back(m.substr(0, kMaxInputMetaChars));
    }
    return result;
  }

  void FillDetails(DetailedResult* d) const {
    d->calls.resize(pairs_.size());
    for (size_t i = 0; i < pairs_.size(); ++i) {
      d->calls[i].matched = pairs_[i].ret >= 0;
      d->calls[i].imputed = pairs_[i].imputed;
      d->calls[i].parent = pairs_[i].parent;
      d->calls[i].root_pattern = root_pattern_[i];
      d->calls[i].call_ns = pairs_[i].call;
      d->calls[i].ret_ns = pairs_[i].ret;
      d->calls[i].caller = pairs_[i].caller;
      d->calls[i].callee = pairs_[i].callee;
      d->calls[i].pathid = pairs_[i].pathid;
    }
    for (const auto& p : d->result.patterns) d->pattern_signatures.push_back(p.signature);
    d->node_names = names_;
    if (labels_ != nullptr) {
      labels_->op_names.assign(op_names_.begin(), op_names_.end());
      labels_->ops.resize(pairs_.size());
      for (uint32_t i = 0; i < pairs_.size(); ++i) labels_->ops[i] = OpOf(i);
    }
  }

 private:
  // Step 1 (5.1.1.1): match returns to calls by (sender, receiver, callid);
  // where callids are absent or repeat, each return takes the earliest
  // unmatched call with the same key (FIFO). Pairs are kept in call order;
  // ret_order_ records the order in which they returned.
  //
  // Under a skew window w (7.5.6) a return stamped by a slow clock can come
  // before its own call: such a return waits up to w for a call with its key
  // instead of being dropped, and the pair keeps the observed (negative)
  // latency. Without this, every call faster than the skew would be lost
  // with its return, and its subtree with it.
  Status FindCallPairs() {
    // Calls waiting for their return, keyed by trace::PendingCallKey (a
    // numeric callid of a binary trace as its number, any other as text),
    // bounded by Params::max_pending_calls: an evicted call stays in pairs_
    // unmatched, like one whose return was lost (trace/pending_calls.h).
    trace::PendingCalls<uint32_t> open(params_.max_pending_calls);
    // Returns waiting for their call (their times, by key), bounded the
    // same way: one evicted past the limit counts as unmatched.
    trace::PendingCalls<TimeNs> early(params_.max_pending_calls);
    // Each of two clocks may be up to w off, so a return can precede its
    // call by up to 2w.
    const TimeNs w =
        2 * (params_.skew_auto ? kAutoSkewCap : params_.skew_window);
    // Drops early returns older than `now - w`: no call can claim them.
    auto expire_early = [&](TimeNs now) {
      TimeNs oldest;
      while (early.Oldest(&oldest) && oldest < now - w) {
        early.PopOldest();
        ++stats_.unmatched_returns;
      }
    };
    Progress progress("nest: reading", trace::FileSizeOrZero(reader_.path()),
                      false);
    trace::Record rec;
    bool first = true;
    TimeNs first_ts = 0, last_ts = 0;
    std::string key;
    while (reader_.Next(rec)) {
      ++stats_.messages;
      if (first) {
        first_ts = rec.ts_ns;
        first = false;
      }
      last_ts = rec.ts_ns;
      progress.Update(reader_.raw_bytes_read());
      if (rec.kind == Kind::kMessage) {
        ++stats_.free_messages;
        continue;
      }
      if (pairs_.size() >= kNone - 1) {
        return Status::Error(reader_.path() +
                             ": more than 4 billion calls; split the trace");
      }
      if (rec.kind == Kind::kCall) {
        trace::PendingCallKey(rec.sender, rec.receiver, rec, &key);
        Pair p;
        p.call = rec.ts_ns;
        p.caller = rec.sender;
        p.callee = rec.receiver;
        if (const uint32_t op = InternOp(rec.op); op != 0 || !op_of_.empty()) {
          op_of_.resize(pairs_.size());  // this call's index
          op_of_.push_back(op);
        }
        // A call without a pathid (in a real capture: one whose protocol
        // carries no request id, as Redis) keeps pathid 0: no ground truth.
        if (params_.use_pathids &&
            (!rec.pathid.empty() || rec.pathid_is_number)) {
          p.pathid = (rec.pathid_is_number
                          ? rec.pathid_number * 0x9E3779B97F4A7C15ULL
                          : std::hash<std::string_view>()(rec.pathid)) |
                     1;
          any_pathid_ = true;
        }
        if (labels_ != nullptr) KeepLabels(rec);
        if (w > 0 && early.size() > 0) {
          expire_early(rec.ts_ns);
          if (early.Take(key, &p.ret)) {
            ret_order_.push_back(static_cast<uint32_t>(pairs_.size()));
            pairs_.push_back(p);
            continue;
          }
        }
        uint32_t evicted;
        open.Add(key, static_cast<uint32_t>(pairs_.size()), &evicted);
        pairs_.push_back(p);
      } else {
        // A return travels callee -> caller.
        trace::PendingCallKey(rec.receiver, rec.sender, rec, &key);
        uint32_t idx;
        if (!open.Take(key, &idx)) {
          if (w > 0) {
            expire_early(rec.ts_ns);
            TimeNs dropped;
            if (early.Add(key, rec.ts_ns, &dropped)) ++stats_.unmatched_returns;
          } else {
            ++stats_.unmatched_returns;
          }
          continue;
        }
        pairs_[idx].ret = rec.ts_ns;
        // A RET carries its CALL's op or none; a CALL without one takes it.
        if (OpOf(idx) == 0 && !rec.op.empty()) {
          op_of_.resize(pairs_.size());
          op_of_[idx] = InternOp(rec.op);
        }
        ret_order_.push_back(idx);
      }
    }
    progress.Finish();
    if (!reader_.status().ok()) return reader_.status();
    stats_.unmatched_returns += early.size();
    stats_.path = reader_.path();
    stats_.bytes = reader_.raw_bytes_read();
    if (std::optional<uint32_t> crc = reader_.raw_crc32()) {
      stats_.crc32 = *crc;
      stats_.has_crc32 = true;
    }
    stats_.call_pairs = ret_order_.size();
    stats_.unmatched_calls = pairs_.size() - ret_order_.size();
    stats_.pending_calls_evicted = open.evictions();
    stats_.duration_s = trace::NsToSeconds(last_ts - first_ts);
    stats_.nodes = reader_.nodes().size();
    stats_.node_names_folded = reader_.nodes().folded();
    names_.reserve(reader_.nodes().size());
    for (size_t i = 0; i < reader_.nodes().size(); ++i) {
      names_.emplace_back(reader_.nodes().Name(static_cast<NodeId>(i)));
    }
    return Status::Ok();
  }

  // A call's callid, for a per-request export. Its op needs nothing here:
  // every call's op is interned already (InternOp), and FillDetails hands
  // those ids over.
  void KeepLabels(const trace::Record& rec) {
    labels_->callids.push_back(rec.callid_is_number
                                   ? std::to_string(rec.callid_number)
                                   : std::string(rec.callid));
  }

  uint32_t InternOp(std::string_view op) {
    if (op.empty()) return 0;
    auto it = op_ids_.find(op);
    if (it != op_ids_.end()) return it->second;
    op_names_.emplace_back(op);
    const auto id = static_cast<uint32_t>(op_names_.size() - 1);
    op_ids_.emplace(op_names_.back(), id);
    return id;
  }

  // Beyond the paper: external clients fold into groups (client_folding.h),
  // once calls are paired, since callids are per caller.
  void FoldExternalClients() {
    std::vector<bool> calls(names_.size(), false), called(names_.size(), false);
    for (const Pair& p : pairs_) {
      calls[p.caller] = true;
      called[p.callee] = true;
    }
    const std::vector<uint32_t> to =
        FoldClients(calls, called, params_.clients, &names_);
    for (Pair& p : pairs_) p.caller = to[p.caller];
  }

  // The node a call's callee is keyed as in the scoreboards and timeline
  // edges: the node itself, or with Params::op_keys the pair (node, op) as
  // a node id of its own (numbered after the real nodes, within the 21 bits
  // a scoreboard key gives each node; past them, the node alone).
  void KeyCallees() {
    if (!params_.op_keys || op_of_.empty()) return;  // keyed by node alone
    key_callee_.resize(pairs_.size());
    std::unordered_map<uint64_t, NodeId> ids;
    auto next = static_cast<NodeId>(names_.size());
    for (uint32_t i = 0; i < pairs_.size(); ++i) {
      const Pair& p = pairs_[i];
      key_callee_[i] = p.callee;
      if (OpOf(i) == 0) continue;
      auto [it, inserted] =
          ids.try_emplace(uint64_t{p.callee} << 32 | OpOf(i), next);
      if (inserted) {
        if (next >= kMaxKeyedNode) {
          ids.erase(it);
          continue;
        }
        ++next;
      }
      key_callee_[i] = it->second;
    }
  }
  static constexpr NodeId kMaxKeyedNode = NodeId{1} << 21;
  NodeId KeyedCallee(uint32_t i) const {
    return key_callee_.empty() ? pairs_[i].callee : key_callee_[i];
  }
  // A call's op id (0: none). op_of_ stays empty until the first op, so a
  // trace without ops costs nothing, and may end short of pairs_.
  uint32_t OpOf(uint32_t i) const { return i < op_of_.size() ? op_of_[i] : 0; }

  // The scoreboard of child call `child` under candidate parent `parent`:
  // (A, B, C) of 5.1.1.2, B and C keyed with their ops (KeyCallees).
  uint64_t BoardKey(uint32_t parent, uint32_t child) const {
    return TripleKey(pairs_[parent].caller, KeyedCallee(parent),
                     KeyedCallee(child));
  }

  // Beyond the paper: a call without a return (its return lost to the
  // sniffer, or still in flight when the capture ended) gets an assumed
  // return at its edge's 99th-percentile latency, so that it stays a
  // candidate parent for the calls it caused. Dropping it (the paper's
  // rule) leaves its children without their true parent, and they are
  // nested under a concurrent call of the same node, making two instances
  // wrong. Its latency is unknown: it is left out of latency statistics.
  // Edges with no matched call keep their calls unmatched.
  void ImputeLostReturns() {
    if (stats_.unmatched_calls == 0) return;
    std::unordered_map<uint64_t, std::vector<TimeNs>> latencies;
    for (const Pair& p : pairs_) {
      if (p.ret < 0) continue;
      latencies[static_cast<uint64_t>(p.caller) << 32 | p.callee].push_back(
          std::max<TimeNs>(0, p.ret - p.call));
    }
    std::unordered_map<uint64_t, TimeNs> p99;
    for (auto& [edge, v] : latencies) {
      size_t k = v.size() - 1 - (v.size() - 1) / 100;
      std::nth_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(k), v.end());
      p99[edge] = v[k];
    }
    for (uint32_t i = 0; i < pairs_.size(); ++i) {
      Pair& p = pairs_[i];
      if (p.ret >= 0) continue;
      auto it = p99.find(static_cast<uint64_t>(p.caller) << 32 | p.callee);
      if (it == p99.end()) continue;
      p.ret = p.call + it->second;
      p.imputed = true;
      ret_order_.push_back(i);  // out of order: Run() sorts ret_order_
    }
  }

  // Walks the matched pairs in return order and hands each one, with every
  // call into its caller that is in flight or returned at most w ago (and
  // started by w after its return), to visit(child, calls). A call event
  // adds a pair to its callee's active list, a return event takes it out.
  // Only calls that did return can be parents (a call whose return was lost
  // would otherwise stay "open" forever and become a candidate for every
  // later call into its node).
  template <class Visit>
  void SweepEnclosing(TimeNs w, Visit&& visit) {
    const size_t n_nodes = names_.size();
    std::vector<std::vector<uint32_t>> active(n_nodes);
    // Recently returned pairs per node, kept for the skew window.
    std::vector<std::deque<uint32_t>> recent(n_nodes);
    std::vector<uint32_t> calls;
    size_t ci = 0;  // next pair (in call order) to start
    auto in_call_order = [&](size_t k) {
      return call_order_.empty() ? static_cast<uint32_t>(k) : call_order_[k];
    };
    for (uint32_t child : ret_order_) {
      const Pair& c = pairs_[child];
      // With a skew window, a parent that starts after its child (by up to
      // w) must already be active when the child returns: start calls up
      // to w ahead of the return being processed.
      const TimeNs horizon = c.ret + w;
      for (; ci < pairs_.size() && pairs_[in_call_order(ci)].call <= horizon;
           ++ci) {
        const uint32_t k = in_call_order(ci);
        if (pairs_[k].ret >= 0) active[pairs_[k].callee].push_back(k);
      }
      // The child itself leaves its callee's active list.
      auto& own = active[c.callee];
      auto pos = std::find(own.begin(), own.end(), child);
      if (pos != own.end()) own.erase(pos);
      if (w > 0) {
        auto& rq = recent[c.callee];
        while (!rq.empty() && pairs_[rq.front()].ret < c.ret - w)
          rq.pop_front();
        rq.push_back(child);
      }
      calls.clear();
      for (uint32_t p : active[c.caller]) {
        if (p != child) calls.push_back(p);
      }
      if (w > 0) {
        auto& rq = recent[c.caller];
        while (!rq.empty() && pairs_[rq.front()].ret < c.ret - w)
          rq.pop_front();
        for (uint32_t p : rq) {
          if (p != child) calls.push_back(p);
        }
      }
      visit(child, calls);
    }
  }

  static uint64_t EdgeKey(const Pair& p) {
    return static_cast<uint64_t>(p.caller) << 32 | p.callee;
  }

  // Section 7.5.6 tolerates skew with one window the user must choose;
  // here each edge B->C gets its own, from the trace. For every call B->C
  // the sweep finds the call into B that misses enclosing it by the least
  // (how much later it starts, how much earlier it ends; zero if it
  // encloses it). Without skew every caused call is enclosed by its cause,
  // so nothing misses; a clock offset of d makes the children whose true
  // gap is below d miss by up to d, and ChooseSkewWindow reads d off those
  // misses, for the start and the end separately (the two involve different
  // pairs of clocks). Calls with no call into B within kAutoSkewCap (a
  // client's requests) are not counted, nor are ends measured with an
  // assumed return (ImputeLostReturns). Pathids are ignored, so
  // evaluation's "cheating" run gets the same windows.
  void EstimateSkew() {
    struct Needs {
      uint64_t children = 0, missed = 0;
      std::vector<TimeNs> start, end;
    };
    std::unordered_map<uint64_t, Needs> needs;
    SweepEnclosing(
        kAutoSkewCap, [&](uint32_t child, const std::vector<uint32_t>& calls) {
          const Pair& c = pairs_[child];
          TimeNs best_start = 0, best_end = 0, best = -1;
          for (uint32_t p : calls) {
            const Pair& pp = pairs_[p];
            const bool starts_before =
                pp.call < c.call || (pp.call == c.call && p < child);
            const TimeNs s =
                starts_before ? 0 : std::max<TimeNs>(1, pp.call - c.call);
            // An assumed return (the real one lost) says nothing of clocks.
            const TimeNs e = pp.imputed || c.imputed
                                 ? 0
                                 : std::max<TimeNs>(0, c.ret - pp.ret);
            if (s > kAutoSkewCap || e > kAutoSkewCap) continue;
            const TimeNs m = std::max(s, e);
            if (best < 0 || m < best ||
                (m == best && s + e < best_start + best_end)) {
              best = m;
              best_start = s;
              best_end = e;
            }
          }
          if (best < 0) return;
          Needs& n = needs[EdgeKey(c)];
          ++n.children;
          if (best == 0) return;
          ++n.missed;
          if (best_start > 0) n.start.push_back(best_start);
          if (best_end > 0) n.end.push_back(best_end);
        });
    TimeNs widest = 0;
    for (auto& [edge, n] : needs) {
      const TimeNs ws = ChooseSkewWindow(n.start, n.children);
      const TimeNs we = ChooseSkewWindow(n.end, n.children);
      if (ws == 0 && we == 0) continue;
      edge_windows_[edge] = {ws, we};
      widest = std::max({widest, ws, we});
      EdgeSkew e;
      e.caller = names_[static_cast<NodeId>(edge >> 32)];
      e.callee = names_[static_cast<NodeId>(edge & 0xFFFFFFFFu)];
      e.start_window_s = trace::NsToSeconds(ws);
      e.end_window_s = trace::NsToSeconds(we);
      e.children = n.children;
      e.missed = n.missed;
      skew_.push_back(std::move(e));
    }
    std::sort(
        skew_.begin(), skew_.end(), [](const EdgeSkew& a, const EdgeSkew& b) {
          return std::tie(a.caller, a.callee) < std::tie(b.caller, b.callee);
        });
    params_.skew_window = widest;
  }

  // Beyond section 7.5.6: the windows above admit a wrong parent anywhere
  // in their width, and an offset shift admits none. So when the trace
  // needs windows, a first assignment is made with them (the default model,
  // no pathids, so that evaluation's cheating run gets the same offsets), and
  // each edge's children, parents and latencies bound the offset between
  // its two clocks (SolveClockOffsets, nesting/skew.h). Every timestamp is
  // then moved back by its stamping node's offset (a call's start by the
  // caller's, its return by the callee's), the windows are worked out again
  // for what skew is left, and the parents are chosen afresh. Observed
  // times come back before paths are built (RestoreObservedTimes), so
  // latencies and call delays are reported as stamped.
  // Each round learns from the assignment the previous round's clocks
  // allowed, so a first assignment spoilt by wide windows (many requests in
  // flight) is mended by the next; rounds stop when no window is left or
  // the offsets stop moving.
  static constexpr int kClockRounds = 3;
  void CorrectClocks() {
    for (int round = 0; round < kClockRounds && !edge_windows_.empty();
         ++round) {
      if (!CorrectClocksOnce()) break;
    }
    for (size_t n = 0; n < clock_total_.offset.size(); ++n) {
      if (clock_total_.offset[n] != 0 || clock_total_.drift[n] != 0) {
        clock_offsets_.push_back({names_[n],
                                  trace::NsToSeconds(clock_total_.offset[n]),
                                  clock_total_.drift[n] * 1e6});
      }
    }
    std::sort(clock_offsets_.begin(), clock_offsets_.end(),
              [](const NodeClockOffset& a, const NodeClockOffset& b) {
                return a.node < b.node;
              });
  }

  // One round: returns whether any clock moved.
  bool CorrectClocksOnce() {
    const Params saved = params_;
    params_.use_pathids = false;
    // The clocks are preprocessing shared by every way of choosing parents:
    // the first assignment is the default model's (or more passes), so that
    // the baselines are compared after the same skew handling.
    params_.assign = Assign::kModel;
    params_.refine_passes =
        std::max(saved.refine_passes, Params().refine_passes);
    params_.timeline_passes =
        std::max(saved.timeline_passes, Params().timeline_passes);
    FindCandidates();
    ScoreNestings();
    FindNestedPairs();
    params_ = saved;
    std::unordered_map<uint64_t, EdgeClockEvidence> evidence;
    auto edge = [&](const Pair& p) -> EdgeClockEvidence& {
      EdgeClockEvidence& e = evidence[EdgeKey(p)];
      e.caller = p.caller;
      e.callee = p.callee;
      return e;
    };
    TimeNs t0 = std::numeric_limits<TimeNs>::max(),
           t1 = std::numeric_limits<TimeNs>::min();
    for (const Pair& c : pairs_) {
      if (c.ret < 0) continue;
      t0 = std::min(t0, c.call);
      t1 = std::max(t1, c.call);
      EdgeClockEvidence& ce = edge(c);
      if (!c.imputed) ce.latencies.push_back({c.call, c.ret - c.call});
      if (c.parent == kNone) continue;
      const Pair& p = pairs_[c.parent];
      edge(p).child_starts.push_back({c.call, c.call - p.call});
      // A child made after its parent returned (an asynchronous server)
      // says nothing about the order of the two returns.
      if (!c.imputed && !p.imputed && c.call <= p.ret) {
        ce.parent_ends.push_back({c.ret, p.ret - c.ret});
      }
    }
    std::vector<EdgeClockEvidence> edges;
    edges.reserve(evidence.size());
    for (auto& [key, e] : evidence) edges.push_back(std::move(e));
    std::sort(edges.begin(), edges.end(),
              [](const EdgeClockEvidence& a, const EdgeClockEvidence& b) {
                return std::tie(a.caller, a.callee) <
                       std::tie(b.caller, b.callee);
              });
    const ClockCorrection clocks =
        SolveClockOffsets(edges, names_.size(), t0, t1);
    ResetAssignment();
    if (!clocks.any())
      return false;  // no clock disagrees: the windows stand (asynchrony)
    if (observed_.empty()) {
      observed_.resize(pairs_.size());
      for (size_t i = 0; i < pairs_.size(); ++i)
        observed_[i] = {pairs_[i].call, pairs_[i].ret};
      clock_total_.t0 = clocks.t0;
      clock_total_.offset.assign(names_.size(), 0);
      clock_total_.drift.assign(names_.size(), 0.0);
    }
    for (size_t n = 0; n < names_.size(); ++n) {
      clock_total_.offset[n] +=
          clocks.Offset(static_cast<NodeId>(n), clock_total_.t0);
      clock_total_.drift[n] += clocks.drift[n];
    }
    for (size_t i = 0; i < pairs_.size(); ++i) {
      Pair& p = pairs_[i];
      p.call -= clocks.Offset(p.caller, p.call);
      if (p.ret >= 0) p.ret -= clocks.Offset(p.callee, p.ret);
    }
    call_order_.resize(pairs_.size());
    std::iota(call_order_.begin(), call_order_.end(), 0u);
    std::stable_sort(call_order_.begin(), call_order_.end(),
                     [&](uint32_t a, uint32_t b) {
                       return pairs_[a].call < pairs_[b].call;
                     });
    std::stable_sort(
        ret_order_.begin(), ret_order_.end(),
        [&](uint32_t a, uint32_t b) { return pairs_[a].ret < pairs_[b].ret; });
    edge_windows_.clear();
    skew_.clear();
    EstimateSkew();
    return true;
  }

  // Undoes a first assignment: candidates, scoreboards, parents.
  void ResetAssignment() {
    for (Pair& p : pairs_) {
      p.cand_begin = p.cand_end = 0;
      p.parent = p.first_child = p.next_sibling = kNone;
      p.children = 0;
    }
    cands_.clear();
    board_index_.clear();
    boards_.clear();
    board_flat_ = FlatIndex();
    score_cache_.clear();
  }

  // The timestamps as stamped, after CorrectClocks moved them.
  void RestoreObservedTimes() {
    if (observed_.empty()) return;
    for (size_t i = 0; i < pairs_.size(); ++i) {
      pairs_[i].call = observed_[i].first;
      pairs_[i].ret = observed_[i].second;
    }
    observed_.clear();
    observed_.shrink_to_fit();
  }

  // The (start, end) windows of a call's edge.
  std::pair<TimeNs, TimeNs> WindowsOf(const Pair& c) const {
    if (!params_.skew_auto) return {params_.skew_window, params_.skew_window};
    auto it = edge_windows_.find(EdgeKey(c));
    return it == edge_windows_.end() ? std::pair<TimeNs, TimeNs>{0, 0}
                                     : it->second;
  }

  // Step 2 (5.1.1.1): the candidate parents of a call B->C are the calls
  // into B that started before it and had not returned when it returned.
  // With a skew window (7.5.6) a parent may start up to the window after
  // its child and end up to the window before it.
  void FindCandidates() {
    uint64_t total_cands = 0, with_cands = 0;
    SweepEnclosing(
        params_.skew_window,
        [&](uint32_t child, const std::vector<uint32_t>& calls) {
          Pair& cm = pairs_[child];
          const Pair& c = cm;
          const auto [ws, we] = WindowsOf(c);
          cm.cand_begin = static_cast<uint32_t>(cands_.size());
          for (uint32_t p : calls) {
            const Pair& pp = pairs_[p];
            // The cheating run: a parent must share the child's path
            // instance (a child without ground truth may take any).
            if (params_.use_pathids && c.pathid != 0 && pp.pathid != c.pathid) {
              continue;
            }
            bool starts_before =
                pp.call < c.call || (pp.call == c.call && p < child);
            if (!starts_before && !(ws > 0 && pp.call <= c.call + ws)) continue;
            // Without skew, an active parent has not returned yet by
            // construction; with skew it may have returned up to we before.
            if (pp.ret < c.ret - we) continue;
            cands_.push_back(p);
          }
          // Keep candidates in call order so ties go to the earliest parent
          // (with clocks corrected, by corrected call time: pair indexes
          // are in the order the calls were stamped).
          if (!call_order_.empty()) {
            std::sort(cands_.begin() + cm.cand_begin, cands_.end(),
                      [&](uint32_t a, uint32_t b) {
                        return std::tie(pairs_[a].call, a) <
                               std::tie(pairs_[b].call, b);
                      });
          } else if (params_.skew_window > 0) {
            std::sort(cands_.begin() + cm.cand_begin, cands_.end());
          }
          cm.cand_end = static_cast<uint32_t>(cands_.size());
          if (cm.cand_end > cm.cand_begin) {
            ++with_cands;
            total_cands += cm.cand_end - cm.cand_begin;
          }
        });
    stats_.mean_parallelism =
        with_cands ? static_cast<double>(total_cands) / with_cands : 0.0;
  }

  uint64_t TripleKey(NodeId a, NodeId b, NodeId c) const {
    return (static_cast<uint64_t>(a) << 42) | (static_cast<uint64_t>(b) << 21) |
           static_cast<uint64_t>(c);
  }

  std::vector<double>& Board(uint64_t key) {
    auto [it, inserted] = board_index_.try_emplace(key, boards_.size());
    if (inserted) boards_.emplace_back(static_cast<size_t>(scale_.size()), 0.0);
    return boards_[it->second];
  }

  // Step 3 (5.1.1.2): every candidate nesting (A->B encloses B->C) adds
  // 1/|candidates| to the (A, B, C) histogram at the bin of the delay
  // between the two calls. Optionally each histogram is then smoothed with
  // a Gaussian (7.5.6).
  void ScoreNestings() {
    for (uint32_t child : ret_order_) {
      const Pair& c = pairs_[child];
      uint32_t n = c.cand_end - c.cand_begin;
      if (n == 0) continue;
      double weight = 1.0 / n;
      for (uint32_t k = c.cand_begin; k < c.cand_end; ++k) {
        const Pair& p = pairs_[cands_[k]];
        Board(BoardKey(cands_[k], child))[scale_.Bin(c.call - p.call)] +=
            weight;
      }
    }
    stats_.scoreboards = boards_.size();
    {
      std::vector<std::pair<uint64_t, uint32_t>> items;
      items.reserve(board_index_.size());
      for (const auto& [key, index] : board_index_) {
        items.emplace_back(key, static_cast<uint32_t>(index));
      }
      board_flat_.Build(items);
    }
    // Scores are densities: a bin's weight divided by its width. With log
    // bins a wide bin at a long delay collects the accidental nestings of a
    // whole stretch of time, while the true, short delay is spread over
    // narrow bins; compared raw, the accidental bin wins as soon as a node
    // has more than a few calls in flight. Per unit of delay the comparison
    // is fair at every scale.
    inv_width_.resize(static_cast<size_t>(scale_.size()));
    for (int b = 0; b < scale_.size(); ++b) inv_width_[b] = 1.0 / scale_.Width(b);
    if (params_.smooth_bins > 0) {
      const GaussianSmoother smoother(params_.smooth_bins);
      std::vector<double> out;
      for (auto& h : boards_) {
        smoother.Apply(h, out, 1.0);
        h.swap(out);
      }
    }
  }

  // Step 4 (5.1.1.3): each call takes the candidate with the highest score:
  // the scoreboard value at its delay, times the overlapping-child,
  // same-child and generic-child penalties, where c children already
  // assigned to that parent count as (1 + c)^-exponent. (The paper writes
  // c^-x; with c = 0 meaning "no penalty", the first overlapping sibling
  // would not be penalised at all, which is not what the penalty is for.)
  // Calls are assigned in the order they were made, so "already assigned"
  // means "earlier siblings". Ties go to the earliest parent.
  //
  // Beyond the paper: greedy assignment in call order judges a call only
  // against its earlier siblings, so a call taken by the wrong parent early
  // pushes that parent's true child elsewhere (the overlap penalty), and one
  // mistake becomes two. Refinement passes (coordinate descent on the same
  // score) take each call off its parent and choose again with all of every
  // candidate's other children known, which undoes many such swaps. One pass
  // (the default) cut instance false negatives on the maketrace samples
  // (multitier-normal 3.4% -> 2.2%, Children-parallel 9.4% -> 6.0%,
  // Children-d/cc 9.8% -> 6.6%, added-delay 3.9% -> 2.9%) for about 5% more
  // time; `--refine-passes 0` is the paper's rule. Then come the timeline
  // passes (see "Timeline scoring" below; `--timeline-passes 0` is off).
  void FindNestedPairs() {
    if (params_.assign == Assign::kFcfs) {
      // Candidates are in call order: the first one open when the call was
      // made is the oldest. Only if none was (a window admitted parents
      // that start later or had returned), the earliest candidate.
      for (uint32_t child = 0; child < pairs_.size(); ++child) {
        const Pair& c = pairs_[child];
        if (c.cand_end == c.cand_begin) continue;
        uint32_t pick = cands_[c.cand_begin];
        for (uint32_t k = c.cand_begin; k < c.cand_end; ++k) {
          const Pair& p = pairs_[cands_[k]];
          if (p.call <= c.call && p.ret >= c.call) {
            pick = cands_[k];
            break;
          }
        }
        Attach(child, pick);
      }
      return;
    }
    for (uint32_t child = 0; child < pairs_.size(); ++child) {
      Pair& c = pairs_[child];
      if (c.cand_end == c.cand_begin) continue;
      Attach(child, BestParent(child));
    }
    for (int pass = 0; pass < params_.refine_passes; ++pass) {
      for (uint32_t child = 0; child < pairs_.size(); ++child) {
        Pair& c = pairs_[child];
        if (c.cand_end - c.cand_begin < 2) continue;  // no choice
        // Detaching from a parent with thousands of children walks them all.
        if (HasCrowdedCandidate(child)) continue;
        Detach(child);
        Attach(child, BestParent(child));
      }
    }
    if (params_.timeline_passes > 0 && PrepareTimeline()) {
      for (int pass = 0; pass < params_.timeline_passes; ++pass) {
        LearnTimeline();
        for (uint32_t child = 0; child < pairs_.size(); ++child) {
          Pair& c = pairs_[child];
          if (c.cand_end - c.cand_begin < 2) continue;  // no choice
          if (HasCrowdedCandidate(child)) continue;
          const uint32_t previous = c.parent;
          Detach(child);
          const TimelineChoice choice = ChooseByTimeline(child, previous);
          if (choice.swap != kNone) {
            Detach(choice.swap);
            Attach(choice.swap, previous);
          }
          Attach(child, choice.parent);
        }
      }
    }
  }

  // The paper's penalties (5.1.1.3) for giving child c to parent p, as a
  // factor: (1 + n)^-exponent for the n siblings already there that
  // overlap c, that call the same node, and in all.
  double PenaltyFactor(const Pair& p, const Pair& c) const {
    const double log_penalty = LogPenalty(p, c);
    return log_penalty == 0 ? 1.0 : std::exp(log_penalty);
  }
  // The same, as a log: the timeline score is a sum of logs. The powers
  // come from tables (pow was a tenth of the timeline passes' time).
  // `exclude`: a child of p to leave out (kNone: none).
  // Only the kPenaltyScan most recently attached siblings are counted: a
  // parent with thousands of children (a session enclosing a whole
  // capture) would otherwise make every choice that considers it walk
  // them all, quadratic in the trace. Calls are attached in call order, so
  // those are the latest-starting siblings, the ones that can overlap the
  // call; the counts saturate, and so does the penalty.
  static constexpr int kPenaltyScan = 256;
  double LogPenalty(const Pair& p, const Pair& c, uint32_t exclude = kNone) const {
    if (!any_penalty_) return 0.0;
    int overlap = 0, same = 0, any = 0, scanned = 0;
    for (uint32_t s = p.first_child; s != kNone && scanned < kPenaltyScan;
         s = pairs_[s].next_sibling, ++scanned) {
      if (s == exclude) continue;
      const Pair& sib = pairs_[s];
      ++any;
      if (sib.callee == c.callee) ++same;
      if (sib.call < c.ret && c.call < sib.ret) ++overlap;
    }
    return -params_.penalty_overlap * Log1p(overlap) -
           params_.penalty_same * Log1p(same) -
           params_.penalty_generic * Log1p(any);
  }
  double Log1p(int n) const {
    return n < static_cast<int>(log1p_.size()) ? log1p_[n]
                                               : std::log(1.0 + n);
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
  static uint64_t GapKey(uint32_t parent_edge, uint32_t from, uint32_t to) {
    return (uint64_t{parent_edge} << (2 * kEdgeBits)) |
           (uint64_t{from} << kEdgeBits) | to;
  }
  static uint64_t Mix(uint64_t h) {  // splitmix64's finaliser
    h ^= h >> 30;
    h *= 0xBF58476D1CE4E5B9ULL;
    h ^= h >> 27;
    h *= 0x94D049BB133111EBULL;
    return h ^ (h >> 31);
  }

  // Numbers every (caller, callee) edge and marks the nodes that make
  // calls. False when there are too many edges for the gap keys (then the
  // timeline passes are skipped).
  bool PrepareTimeline() {
    std::unordered_map<uint64_t, uint32_t> ids;
    edge_of_.resize(pairs_.size());
    makes_calls_.assign(names_.size(), false);
    for (size_t i = 0; i < pairs_.size(); ++i) {
      const Pair& p = pairs_[i];
      auto [it, inserted] =
          ids.try_emplace(static_cast<uint64_t>(p.caller) << 32 |
                              KeyedCallee(static_cast<uint32_t>(i)),
                          static_cast<uint32_t>(ids.size()));
      if (ids.size() >= kAfterReturn) return false;
      edge_of_[i] = it->second;
      if (p.cand_end != p.cand_begin) makes_calls_[p.caller] = true;
    }
    const int bins = scale_.size();
    // A gap never seen in the assignment still has some density: one
    // pseudo-observation spread evenly over the bins.
    prior_log_.resize(static_cast<size_t>(bins));
    for (int b = 0; b < bins; ++b) {
      prior_log_[b] = static_cast<float>(std::log(inv_width_[b] / bins));
    }
    return true;
  }

  struct Kid {
    TimeNs call, ret;
    uint32_t edge;
    int anchor;  // index into the kids sorted by return; -1: the arrival
  };

  // Calls gap(key, delay) for each child, set(context, multiset) for each
  // anchor and tail(key, delay) for the return (unless it was imputed), on
  // the timeline of `parent` with its children plus `extra`, less `exclude`
  // (kNone: none).
  template <typename Gap, typename Set, typename Tail>
  void ForEachTerm(uint32_t parent, uint32_t extra, uint32_t exclude, Gap&& gap,
                   Set&& set, Tail&& tail) {
    const Pair& p = pairs_[parent];
    const uint32_t pe = edge_of_[parent];
    auto& kids = tl_kids_;
    kids.clear();
    auto& after = tl_after_;  // edges of the children called after P returned
    after.clear();
    auto add = [&](uint32_t s) {
      const Pair& c = pairs_[s];
      if (c.call > p.ret) {
        after.push_back(edge_of_[s]);
        gap(GapKey(pe, kAfterReturn, edge_of_[s]), c.call - p.ret);
      } else {
        kids.push_back({c.call, c.ret, edge_of_[s], -1});
      }
    };
    for (uint32_t s = p.first_child; s != kNone; s = pairs_[s].next_sibling) {
      if (s != exclude) add(s);
    }
    if (extra != kNone) add(extra);
    {
      // The multiset of edges called after the return, like an anchor's.
      std::sort(after.begin(), after.end());
      uint64_t h = Mix(GapKey(pe, kAfterReturn, kReturn) ^ 0x5E75ULL);
      for (uint32_t e : after) h = Mix(h ^ e);
      set(GapKey(pe, kAfterReturn, kReturn), h);
    }
    std::sort(kids.begin(), kids.end(), [](const Kid& a, const Kid& b) {
      return a.ret != b.ret ? a.ret < b.ret : a.call < b.call;
    });
    const int n = static_cast<int>(kids.size());
    auto& spawned = tl_spawned_;  // (anchor, child edge)
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
      if (k.anchor >= 0) {
        gap(GapKey(pe, kids[k.anchor].edge, k.edge), k.call - kids[k.anchor].ret);
      } else {
        gap(GapKey(pe, kArrival, k.edge), k.call - p.call);
      }
      spawned.emplace_back(k.anchor, k.edge);
    }
    std::sort(spawned.begin(), spawned.end());
    size_t s = 0;
    for (int a = -1; a < n; ++a) {
      const uint32_t from = a < 0 ? kArrival : kids[a].edge;
      uint64_t h = Mix(GapKey(pe, from, kReturn) ^ 0x5E75ULL);
      for (; s < spawned.size() && spawned[s].first == a; ++s) {
        h = Mix(h ^ spawned[s].second);
      }
      set(GapKey(pe, from, kReturn), h);
    }
    if (p.imputed) return;  // its return time is not known
    if (n == 0) {
      tail(GapKey(pe, kArrival, kReturn), p.ret - p.call);
    } else {
      tail(GapKey(pe, kids.back().edge, kReturn), p.ret - kids.back().ret);
    }
  }

  // Learns the gap densities and the spawn multiset frequencies from the
  // current assignment.
  void LearnTimeline() {
    std::unordered_map<uint64_t, uint32_t> gap_index;
    // Per multiset (its hash includes its context): the context, the count.
    std::unordered_map<uint64_t, std::pair<uint64_t, double>> set_count;
    std::unordered_map<uint64_t, double> set_total;
    gap_boards_.clear();
    std::vector<double> totals;
    std::vector<std::vector<double>> counts;
    auto add = [&](uint64_t key, TimeNs delay) {
      auto [it, inserted] =
          gap_index.try_emplace(key, static_cast<uint32_t>(counts.size()));
      if (inserted) {
        counts.emplace_back(static_cast<size_t>(scale_.size()), 0.0);
        totals.push_back(0);
      }
      counts[it->second][scale_.Bin(delay)] += 1;
      totals[it->second] += 1;
    };
    for (uint32_t i = 0; i < pairs_.size(); ++i) {
      const Pair& p = pairs_[i];
      if (p.ret < 0 || !makes_calls_[p.callee]) continue;
      ForEachTerm(
          i, kNone, kNone, add,
          [&](uint64_t context, uint64_t set) {
            auto& [set_context, count] = set_count[set];
            set_context = context;
            ++count;
            ++set_total[context];
          },
          add);
    }
    // Smooth each density a little (a bin is 5% of the delay; a few
    // thousand samples leave gaps between neighbouring bins) and turn it
    // into log density per nanosecond, with the prior's pseudo-observation.
    const GaussianSmoother smoother(std::max(1.0, params_.smooth_bins));
    const int bins = scale_.size();
    std::vector<double> smooth;
    gap_boards_.resize(counts.size());
    for (size_t k = 0; k < counts.size(); ++k) {
      smoother.Apply(counts[k], smooth, smoother.sum());
      auto& out = gap_boards_[k];
      out.resize(static_cast<size_t>(bins));
      for (int b = 0; b < bins; ++b) {
        out[b] = static_cast<float>(
            std::log((smooth[b] + 1.0 / bins) / (totals[k] + 1.0) * inv_width_[b]));
      }
    }
    std::vector<std::pair<uint64_t, uint32_t>> items(gap_index.begin(), gap_index.end());
    gap_index_.Build(items);
    // A multiset never seen after this anchor gets half an observation.
    items.clear();
    log_p_.clear();
    for (const auto& [set, context_count] : set_count) {
      const auto& [context, count] = context_count;
      items.emplace_back(set, static_cast<uint32_t>(log_p_.size()));
      log_p_.push_back(static_cast<float>(
          std::log((count + 0.5) / (set_total[context] + 1.0))));
    }
    set_index_.Build(items);
    items.clear();
    for (const auto& [context, total] : set_total) {
      items.emplace_back(context, static_cast<uint32_t>(log_p_.size()));
      log_p_.push_back(static_cast<float>(std::log(0.5 / (total + 1.0))));
    }
    unseen_index_.Build(items);
    score_cache_.assign(pairs_.size(), std::numeric_limits<float>::quiet_NaN());
  }

  double LogDensity(uint64_t key, TimeNs delay) const {
    const int bin = scale_.Bin(delay);
    uint32_t k = gap_index_.Find(key);
    return k == FlatIndex::kMissing ? prior_log_[bin] : gap_boards_[k][bin];
  }

  double LogSetProbability(uint64_t context, uint64_t set) const {
    uint32_t k = set_index_.Find(set);
    if (k == FlatIndex::kMissing) k = unseen_index_.Find(context);
    // A context never seen at all: a single pseudo-observation.
    return k == FlatIndex::kMissing ? std::log(0.5) : log_p_[k];
  }

  double TimelineLogLikelihood(uint32_t parent, uint32_t extra,
                               uint32_t exclude = kNone) {
    double sum = 0;
    auto gap = [&](uint64_t key, TimeNs delay) { sum += LogDensity(key, delay); };
    ForEachTerm(
        parent, extra, exclude, gap,
        [&](uint64_t context, uint64_t set) { sum += LogSetProbability(context, set); },
        gap);
    return sum;
  }

  // The parent's own likelihood, cached until its children change.
  double CachedLogLikelihood(uint32_t parent) {
    float& c = score_cache_[parent];
    if (std::isnan(c)) c = static_cast<float>(TimelineLogLikelihood(parent, kNone));
    return c;
  }

  // Re-choosing a call's parent detaches it (a walk of its parent's
  // children) and scores a timeline per candidate (a sort of theirs): a
  // parent with thousands of children (a session that encloses a whole
  // capture) would make every such choice cost thousands of steps, and
  // the passes quadratic. Calls with a candidate that crowded keep the
  // parent the greedy pass gave them.
  static constexpr int kTimelineMaxChildren = 64;
  bool HasCrowdedCandidate(uint32_t child) const {
    const Pair& c = pairs_[child];
    for (uint32_t k = c.cand_begin; k < c.cand_end; ++k) {
      if (pairs_[cands_[k]].children > kTimelineMaxChildren) return true;
    }
    return false;
  }

  // A call's new parent, and the sibling it trades places with (kNone: it
  // simply moves).
  struct TimelineChoice {
    uint32_t parent = kNone;
    uint32_t swap = kNone;
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
  // when it gains more than any single move. It halves the instance false
  // negatives on multitier-normal (1.67% -> 0.93%) and Children-0/2
  // (3.90% -> 2.15%).
  TimelineChoice ChooseByTimeline(uint32_t child, uint32_t previous) {
    const Pair& c = pairs_[child];
    TimelineChoice choice;
    double best = -std::numeric_limits<double>::infinity();
    uint32_t top[kSwapCandidates];
    double top_gain[kSwapCandidates];
    std::fill(top, top + kSwapCandidates, kNone);
    std::fill(top_gain, top_gain + kSwapCandidates, -std::numeric_limits<double>::infinity());
    for (uint32_t k = c.cand_begin; k < c.cand_end; ++k) {
      uint32_t pi = cands_[k];
      const Pair& p = pairs_[pi];
      double gain = TimelineLogLikelihood(pi, child) - CachedLogLikelihood(pi) +
                    LogPenalty(p, c);
      if (choice.parent == kNone || gain > best ||
          (gain == best && p.call < pairs_[choice.parent].call)) {
        best = gain;
        choice.parent = pi;
      }
      for (int i = 0; i < kSwapCandidates; ++i) {
        if (gain > top_gain[i]) {
          std::copy_backward(top + i, top + kSwapCandidates - 1, top + kSwapCandidates);
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
    for (uint32_t r : top) {
      if (r == kNone || r == previous) continue;
      for (uint32_t d = pairs_[r].first_child; d != kNone; d = pairs_[d].next_sibling) {
        if (edge_of_[d] != edge_of_[child]) continue;
        const Pair& dp = pairs_[d];
        if (std::find(cands_.begin() + dp.cand_begin, cands_.begin() + dp.cand_end,
                      previous) == cands_.begin() + dp.cand_end) {
          continue;
        }
        const double gain =
            TimelineLogLikelihood(r, child, d) - CachedLogLikelihood(r) +
            TimelineLogLikelihood(previous, d) - CachedLogLikelihood(previous) +
            LogPenalty(pairs_[r], c, d) + LogPenalty(prev, dp) -
            LogPenalty(pairs_[r], dp, d);
        if (gain > best) {
          best = gain;
          choice = {r, d};
        }
      }
    }
    return choice;
  }

  uint32_t BestParent(uint32_t child) const {
    const Pair& c = pairs_[child];
    double best = -1;
    uint32_t best_parent = kNone;
    for (uint32_t k = c.cand_begin; k < c.cand_end; ++k) {
      uint32_t pi = cands_[k];
      const Pair& p = pairs_[pi];
      const int bin = scale_.Bin(c.call - p.call);
      double score = boards_[board_flat_.Find(BoardKey(pi, child))][bin] *
                     (params_.raw_bin_scores ? 1.0 : inv_width_[bin]);
      score *= PenaltyFactor(p, c);
      if (score > best ||
          (score == best && p.call < pairs_[best_parent].call)) {
        best = score;
        best_parent = pi;
      }
    }
    return best_parent;
  }

  void Attach(uint32_t child, uint32_t parent) {
    if (!score_cache_.empty()) score_cache_[parent] = std::numeric_limits<float>::quiet_NaN();
    Pair& c = pairs_[child];
    c.parent = parent;
    uint16_t& n = pairs_[parent].children;
    if (n < std::numeric_limits<uint16_t>::max()) ++n;
    // Prepend; children are put back in call order when paths are built.
    c.next_sibling = pairs_[parent].first_child;
    pairs_[parent].first_child = child;
  }

  void Detach(uint32_t child) {
    Pair& c = pairs_[child];
    if (!score_cache_.empty()) score_cache_[c.parent] = std::numeric_limits<float>::quiet_NaN();
    uint32_t* link = &pairs_[c.parent].first_child;
    while (*link != child) link = &pairs_[*link].next_sibling;
    *link = c.next_sibling;
    uint16_t& n = pairs_[c.parent].children;
    // A saturated count stays saturated: the parent stays crowded.
    if (n < std::numeric_limits<uint16_t>::max()) --n;
    c.next_sibling = kNone;
    c.parent = kNone;
  }

  // An instance tree node during path building.
  struct InstNode {
    uint32_t pair;
    std::string key;  // canonical shape key of the subtree
    std::vector<InstNode> children;
  };

  Status BuildInstance(uint32_t idx, int depth, InstNode* out) {
    if (depth > kMaxDepth) {
      return Status::Error(stats_.path + ": causal chain deeper than " +
                           std::to_string(kMaxDepth) +
                           " calls; is this an RPC trace?");
    }
    out->pair = idx;
    const Pair& p = pairs_[idx];
    for (uint32_t s = p.first_child; s != kNone; s = pairs_[s].next_sibling) {
      out->children.emplace_back();
      BBPROF_RETURN_IF_ERROR(BuildInstance(s, depth + 1, &out->children.back()));
    }
    // Canonical order: by shape key, then by call time, so that two
    // instances of one pattern line up child for child.
    std::sort(out->children.begin(), out->children.end(),
              [&](const InstNode& a, const InstNode& b) {
                if (a.key != b.key) return a.key < b.key;
                return pairs_[a.pair].call < pairs_[b.pair].call;
              });
    out->key = names_[p.callee];
    if (params_.group_by_op) AppendOp(op_names_[OpOf(idx)], &out->key);
    if (!out->children.empty()) {
      out->key += '(';
      for (size_t i = 0; i < out->children.size(); ++i) {
        if (i) out->key += ',';
        out->key += out->children[i].key;
      }
      out->key += ')';
    }
    return Status::Ok();
  }

  void Accumulate(const InstNode& inst, TimeNs parent_call, PatternNode* node) {
    const Pair& p = pairs_[inst.pair];
    const std::string& op = op_names_[OpOf(inst.pair)];
    if (node->node.empty()) {
      node->node = names_[p.callee];
      node->op = op;
      node->children.resize(inst.children.size());
    } else if (op != node->op && !node->op_mixed) {
      node->op_mixed = true;  // grouped by node only: no one op to name
      node->op.clear();
    }
    if (!p.imputed) {
      node->latency.Add(p.ret - p.call);
      node->own_time.Add(InstanceOwnTime(inst));
    }
    node->call_delay.Add(p.call - parent_call);
    for (size_t i = 0; i < inst.children.size(); ++i) {
      Accumulate(inst.children[i], p.call, &node->children[i]);
    }
  }

  // The latency of one call not covered by its children: the union of their
  // intervals, each clipped to the call's own span, so parallel children
  // count once (the per-instance form of OwnTimeSeconds in output.h).
  TimeNs InstanceOwnTime(const InstNode& inst) const {
    const Pair& p = pairs_[inst.pair];
    const TimeNs lat = p.ret - p.call;
    std::vector<std::pair<TimeNs, TimeNs>> iv;
    iv.reserve(inst.children.size());
    for (const InstNode& c : inst.children) {
      const Pair& cp = pairs_[c.pair];
      TimeNs a = std::clamp<TimeNs>(cp.call - p.call, 0, std::max<TimeNs>(lat, 0));
      TimeNs b = std::clamp<TimeNs>(cp.ret - p.call, 0, std::max<TimeNs>(lat, 0));
      if (b > a) iv.emplace_back(a, b);
    }
    const TimeNs covered = UnionLength(&iv);
    return lat - covered;
  }

  // The roots step 5 builds trees from: matched calls without candidate
  // parents whose own return was seen.
  bool IsCompleteRoot(uint32_t i) const {
    const Pair& p = pairs_[i];
    return p.ret >= 0 && p.cand_end == p.cand_begin && !p.imputed;
  }

  // Timeline buckets (section 8's sliding windows): the smallest of 1, 2, 5
  // x 10^k ns that cuts the roots' span into at most kMaxTimelineBuckets.
  TimeNs TimelineBucket() const {
    TimeNs first = std::numeric_limits<TimeNs>::max(), last = 0;
    for (uint32_t i = 0; i < pairs_.size(); ++i) {
      if (!IsCompleteRoot(i)) continue;
      first = std::min(first, pairs_[i].call);
      last = std::max(last, pairs_[i].call);
    }
    TimeNs span = last > first ? last - first : 0;
    for (TimeNs decade = 1000;; decade *= 10) {  // from 1 us
      for (TimeNs step : {decade, 2 * decade, 5 * decade}) {
        // +2: buckets are aligned on multiples of the step, so both ends of
        // the span can fall in partial buckets.
        if (span / step + 2 <= kMaxTimelineBuckets) return step;
      }
    }
  }

  static void AddToTimeline(TimeNs call, TimeNs latency, Timeline* t) {
    // Floor division: capture times are positive, but stay exact anyway.
    TimeNs q = call / t->bucket_ns;
    if (call % t->bucket_ns < 0) --q;
    TimeNs start = q * t->bucket_ns;
    if (t->counts.empty()) t->start_ns = start;
    if (start < t->start_ns) {
      auto extra = static_cast<size_t>((t->start_ns - start) / t->bucket_ns);
      t->counts.insert(t->counts.begin(), extra, 0);
      t->latency_sum_ns.insert(t->latency_sum_ns.begin(), extra, 0);
      t->start_ns = start;
    }
    auto at = static_cast<size_t>((start - t->start_ns) / t->bucket_ns);
    if (at >= t->counts.size()) {
      t->counts.resize(at + 1, 0);
      t->latency_sum_ns.resize(at + 1, 0);
    }
    ++t->counts[at];
    t->latency_sum_ns[at] += latency;
  }

  // An example request as observed, children in call order.
  ExampleCall BuildExample(uint32_t idx, TimeNs root_call) const {
    const Pair& p = pairs_[idx];
    ExampleCall e;
    e.node = names_[p.callee];
    e.caller = names_[p.caller];
    e.op = op_names_[OpOf(idx)];
    e.start_ns = p.call - root_call;
    e.latency_ns = p.ret - p.call;
    std::vector<uint32_t> kids;
    for (uint32_t s = p.first_child; s != kNone; s = pairs_[s].next_sibling)
      kids.push_back(s);
    std::sort(kids.begin(), kids.end(), [&](uint32_t a, uint32_t b) {
      if (pairs_[a].call != pairs_[b].call) return pairs_[a].call < pairs_[b].call;
      return a < b;
    });
    for (uint32_t k : kids) e.children.push_back(BuildExample(k, root_call));
    return e;
  }

  // Step 5 (5.1.1.4): a tree from every call without candidate parents,
  // aggregated with every other tree of the same shape. Besides the
  // distributions, each pattern keeps its slowest and median instance and
  // a timeline of buckets: memory per pattern, not per instance.
  Status FindCallPaths(std::vector<Pattern>* patterns) {
    std::unordered_map<std::string, size_t> index;
    root_pattern_.assign(pairs_.size(), kNone);
    const TimeNs bucket = TimelineBucket();
    std::vector<uint32_t> slowest;
    for (uint32_t i = 0; i < pairs_.size(); ++i) {
      const Pair& p = pairs_[i];
      if (p.ret < 0 || p.cand_end != p.cand_begin) continue;
      if (p.imputed) {  // an incomplete instance: its latency is unknown
        ++stats_.unfinished_roots;
        continue;
      }
      InstNode inst;
      BBPROF_RETURN_IF_ERROR(BuildInstance(i, 0, &inst));
      std::string sig = names_[p.caller] + "->" + inst.key;
      auto [it, inserted] = index.try_emplace(sig, patterns->size());
      if (inserted) {
        patterns->emplace_back();
        patterns->back().caller = names_[p.caller];
        patterns->back().shape = sig;
        patterns->back().timeline.bucket_ns = bucket;
        slowest.push_back(i);
      }
      Pattern& pat = (*patterns)[it->second];
      root_pattern_[i] = static_cast<uint32_t>(it->second);
      ++pat.count;
      pat.total_latency_s += trace::NsToSeconds(p.ret - p.call);
      Accumulate(inst, p.call, &pat.root);
      AddToTimeline(p.call, p.ret - p.call, &pat.timeline);
      const Pair& best = pairs_[slowest[it->second]];
      if (p.ret - p.call > best.ret - best.call) slowest[it->second] = i;
    }
    // The median instance: the first whose latency is nearest the pattern's
    // p50, in a second pass over the roots (the p50 is known only now).
    std::vector<uint32_t> median(patterns->size(), kNone);
    std::vector<double> p50(patterns->size());
    for (size_t k = 0; k < patterns->size(); ++k)
      p50[k] = (*patterns)[k].root.latency.Quantile(0.5);
    for (uint32_t i = 0; i < pairs_.size(); ++i) {
      uint32_t k = root_pattern_[i];
      if (k == kNone) continue;
      auto off = [&](uint32_t j) {
        return std::fabs(trace::NsToSeconds(pairs_[j].ret - pairs_[j].call) - p50[k]);
      };
      if (median[k] == kNone || off(i) < off(median[k])) median[k] = i;
    }
    for (size_t k = 0; k < patterns->size(); ++k) {
      Pattern& pat = (*patterns)[k];
      pat.median = {pairs_[median[k]].call, BuildExample(median[k], pairs_[median[k]].call)};
      pat.slowest = {pairs_[slowest[k]].call, BuildExample(slowest[k], pairs_[slowest[k]].call)};
    }
    for (Pattern& pat : *patterns) {
      OrderForDisplay(&pat.root);
      pat.signature =
          pat.caller + "->" + DisplaySignature(pat.root, params_.group_by_op);
    }
    return Status::Ok();
  }

  // Spec order: children by ascending mean call delay, ties by name.
  static void OrderForDisplay(PatternNode* n) {
    for (auto& c : n->children) OrderForDisplay(&c);
    std::stable_sort(n->children.begin(), n->children.end(),
                     [](const PatternNode& a, const PatternNode& b) {
                       double da = a.call_delay.mean_s(), db = b.call_delay.mean_s();
                       if (da != db) return da < db;
                       return a.node < b.node;
                     });
  }

  // A node's op in a signature: `node[op]`. An op holds none of "( ) , ;"
  // (trace/op.h); '[' and ']' are percent-encoded here (MakeOp already does
  // it), so the op of a signature's node is what follows its last '['.
  static void AppendOp(const std::string& op, std::string* out) {
    if (op.empty()) return;
    out->push_back('[');
    for (char ch : op) {
      if (ch == '[') {
        *out += "%5B";
      } else if (ch == ']') {
        *out += "%5D";
      } else {
        out->push_back(ch);
      }
    }
    out->push_back(']');
  }

  static std::string DisplaySignature(const PatternNode& n, bool with_ops) {
    std::string s = n.node;
    if (with_ops) AppendOp(n.op, &s);
    if (!n.children.empty()) {
      s += '(';
      for (size_t i = 0; i < n.children.size(); ++i) {
        if (i) s += ',';
        s += DisplaySignature(n.children[i], with_ops);
      }
      s += ')';
    }
    return s;
  }

  trace::TraceReader& reader_;
  Params params_;
  BinScale scale_;
  InputStats stats_;
  std::vector<std::string> names_;
  std::vector<Pair> pairs_;
  std::vector<uint32_t> ret_order_;
  std::vector<uint32_t> cands_;
  std::vector<uint32_t> root_pattern_;
  // Automatic skew windows (EstimateSkew): (start, end) by child edge.
  std::unordered_map<uint64_t, std::pair<TimeNs, TimeNs>> edge_windows_;
  std::vector<EdgeSkew> skew_;
  // Clock offsets (CorrectClocks): the nonzero ones by name; while they
  // are applied, the times as stamped, and the pairs in corrected call
  // order (empty: index order, the order of the trace).
  std::vector<NodeClockOffset> clock_offsets_;
  ClockCorrection clock_total_;  // the sum of the rounds' corrections
  std::vector<std::pair<TimeNs, TimeNs>> observed_;
  std::vector<uint32_t> call_order_;
  CallLabels* labels_;  // null unless asked for
  // Operations: per pair its op's id into op_names_ (0: none, ""); see OpOf.
  std::vector<uint32_t> op_of_;
  // A deque: op_ids_ holds views of its strings, which must not move.
  std::deque<std::string> op_names_{std::string()};
  std::unordered_map<std::string_view, uint32_t> op_ids_;
  std::vector<NodeId> key_callee_;  // see KeyCallees; empty: the callees
  std::unordered_map<uint64_t, size_t> board_index_;
  FlatIndex board_flat_;  // board_index_, for the lookups of BestParent
  std::vector<std::vector<double>> boards_;
  std::vector<double> inv_width_;
  bool any_penalty_ = false;
  bool any_pathid_ = false;  // with use_pathids: some call carries one
  std::vector<double> log1p_;
  // Timeline scoring (see PrepareTimeline).
  std::vector<uint32_t> edge_of_;
  std::vector<uint32_t> tl_after_;  // scratch of ForEachTerm
  std::vector<bool> makes_calls_;
  std::vector<float> prior_log_;
  FlatIndex gap_index_, set_index_, unseen_index_;
  std::vector<std::vector<float>> gap_boards_;
  std::vector<float> log_p_;
  std::vector<float> score_cache_;
  std::vector<Kid> tl_kids_;
  std::vector<std::pair<int, uint32_t>> tl_spawned_;
};

}  // namespace

const char* SortKeyName(SortKey key) {
  switch (key) {
    case SortKey::kTotalLatency:
      return "total-latency";
    case SortKey::kCount:
      return "count";
    case SortKey::kMeanLatency:
      return "mean-latency";
  }
  return "total-latency";
}

std::optional<SortKey> SortKeyFromName(std::string_view name) {
  for (SortKey k :
       {SortKey::kTotalLatency, SortKey::kCount, SortKey::kMeanLatency}) {
    if (name == SortKeyName(k)) return k;
  }
  return std::nullopt;
}

void SortPatterns(std::vector<Pattern>& patterns, SortKey key) {
  auto mean = [](const Pattern& p) {
    return p.count ? p.total_latency_s / static_cast<double>(p.count) : 0.0;
  };
  std::sort(patterns.begin(), patterns.end(),
            [&](const Pattern& a, const Pattern& b) {
              switch (key) {
                case SortKey::kCount:
                  if (a.count != b.count) return a.count > b.count;
                  if (a.total_latency_s != b.total_latency_s)
                    return a.total_latency_s > b.total_latency_s;
                  break;
                case SortKey::kTotalLatency:
                  if (a.total_latency_s != b.total_latency_s)
                    return a.total_latency_s > b.total_latency_s;
                  if (a.count != b.count) return a.count > b.count;
                  break;
                case SortKey::kMeanLatency:
                  if (mean(a) != mean(b)) return mean(a) > mean(b);
                  if (a.count != b.count) return a.count > b.count;
                  break;
              }
              return a.signature < b.signature;
            });
}

Result<NestingResult> RunNesting(trace::TraceReader& reader,
                                 const Params& params) {
  if (!(params.bin_base > 1.0) || params.bin_base > 2.0) {
    return Status::Error("bin base must be in (1, 2]");
  }
  Engine engine(reader, params);
  Result<NestingResult> r = engine.Run();
  if (r.ok()) SortPatterns(r->patterns, r->sort);
  return r;
}

Result<DetailedResult> RunNestingDetailed(trace::TraceReader& reader,
                                          const Params& params,
                                          const DetailOptions& options) {
  if (!(params.bin_base > 1.0) || params.bin_base > 2.0) {
    return Status::Error("bin base must be in (1, 2]");
  }
  DetailedResult d;
  Engine engine(reader, params, options.call_labels ? &d.labels : nullptr);
  Result<NestingResult> r = engine.Run();
  if (!r.ok()) return r.status();
  d.result = std::move(*r);
  engine.FillDetails(&d);  // indexes patterns in discovery order
  SortPatterns(d.result.patterns, d.result.sort);
  return d;
}

}  // namespace bbprof::nesting
