#include "nesting/nest.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <span>
#include <string_view>
#include <unordered_map>

#include "base/progress.h"
#include "trace/byte_stream.h"

namespace bbprof::nesting {

using trace::NodeId;
using trace::TimeNs;

namespace {

constexpr uint32_t kNone = std::numeric_limits<uint32_t>::max();
constexpr TimeNs kOneMicro = 1000;
constexpr double kTwoHoursNs = 7200.0 * 1e9;

// One matched (or still open) call: the paper's call pair (A, B, t1, t4).
struct CallPair {
  TimeNs start = 0;
  TimeNs end = 0;
  NodeId caller = 0;
  NodeId callee = 0;
  uint32_t call_idx = 0;  // record number of the CALL
  uint32_t ret_idx = kNone;  // record number of the RET; kNone = unmatched
  uint32_t parent = kNone;
  uint32_t first_child = kNone;  // children in call order
  uint32_t last_child = kNone;
  uint32_t next_sibling = kNone;  // doubles as the FIFO link while open
};

}  // namespace

Status ValidateParams(const NestParams& p) {
  auto bad = [](double v) { return !std::isfinite(v) || v < 0; };
  if (bad(p.penalty_overlap))
    return Status::Error("--penalty-overlap must be a finite number >= 0");
  if (bad(p.penalty_same))
    return Status::Error("--penalty-same must be a finite number >= 0");
  if (bad(p.penalty_generic))
    return Status::Error("--penalty-generic must be a finite number >= 0");
  if (p.skew_window_ns < 0)
    return Status::Error("--skew-window must be >= 0 seconds");
  if (bad(p.smoothing_bins) || p.smoothing_bins > 1000)
    return Status::Error("--smooth must be between 0 and 1000 bins");
  if (!std::isfinite(p.bin_base) || p.bin_base <= 1.0001 || p.bin_base > 10)
    return Status::Error("--bin-base must be greater than 1.0001 and at most 10");
  return Status::Ok();
}

DelayBins::DelayBins(double base) : inv_log_base_(1.0 / std::log(base)) {
  size_ = 2 + static_cast<int>(std::ceil(std::log(kTwoHoursNs / kOneMicro) *
                                         inv_log_base_));
}

int DelayBins::Bin(TimeNs delay_ns) const {
  if (delay_ns < kOneMicro) return 0;
  double k = std::floor(std::log(static_cast<double>(delay_ns) / kOneMicro) *
                        inv_log_base_);
  return std::min(size_ - 1, 1 + static_cast<int>(k));
}

struct NestEngine::Impl {
  NestParams params;
  std::vector<CallPair> pairs;
  // FIFO of open calls per (sender, receiver, callid): head and tail pair.
  struct Queue {
    uint32_t head, tail;
  };
  std::unordered_map<std::string, Queue> open;
  std::string key;
  uint64_t messages = 0;
  uint64_t unmatched_returns = 0;
  uint64_t other_messages = 0;
  TimeNs first_ts = 0, last_ts = 0;

  explicit Impl(NestParams p) : params(p) {}

  void MakeKey(NodeId a, NodeId b, std::string_view callid) {
    key.assign(reinterpret_cast<const char*>(&a), sizeof a);
    key.append(reinterpret_cast<const char*>(&b), sizeof b);
    key.append(callid);
  }
};

NestEngine::NestEngine(NestParams params)
    : impl_(std::make_unique<Impl>(params)) {}
NestEngine::~NestEngine() = default;

// Section 5.1.1.1, FindCallPairs: a CALL opens an entry; a RET closes the
// earliest open entry with the same (caller, callee, callid). Matching the
// earliest (FIFO) is what a protocol without call ids, or one that reuses
// them, most plausibly did: requests on one connection are answered in order.
Status NestEngine::Add(const trace::Record& rec) {
  Impl& m = *impl_;
  if (m.messages >= kNone - 1)
    return Status::Error("trace too long: more than 4294967293 messages");
  uint32_t idx = static_cast<uint32_t>(m.messages++);
  if (idx == 0) m.first_ts = rec.ts_ns;
  m.last_ts = rec.ts_ns;
  if (rec.kind == trace::Kind::kMessage) {
    ++m.other_messages;
    return Status::Ok();
  }
  if (rec.kind == trace::Kind::kCall) {
    uint32_t id = static_cast<uint32_t>(m.pairs.size());
    CallPair cp;
    cp.start = rec.ts_ns;
    cp.caller = rec.sender;
    cp.callee = rec.receiver;
    cp.call_idx = idx;
    m.pairs.push_back(cp);
    m.MakeKey(rec.sender, rec.receiver, rec.callid);
    auto [it, inserted] = m.open.try_emplace(m.key, Impl::Queue{id, id});
    if (!inserted) {
      m.pairs[it->second.tail].next_sibling = id;
      it->second.tail = id;
    }
    return Status::Ok();
  }
  // A RET travels callee -> caller.
  m.MakeKey(rec.receiver, rec.sender, rec.callid);
  auto it = m.open.find(m.key);
  if (it == m.open.end()) {
    ++m.unmatched_returns;
    return Status::Ok();
  }
  uint32_t id = it->second.head;
  CallPair& cp = m.pairs[id];
  cp.end = rec.ts_ns;
  cp.ret_idx = idx;
  if (id == it->second.tail) {
    m.open.erase(it);
  } else {
    it->second.head = cp.next_sibling;
  }
  cp.next_sibling = kNone;
  return Status::Ok();
}

namespace {

// Section 5.1.1.1 with the skew window of 7.5.6: the candidate parents of a
// child call X->C are the calls into X that started before it and had not
// returned when it returned. Trace order decides "before" exactly (the RET
// and CALL order in the file); with a skew window w a call also qualifies
// when it started less than w after the child's call or returned less than
// w before the child's return, since per-host clocks may be off by that much.
//
// The sweep visits, for every node X, the calls out of X in call order and
// keeps the calls into X that have started (so far) in an active list;
// a call into X leaves the list once it returned more than w before the
// current child started, since no later child can nest in it. The list holds
// about the node's parallelism, so the sweep is O(calls x parallelism).
class CandidateSweep {
 public:
  CandidateSweep(const std::vector<CallPair>& pairs, TimeNs skew)
      : pairs_(pairs), skew_(skew) {
    // Calls into and out of each node, in call order (pairs are in call
    // order already). Unmatched calls take no part.
    NodeId max_node = 0;
    for (const CallPair& p : pairs) {
      max_node = std::max({max_node, p.caller, p.callee});
    }
    into_.resize(pairs.empty() ? 0 : max_node + 1);
    out_of_.resize(into_.size());
    for (uint32_t i = 0; i < pairs.size(); ++i) {
      if (pairs[i].ret_idx == kNone) continue;
      into_[pairs[i].callee].push_back(i);
      out_of_[pairs[i].caller].push_back(i);
    }
  }

  // Calls visit(child, candidates) for every matched call, node by node,
  // each node's children in call order.
  template <typename Visit>
  void Run(Visit&& visit) const {
    std::vector<uint32_t> active, cands;
    for (size_t x = 0; x < into_.size(); ++x) {
      const auto& parents = into_[x];
      size_t next = 0;
      active.clear();
      for (uint32_t c : out_of_[x]) {
        const CallPair& ch = pairs_[c];
        while (next < parents.size()) {
          const CallPair& p = pairs_[parents[next]];
          if (p.call_idx < ch.call_idx || p.start < ch.start + skew_) {
            active.push_back(parents[next++]);
          } else {
            break;
          }
        }
        // Drop parents that can hold no child from here on.
        std::erase_if(active, [&](uint32_t p) {
          const CallPair& pp = pairs_[p];
          return pp.ret_idx < ch.call_idx && pp.end <= ch.start - skew_;
        });
        cands.clear();
        for (uint32_t p : active) {
          if (p == c) continue;
          const CallPair& pp = pairs_[p];
          if (pp.ret_idx > ch.ret_idx || pp.end > ch.end - skew_) {
            cands.push_back(p);
          }
        }
        visit(c, std::span<const uint32_t>(cands));
      }
    }
  }

 private:
  const std::vector<CallPair>& pairs_;
  TimeNs skew_;
  std::vector<std::vector<uint32_t>> into_, out_of_;
};

// Section 5.1.1.2: one histogram per (A, B, C) triple.
class Scoreboard {
 public:
  explicit Scoreboard(double base) : bins_(base) {}
  static uint64_t Key(NodeId a, NodeId b, NodeId c) {
    return (static_cast<uint64_t>(a) << 42) ^ (static_cast<uint64_t>(b) << 21) ^ c;
  }
  void Add(uint64_t key, TimeNs delay, double weight) {
    auto [it, inserted] = index_.try_emplace(key, hists_.size());
    if (inserted) hists_.emplace_back(bins_.size(), 0.0);
    hists_[it->second][bins_.Bin(delay)] += weight;
  }
  double Score(uint64_t key, TimeNs delay) const {
    auto it = index_.find(key);
    if (it == index_.end()) return 0;
    return hists_[it->second][bins_.Bin(delay)];
  }
  // Convolves every histogram with a Gaussian of sd `sd` bins (truncated at
  // 4 sd, renormalised so scores keep their scale). Section 5.1.1.2: helps
  // when timestamps are skewed (7.5.6).
  void Smooth(double sd) {
    if (sd <= 0) return;
    int half = static_cast<int>(std::ceil(4 * sd));
    std::vector<double> kernel(2 * half + 1);
    double total = 0;
    for (int i = -half; i <= half; ++i) {
      kernel[i + half] = std::exp(-0.5 * (i / sd) * (i / sd));
      total += kernel[i + half];
    }
    for (double& k : kernel) k /= total;
    std::vector<double> out;
    for (auto& h : hists_) {
      int n = static_cast<int>(h.size());
      out.assign(n, 0.0);
      for (int i = 0; i < n; ++i) {
        if (h[i] == 0) continue;
        for (int j = std::max(0, i - half); j <= std::min(n - 1, i + half); ++j) {
          out[j] += h[i] * kernel[j - i + half];
        }
      }
      h.swap(out);
    }
  }

 private:
  DelayBins bins_;
  std::unordered_map<uint64_t, size_t> index_;
  std::vector<std::vector<double>> hists_;
};

// Builds patterns from the finished parent links (5.1.1.4).
class PathBuilder {
 public:
  PathBuilder(std::vector<CallPair>& pairs, const trace::NodeTable& names)
      : pairs_(pairs), names_(names) {}

  void AddRoot(uint32_t root, std::vector<Assignment>* assignments) {
    // Canonical signature per subtree (children sorted by their own
    // signature, ties by call order), computed bottom-up iteratively so a
    // deep chain cannot overflow the stack.
    order_.clear();
    stack_.clear();
    stack_.push_back(root);
    while (!stack_.empty()) {
      uint32_t p = stack_.back();
      stack_.pop_back();
      order_.push_back(p);
      for (uint32_t c = pairs_[p].first_child; c != kNone; c = pairs_[c].next_sibling)
        stack_.push_back(c);
    }
    // order_ is a preorder (children reversed); walk it backwards so every
    // child's signature exists before its parent's.
    sig_.clear();
    kids_.clear();
    for (auto it = order_.rbegin(); it != order_.rend(); ++it) {
      uint32_t p = *it;
      std::vector<uint32_t> kids;
      for (uint32_t c = pairs_[p].first_child; c != kNone; c = pairs_[c].next_sibling)
        kids.push_back(c);
      std::stable_sort(kids.begin(), kids.end(), [&](uint32_t a, uint32_t b) {
        return sig_[a] < sig_[b];
      });
      std::string s(names_.Name(pairs_[p].callee));
      if (!kids.empty()) {
        s += '(';
        for (size_t i = 0; i < kids.size(); ++i) {
          if (i) s += ',';
          s += sig_[kids[i]];
          sig_.erase(kids[i]);
        }
        s += ')';
      }
      sig_[p] = std::move(s);
      kids_[p] = std::move(kids);
    }
    std::string key = std::string(names_.Name(pairs_[root].caller)) + "->" + sig_[root];
    auto [it, inserted] = index_.try_emplace(key, patterns_.size());
    if (inserted) {
      Pattern pat;
      pat.signature = key;
      BuildShape(pat, root, kNone);
      patterns_.push_back(std::move(pat));
    }
    Pattern& pat = patterns_[it->second];
    ++pat.count;
    pat.total_latency_s += trace::NsToSeconds(pairs_[root].end - pairs_[root].start);
    Assignment* as = nullptr;
    if (assignments) {
      assignments->push_back({static_cast<uint32_t>(it->second), {}});
      as = &assignments->back();
    }
    size_t pos = 0;
    Accumulate(pat, root, pairs_[root].start, pos, as);
  }

  std::vector<Pattern> Take() { return std::move(patterns_); }

 private:
  // Creates the pattern's node list in canonical preorder.
  int BuildShape(Pattern& pat, uint32_t p, int parent) {
    int me = static_cast<int>(pat.nodes.size());
    pat.nodes.emplace_back();
    pat.nodes[me].node = names_.Name(pairs_[p].callee);
    pat.nodes[me].caller = names_.Name(pairs_[p].caller);
    if (parent >= 0) pat.nodes[parent].children.push_back(me);
    for (uint32_t c : kids_[p]) BuildShape(pat, c, me);
    return me;
  }

  // Adds one instance's latencies, walking in the same canonical preorder.
  void Accumulate(Pattern& pat, uint32_t p, TimeNs parent_start, size_t& pos,
                  Assignment* as) {
    const CallPair& cp = pairs_[p];
    PatternNode& n = pat.nodes[pos++];
    n.latency.Add(trace::NsToSeconds(cp.end - cp.start));
    n.call_delay.Add(trace::NsToSeconds(cp.start - parent_start));
    // Own time: the node's interval minus the union of its children's
    // intervals (clipped to it), so parallel children count once.
    TimeNs covered = 0, reach = cp.start;
    std::vector<std::pair<TimeNs, TimeNs>> iv;
    for (uint32_t c : kids_[p]) iv.emplace_back(pairs_[c].start, pairs_[c].end);
    std::sort(iv.begin(), iv.end());
    for (auto [s, e] : iv) {
      s = std::max(s, reach);
      e = std::min(e, cp.end);
      if (e > s) {
        covered += e - s;
        reach = e;
      }
    }
    n.own_time.Add(trace::NsToSeconds(cp.end - cp.start - covered));
    if (as) {
      as->messages.push_back(cp.call_idx);
      as->messages.push_back(cp.ret_idx);
    }
    for (uint32_t c : kids_[p]) Accumulate(pat, c, cp.start, pos, as);
  }

  std::vector<CallPair>& pairs_;
  const trace::NodeTable& names_;
  std::vector<uint32_t> order_, stack_;
  std::unordered_map<uint32_t, std::string> sig_;
  std::unordered_map<uint32_t, std::vector<uint32_t>> kids_;
  std::unordered_map<std::string, size_t> index_;
  std::vector<Pattern> patterns_;
};

// Orders every node's children by ascending mean call delay, ties by name
// (the spec's display order), renumbers the preorder and rewrites the
// signature in that order.
void FinishPattern(Pattern& pat) {
  std::vector<PatternNode> out;
  std::function<void(int, int)> copy = [&](int i, int parent) {
    int me = static_cast<int>(out.size());
    out.push_back(pat.nodes[i]);
    out[me].children.clear();
    if (parent >= 0) out[parent].children.push_back(me);
    std::vector<int> kids = pat.nodes[i].children;
    std::stable_sort(kids.begin(), kids.end(), [&](int a, int b) {
      double da = pat.nodes[a].call_delay.mean(), db = pat.nodes[b].call_delay.mean();
      if (da != db) return da < db;
      return pat.nodes[a].node < pat.nodes[b].node;
    });
    for (int k : kids) copy(k, me);
  };
  copy(0, -1);
  pat.nodes = std::move(out);
  std::function<std::string(int)> sig = [&](int i) {
    std::string s = pat.nodes[i].node;
    if (!pat.nodes[i].children.empty()) {
      s += '(';
      for (size_t k = 0; k < pat.nodes[i].children.size(); ++k) {
        if (k) s += ',';
        s += sig(pat.nodes[i].children[k]);
      }
      s += ')';
    }
    return s;
  };
  pat.signature = pat.nodes[0].caller + "->" + sig(0);
}

}  // namespace

NestResult NestEngine::Finish(const trace::NodeTable& names,
                              std::vector<Assignment>* assignments) {
  Impl& m = *impl_;
  NestResult result;
  result.params = m.params;
  InputStats& in = result.input;
  in.messages = m.messages;
  in.other_messages = m.other_messages;
  in.unmatched_returns = m.unmatched_returns;
  in.duration_s = trace::NsToSeconds(m.last_ts - m.first_ts);
  for (const CallPair& p : m.pairs) {
    if (p.ret_idx == kNone) {
      ++in.unmatched_calls;
    } else {
      ++in.call_pairs;
    }
  }
  m.open.clear();
  std::vector<CallPair>& pairs = m.pairs;

  CandidateSweep sweep(pairs, m.params.skew_window_ns);
  // Section 5.1.1.2, ScoreNestings.
  Scoreboard board(m.params.bin_base);
  uint64_t nested = 0, candidate_sum = 0;
  sweep.Run([&](uint32_t c, std::span<const uint32_t> cands) {
    if (cands.empty()) return;
    ++nested;
    candidate_sum += cands.size();
    double w = 1.0 / static_cast<double>(cands.size());
    const CallPair& ch = pairs[c];
    for (uint32_t p : cands) {
      board.Add(Scoreboard::Key(pairs[p].caller, ch.caller, ch.callee),
                ch.start - pairs[p].start, w);
    }
  });
  in.mean_parallelism =
      nested ? static_cast<double>(candidate_sum) / static_cast<double>(nested) : 0;
  board.Smooth(m.params.smoothing_bins);

  // Section 5.1.1.3, FindNestedPairs. The penalties count children "already
  // assigned", so the order matters: every node's children are decided in
  // call order (the sweep's order), so a parent's already-assigned children
  // are exactly its children that were called earlier. The paper's c^-x is
  // infinite at c = 0; we use (1 + c)^-x, i.e. no penalty for a parent with
  // no such children, halving (x = 1) or quartering (x = 2) with one.
  const NestParams& prm = m.params;
  sweep.Run([&](uint32_t c, std::span<const uint32_t> cands) {
    if (cands.empty()) return;
    CallPair& ch = pairs[c];
    double best = -1;
    uint32_t parent = kNone;
    for (uint32_t p : cands) {  // candidates are in call order: earliest first
      const CallPair& pp = pairs[p];
      double score =
          board.Score(Scoreboard::Key(pp.caller, ch.caller, ch.callee), ch.start - pp.start);
      int overlap = 0, same = 0, any = 0;
      for (uint32_t k = pp.first_child; k != kNone; k = pairs[k].next_sibling) {
        ++any;
        if (pairs[k].callee == ch.callee) ++same;
        if (pairs[k].start < ch.end && ch.start < pairs[k].end) ++overlap;
      }
      if (overlap && prm.penalty_overlap > 0) score *= std::pow(1.0 + overlap, -prm.penalty_overlap);
      if (same && prm.penalty_same > 0) score *= std::pow(1.0 + same, -prm.penalty_same);
      if (any && prm.penalty_generic > 0) score *= std::pow(1.0 + any, -prm.penalty_generic);
      if (score > best) {  // strict: ties stay with the earliest parent
        best = score;
        parent = p;
      }
    }
    ch.parent = parent;
    CallPair& pp = pairs[parent];
    if (pp.last_child == kNone) {
      pp.first_child = c;
    } else {
      pairs[pp.last_child].next_sibling = c;
    }
    pp.last_child = c;
  });

  // Section 5.1.1.4, FindCallPaths: every matched call without a parent is
  // the root of one path instance.
  PathBuilder builder(pairs, names);
  for (uint32_t i = 0; i < pairs.size(); ++i) {
    if (pairs[i].ret_idx == kNone || pairs[i].parent != kNone) continue;
    ++in.root_calls;
    builder.AddRoot(i, assignments);
  }
  result.patterns = builder.Take();
  for (Pattern& p : result.patterns) FinishPattern(p);
  return result;
}

Result<NestResult> NestTrace(const std::string& path, const NestParams& params,
                             bool quiet, std::vector<Assignment>* assignments) {
  BBPROF_RETURN_IF_ERROR(ValidateParams(params));
  auto reader = trace::OpenTraceReader(path);
  if (!reader.ok()) return reader.status();
  trace::TraceReader& r = **reader;
  NestEngine engine(params);
  Progress progress("reading trace", trace::FileSizeOrZero(path), quiet);
  trace::Record rec;
  uint64_t n = 0;
  while (r.Next(rec)) {
    ++n;
    BBPROF_RETURN_IF_ERROR(engine.Add(rec).WithContext(path));
    progress.Update(r.raw_bytes_read());
  }
  progress.Finish();
  if (!r.status().ok()) return r.status();
  if (n == 0) return Status::Error(path + ": empty trace (no messages)");
  NestResult result = engine.Finish(r.nodes(), assignments);
  result.input.path = path;
  if (result.input.call_pairs == 0) {
    return Status::Error(path + ": no matched CALL/RET pairs among " +
                         std::to_string(n) + " messages (" +
                         std::to_string(result.input.unmatched_calls) +
                         " unmatched calls, " +
                         std::to_string(result.input.unmatched_returns) +
                         " unmatched returns, " +
                         std::to_string(result.input.other_messages) +
                         " MSG records); nesting needs RPC calls and returns");
  }
  return result;
}

void RankPatterns(NestResult& result, RankBy by, uint64_t min_count, uint64_t top,
                  std::vector<int>* old_to_new) {
  std::vector<size_t> idx(result.patterns.size());
  for (size_t i = 0; i < idx.size(); ++i) idx[i] = i;
  auto& pats = result.patterns;
  auto primary = [&](const Pattern& p) -> double {
    switch (by) {
      case RankBy::kCount:
        return static_cast<double>(p.count);
      case RankBy::kTotalLatency:
        return p.total_latency_s;
      case RankBy::kMeanLatency:
        return p.count ? p.total_latency_s / static_cast<double>(p.count) : 0;
    }
    return 0;
  };
  std::sort(idx.begin(), idx.end(), [&](size_t a, size_t b) {
    const Pattern& pa = pats[a];
    const Pattern& pb = pats[b];
    double ka = primary(pa), kb = primary(pb);
    if (ka != kb) return ka > kb;
    if (pa.count != pb.count) return pa.count > pb.count;
    if (pa.total_latency_s != pb.total_latency_s)
      return pa.total_latency_s > pb.total_latency_s;
    return pa.signature < pb.signature;
  });
  std::vector<Pattern> out;
  if (old_to_new) old_to_new->assign(pats.size(), -1);
  for (size_t i : idx) {
    if (pats[i].count < min_count) continue;
    if (top && out.size() >= top) break;
    if (old_to_new) (*old_to_new)[i] = static_cast<int>(out.size());
    out.push_back(std::move(pats[i]));
  }
  pats = std::move(out);
}

}  // namespace bbprof::nesting
