#include "nesting/steps/pattern_table.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "base/workers.h"
#include "nesting/bins.h"
#include "nesting/intervals.h"
#include "trace/timestamp.h"

namespace bbprof::nesting {

using trace::TimeNs;

namespace {

// Adds `count` instances of total latency `latency_ns` to the bucket of
// `at`, growing the timeline at either end.
void AddBuckets(TimeNs at, uint64_t count, TimeNs latency_ns, Timeline* t) {
  // Floor division: capture times are positive, but stay exact anyway.
  TimeNs q = at / t->bucket_ns;
  if (at % t->bucket_ns < 0) --q;
  TimeNs start = q * t->bucket_ns;
  if (t->counts.empty()) t->start_ns = start;
  if (start < t->start_ns) {
    auto extra = static_cast<size_t>((t->start_ns - start) / t->bucket_ns);
    t->counts.insert(t->counts.begin(), extra, 0);
    t->latency_sum_ns.insert(t->latency_sum_ns.begin(), extra, 0);
    t->start_ns = start;
  }
  auto i = static_cast<size_t>((start - t->start_ns) / t->bucket_ns);
  if (i >= t->counts.size()) {
    t->counts.resize(i + 1, 0);
    t->latency_sum_ns.resize(i + 1, 0);
  }
  t->counts[i] += count;
  t->latency_sum_ns[i] += latency_ns;
}

// Timeline buckets (section 8's sliding windows): the smallest of 1, 2, 5
// x 10^k ns that cuts `span` into at most kMaxTimelineBuckets.
TimeNs BucketFor(TimeNs span) {
  for (TimeNs decade = 1000;; decade *= 10) {  // from 1 us
    for (TimeNs step : {decade, 2 * decade, 5 * decade}) {
      // +2: buckets are aligned on multiples of the step, so both ends of
      // the span can fall in partial buckets.
      if (span / step + 2 <= kMaxTimelineBuckets) return step;
    }
  }
}

void MergeNode(const PatternNode& later, PatternNode* node);
void AddTimeline(const Timeline& from, Timeline* into);

class PatternBuilder {
 public:
  PatternBuilder(const CallTable& table, bool group_by_op, InputStats* stats,
                 std::vector<uint32_t>* root_pattern)
      : table_(table),
        pairs_(table.pairs),
        names_(table.names),
        op_names_(table.op_names),
        group_by_op_(group_by_op),
        stats_(*stats),
        root_pattern_(*root_pattern) {}

  // An instance tree node during path building.
  struct InstNode {
    uint32_t pair;
    uint32_t shape;  // its subtree's, in the part's ShapeTable
    std::vector<InstNode> children;
  };

  // The shapes of the subtrees one part of the first pass meets, interned.
  // A shape is its call's node, its op (grouped by op) and its children's
  // shapes in canonical order; each distinct one gets a number and, once,
  // its canonical key (`node[op](child,child)`), which names the pattern.
  // So an instance costs a lookup of a few numbers per call, and strings
  // are written and compared only for shapes, not for every instance
  // (building and comparing each instance's key as a string would be a
  // large share of step 5).
  class ShapeTable {
   public:
    explicit ShapeTable(const PatternBuilder& b) : b_(b) {}

    uint32_t Intern(uint32_t node, uint32_t op,
                    const std::vector<InstNode>& kids) {
      uint64_t h = Mix64((uint64_t{node} << 32 | op) ^ kids.size());
      for (const InstNode& k : kids) h = Mix64(h ^ k.shape);
      const auto [bucket, fresh] = by_hash_.Insert(h);
      if (fresh) {
        head_.push_back(kNone);
      } else {
        for (uint32_t s = head_[bucket]; s != kNone; s = next_[s]) {
          if (Same(s, node, op, kids)) return s;
        }
      }
      const auto s = static_cast<uint32_t>(keys_.size());
      next_.push_back(head_[bucket]);
      head_[bucket] = s;
      at_.push_back(static_cast<uint32_t>(seq_.size()));
      seq_.insert(seq_.end(),
                  {node, op, static_cast<uint32_t>(kids.size())});
      std::string key = b_.names_[node];
      if (b_.group_by_op_) AppendOp(b_.op_names_[op], &key);
      if (!kids.empty()) {
        key += '(';
        for (size_t i = 0; i < kids.size(); ++i) {
          seq_.push_back(kids[i].shape);
          if (i) key += ',';
          key += keys_[kids[i].shape];
        }
        key += ')';
      }
      keys_.push_back(std::move(key));
      return s;
    }
    const std::string& key(uint32_t shape) const { return keys_[shape]; }

    // The canonical order of siblings: by key, then by call time. Equal
    // shapes have equal keys; unequal ones almost always unequal keys
    // (only node names holding the key's punctuation can make two alike),
    // and are then ordered by call time, as the keys alone would order
    // them.
    bool Before(const InstNode& a, const InstNode& b) const {
      if (a.shape != b.shape) {
        const int c = keys_[a.shape].compare(keys_[b.shape]);
        if (c != 0) return c < 0;
      }
      return b_.pairs_[a.pair].call < b_.pairs_[b.pair].call;
    }

   private:
    bool Same(uint32_t s, uint32_t node, uint32_t op,
              const std::vector<InstNode>& kids) const {
      const uint32_t* q = seq_.data() + at_[s];
      if (q[0] != node || q[1] != op || q[2] != kids.size()) return false;
      for (size_t i = 0; i < kids.size(); ++i) {
        if (q[3 + i] != kids[i].shape) return false;
      }
      return true;
    }

    const PatternBuilder& b_;
    KeyIndex by_hash_;            // a shape's hash -> its bucket
    std::vector<uint32_t> head_;  // bucket -> its latest shape
    std::vector<uint32_t> next_;  // shape -> the bucket's previous one
    std::vector<uint32_t> at_;    // shape -> its sequence in seq_
    std::vector<uint32_t> seq_;   // (node, op, n, n child shapes) a shape
    std::vector<std::string> keys_;
  };

  Status BuildInstance(uint32_t idx, int depth, ShapeTable* shapes,
                       InstNode* out) {
    if (depth > kMaxDepth) {
      return Status::Error(stats_.path + ": causal chain deeper than " +
                           std::to_string(kMaxDepth) +
                           " calls; is this an RPC trace?");
    }
    out->pair = idx;
    const Pair& p = pairs_[idx];
    for (uint32_t s = p.first_child; s != kNone; s = pairs_[s].next_sibling) {
      out->children.emplace_back();
      BBPROF_RETURN_IF_ERROR(
          BuildInstance(s, depth + 1, shapes, &out->children.back()));
    }
    // Canonical order: by shape key, then by call time, so that two
    // instances of one pattern line up child for child.
    std::sort(out->children.begin(), out->children.end(),
              [&](const InstNode& a, const InstNode& b) {
                return shapes->Before(a, b);
              });
    out->shape = shapes->Intern(p.callee, group_by_op_ ? table_.OpOf(idx) : 0,
                                out->children);
    return Status::Ok();
  }

  // Appends the instance's calls in canonical pre-order (each call, then
  // its children's subtrees in canonical order), the order Accumulate
  // walks: the second pass over the roots reads it instead of building the
  // instance tree and its shape keys again.
  static void Flatten(const InstNode& n, std::vector<uint32_t>* out) {
    out->push_back(n.pair);
    for (const InstNode& c : n.children) Flatten(c, out);
  }

  // Adds one instance, its calls in canonical pre-order from `*cur` (moved
  // past them), to the pattern tree under `node`. A call's children are
  // the ones its sibling links list, in any order for the own time (a
  // union of intervals) and in canonical order for the recursion. `iv`:
  // scratch for InstanceOwnTime, kept by the caller across instances, so
  // that no call allocates.
  using Intervals = std::vector<std::pair<TimeNs, TimeNs>>;
  void Accumulate(const uint32_t*& cur, TimeNs parent_call, PatternNode* node,
                  Intervals* iv) {
    const uint32_t idx = *cur++;
    const Pair& p = pairs_[idx];
    size_t children = 0;
    for (uint32_t s = p.first_child; s != kNone; s = pairs_[s].next_sibling) {
      ++children;
    }
    const std::string& op = op_names_[table_.OpOf(idx)];
    if (node->node.empty()) {
      node->node = names_[p.callee];
      node->op = op;
      node->children.resize(children);
    } else if (op != node->op && !node->op_mixed) {
      node->op_mixed = true;  // grouped by node only: no one op to name
      node->op.clear();
    }
    if (!p.imputed) {
      node->latency.Add(p.ret - p.call);
      node->own_time.Add(InstanceOwnTime(p, iv));
    }
    node->call_delay.Add(p.call - parent_call);
    for (size_t i = 0; i < children; ++i) {
      Accumulate(cur, p.call, &node->children[i], iv);
    }
  }

  // The latency of one call not covered by its children: the union of their
  // intervals, each clipped to the call's own span, so parallel children
  // count once (the per-instance form of OwnTimeSeconds in output.h).
  TimeNs InstanceOwnTime(const Pair& p, Intervals* scratch) const {
    const TimeNs lat = p.ret - p.call;
    if (p.first_child == kNone) return lat;
    Intervals& iv = *scratch;
    iv.clear();
    for (uint32_t s = p.first_child; s != kNone; s = pairs_[s].next_sibling) {
      const Pair& cp = pairs_[s];
      TimeNs a =
          std::clamp<TimeNs>(cp.call - p.call, 0, std::max<TimeNs>(lat, 0));
      TimeNs b =
          std::clamp<TimeNs>(cp.ret - p.call, 0, std::max<TimeNs>(lat, 0));
      if (b > a) iv.emplace_back(a, b);
    }
    const TimeNs covered = UnionLength(&iv);
    return lat - covered;
  }

  // Only roots called in [from, until) are counted (a stream driver's
  // segment owns those), and the patterns are left in canonical order,
  // without signatures, for PatternMerger to add up.
  void OwnOnly(TimeNs from, TimeNs until) {
    from_ = from;
    until_ = until;
    display_ = false;
  }

  bool Owned(const Pair& p) const { return p.call >= from_ && p.call < until_; }

  // An example request as observed, children in call order.
  ExampleCall BuildExample(uint32_t idx, TimeNs root_call) const {
    const Pair& p = pairs_[idx];
    ExampleCall e;
    e.node = names_[p.callee];
    e.caller = names_[p.caller];
    e.op = op_names_[table_.OpOf(idx)];
    e.start_ns = p.call - root_call;
    e.latency_ns = p.ret - p.call;
    std::vector<uint32_t> kids;
    for (uint32_t s = p.first_child; s != kNone; s = pairs_[s].next_sibling)
      kids.push_back(s);
    std::sort(kids.begin(), kids.end(), [&](uint32_t a, uint32_t b) {
      if (pairs_[a].call != pairs_[b].call)
        return pairs_[a].call < pairs_[b].call;
      return a < b;
    });
    for (uint32_t k : kids) e.children.push_back(BuildExample(k, root_call));
    return e;
  }

  // Step 5 (5.1.1.4): a tree from every call without candidate parents,
  // aggregated with every other tree of the same shape. Besides the
  // distributions, each pattern keeps its slowest and median instance and
  // a timeline of buckets: memory per pattern, not per instance.
  //
  // The roots are cut into `parts` stretches of time, each on a thread of
  // its own. A part names the shapes of its roots in the order it first
  // meets them and adds each instance to a pattern of its own; the parts'
  // lists, read in order, number the patterns as one pass would, and their
  // patterns are merged in that order. Everything a part adds merges
  // exactly: counts and histogram bins are integers, the histograms' sums
  // and the total latency are integer nanoseconds (exact below 2^53), the
  // slowest and median instances are the earliest of the equals. What
  // needs every part first is added after, from each part's list of
  // roots, on the parts' threads again: the timeline (whose buckets need
  // the span of every part's roots) and the median (which needs the p50).
  // Parts are stretches of roots, not sets of patterns: one pattern may
  // hold most of a trace's calls, and a part that owned it would hold the
  // whole pass.
  Status FindCallPaths(int threads, std::vector<Pattern>* patterns) {
    root_pattern_.assign(pairs_.size(), kNone);
    struct Root {
      uint32_t pattern;  // the part's local id until the merge
      uint32_t call;
    };
    struct Part {
      std::vector<std::string> sigs;  // by local id, first seen first
      std::vector<uint32_t> first;    // the root each was first seen at
      std::vector<Pattern> patterns;  // by local id
      std::vector<uint32_t> slowest;  // by local id: the slowest root
      std::vector<Root> roots;        // in root order
      // The first and last of its roots' calls (the timeline's span).
      TimeNs first_call = std::numeric_limits<TimeNs>::max(), last_call = 0;
      uint64_t unfinished = 0;
      Status status = Status::Ok();
    };
    auto latency = [&](uint32_t i) { return pairs_[i].ret - pairs_[i].call; };
    // The slowest of two roots, the earlier of equals.
    auto slower = [&](uint32_t a, uint32_t b) {
      return latency(a) > latency(b) || (latency(a) == latency(b) && a < b);
    };
    // Parts of the calls in index order, cut as the threads go (a part is
    // split when a thread runs out): each part's patterns depend only on
    // its roots, and the parts merge in order below. (A part costs a shape
    // table and its patterns' histograms, so no part is cut shorter than
    // 2^15 calls: about 6 ms of this walk on one thread.)
    std::vector<Part> part_of = WalkSplittingRanges<Part>(
        threads, static_cast<uint32_t>(pairs_.size()), 1u << 15,
        [&](Part& mine, SplitRange& items, int) {
          ShapeTable table(*this);
          KeyIndex patterns_met;       // (caller, root shape) -> local id
          std::vector<uint32_t> flat;  // one instance's calls, canonical order
          Intervals iv;
          for (uint32_t begin, end; items.Claim(1024, &begin, &end);) {
            for (uint32_t i = begin; i < end; ++i) {
              const Pair& p = pairs_[i];
              if (p.ret < 0 || p.cand_end != p.cand_begin || !Owned(p)) {
                continue;
              }
              if (p.imputed) {  // an incomplete instance: latency unknown
                ++mine.unfinished;
                continue;
              }
              mine.first_call = std::min(mine.first_call, p.call);
              mine.last_call = std::max(mine.last_call, p.call);
              InstNode inst;
              mine.status = BuildInstance(i, 0, &table, &inst);
              if (!mine.status.ok()) {
                // The merge reports the first part's error: leave nothing
                // of this part for a thread to take on.
                while (items.Claim(~0u, &begin, &end)) {
                }
                return;
              }
              // Two local ids may share a signature (node names holding
              // "->"): the merge below joins patterns by signature.
              const auto [local, inserted] =
                  patterns_met.Insert(uint64_t{p.caller} << 32 | inst.shape);
              if (inserted) {
                mine.sigs.push_back(names_[p.caller] + "->" +
                                    table.key(inst.shape));
                mine.first.push_back(i);
                mine.patterns.emplace_back();
                mine.slowest.push_back(i);
              }
              mine.roots.push_back({local, i});
              flat.clear();
              Flatten(inst, &flat);
              const uint32_t* cur = flat.data();
              Pattern& pat = mine.patterns[local];
              ++pat.count;
              pat.total_latency_ns += latency(i);
              Accumulate(cur, p.call, &pat.root, &iv);
              if (slower(i, mine.slowest[local])) mine.slowest[local] = i;
            }
          }
        });
    const int parts = static_cast<int>(part_of.size());
    // Local ids to global ones, in the order of first appearance, and each
    // part's patterns into the result.
    std::unordered_map<std::string, size_t> index;
    std::vector<uint32_t> slowest;
    TimeNs first = std::numeric_limits<TimeNs>::max(), last = 0;
    for (Part& part : part_of) {
      BBPROF_RETURN_IF_ERROR(part.status);
      stats_.unfinished_roots += part.unfinished;
      first = std::min(first, part.first_call);
      last = std::max(last, part.last_call);
      std::vector<uint32_t> global(part.sigs.size());
      for (size_t l = 0; l < part.sigs.size(); ++l) {
        auto [it, inserted] = index.try_emplace(part.sigs[l], patterns->size());
        Pattern& from = part.patterns[l];
        if (inserted) {
          patterns->push_back(std::move(from));
          patterns->back().caller = names_[pairs_[part.first[l]].caller];
          patterns->back().shape = std::move(part.sigs[l]);
          slowest.push_back(part.slowest[l]);
        } else {
          Pattern& pat = (*patterns)[it->second];
          MergeNode(from.root, &pat.root);
          pat.count += from.count;
          pat.total_latency_ns += from.total_latency_ns;
          uint32_t& best = slowest[it->second];
          if (slower(part.slowest[l], best)) best = part.slowest[l];
        }
        global[l] = static_cast<uint32_t>(it->second);
      }
      part.patterns = {};
      for (Root& r : part.roots) r.pattern = global[r.pattern];
    }
    // A second pass over each part's roots, on the parts' threads: each
    // root's pattern, the timeline (its bucket is known only now, from the
    // span of every part) and the median instance, the first whose latency
    // is nearest the pattern's p50 (known only now too). The timelines
    // count integers, so each part's merge exactly; the medians, each
    // part's first nearest, give the earliest of the nearest.
    const TimeNs bucket = BucketFor(last > first ? last - first : 0);
    const size_t n_patterns = patterns->size();
    std::vector<double> p50(n_patterns);
    for (size_t k = 0; k < n_patterns; ++k)
      p50[k] = (*patterns)[k].root.latency.Quantile(0.5);
    auto off = [&](uint32_t k, uint32_t i) {
      return std::fabs(trace::NsToSeconds(latency(i)) - p50[k]);
    };
    struct alignas(64) Second {
      std::vector<uint32_t> median;
      std::vector<Timeline> timelines;
    };
    std::vector<Second> second(static_cast<size_t>(parts));
    RunPartsOn(threads, parts, [&](int part) {
      std::vector<uint32_t>& median = second[part].median;
      std::vector<Timeline>& timelines = second[part].timelines;
      median.assign(n_patterns, kNone);
      timelines.resize(n_patterns);
      for (Timeline& t : timelines) t.bucket_ns = bucket;
      for (const Root& r : part_of[part].roots) {
        const Pair& p = pairs_[r.call];
        root_pattern_[r.call] = r.pattern;  // parts own distinct roots
        AddBuckets(p.call, 1, p.ret - p.call, &timelines[r.pattern]);
        const uint32_t m = median[r.pattern];
        if (m == kNone || off(r.pattern, r.call) < off(r.pattern, m)) {
          median[r.pattern] = r.call;
        }
      }
    });
    std::vector<uint32_t> median = std::move(second[0].median);
    for (size_t k = 0; k < n_patterns; ++k) {
      (*patterns)[k].timeline = std::move(second[0].timelines[k]);
    }
    for (int part = 1; part < parts; ++part) {
      for (size_t k = 0; k < n_patterns; ++k) {
        AddTimeline(second[part].timelines[k], &(*patterns)[k].timeline);
        const uint32_t m = second[part].median[k];
        if (m == kNone) continue;
        if (median[k] == kNone || off(k, m) < off(k, median[k])) median[k] = m;
      }
    }
    for (size_t k = 0; k < patterns->size(); ++k) {
      Pattern& pat = (*patterns)[k];
      pat.median = {pairs_[median[k]].call,
                    BuildExample(median[k], pairs_[median[k]].call)};
      pat.slowest = {pairs_[slowest[k]].call,
                     BuildExample(slowest[k], pairs_[slowest[k]].call)};
    }
    if (display_) {
      for (Pattern& pat : *patterns) ForDisplay(group_by_op_, &pat);
    }
    return Status::Ok();
  }

  // A pattern's children in display order, and its signature.
  static void ForDisplay(bool group_by_op, Pattern* pat) {
    OrderForDisplay(&pat->root);
    pat->signature =
        pat->caller + "->" + DisplaySignature(pat->root, group_by_op);
  }

  // Spec order: children by ascending mean call delay, ties by name.
  static void OrderForDisplay(PatternNode* n) {
    for (auto& c : n->children) OrderForDisplay(&c);
    std::stable_sort(n->children.begin(), n->children.end(),
                     [](const PatternNode& a, const PatternNode& b) {
                       double da = a.call_delay.mean_s(),
                              db = b.call_delay.mean_s();
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

 private:
  const CallTable& table_;
  const Pairs& pairs_;
  const std::vector<std::string>& names_;
  const std::deque<std::string>& op_names_;
  bool group_by_op_;
  InputStats& stats_;
  std::vector<uint32_t>& root_pattern_;
  TimeNs from_ = std::numeric_limits<TimeNs>::min();
  TimeNs until_ = std::numeric_limits<TimeNs>::max();
  bool display_ = true;
};

// One pattern node of a later part into the same node of an earlier one:
// both in canonical order, so children line up one for one.
void MergeNode(const PatternNode& later, PatternNode* node) {
  if (later.op != node->op || later.op_mixed) {
    if (!node->op_mixed) {
      node->op_mixed = true;
      node->op.clear();
    }
  }
  node->latency.Merge(later.latency);
  node->call_delay.Merge(later.call_delay);
  node->own_time.Merge(later.own_time);
  for (size_t i = 0; i < node->children.size(); ++i) {
    MergeNode(later.children[i], &node->children[i]);
  }
}

// Every instance of `from` into the bucket of `into` that holds the start of
// its own bucket (a coarser bucket, in the stream driver's merge, takes a
// finer one whole).
void AddTimeline(const Timeline& from, Timeline* into) {
  for (size_t i = 0; i < from.counts.size(); ++i) {
    if (from.counts[i] == 0) continue;
    AddBuckets(from.start_ns + static_cast<TimeNs>(i) * from.bucket_ns,
               from.counts[i], from.latency_sum_ns[i], into);
  }
}

// A timeline moved to buckets of `bucket` ns.
void Rebucket(TimeNs bucket, Timeline* t) {
  if (t->bucket_ns == bucket || t->counts.empty()) {
    t->bucket_ns = bucket;
    return;
  }
  Timeline out;
  out.bucket_ns = bucket;
  AddTimeline(*t, &out);
  *t = std::move(out);
}

}  // namespace

Status FindCallPaths(const CallTable& table, bool group_by_op, int threads,
                     InputStats* stats, std::vector<Pattern>* patterns,
                     std::vector<uint32_t>* root_pattern) {
  return PatternBuilder(table, group_by_op, stats, root_pattern)
      .FindCallPaths(std::max(1, threads), patterns);
}

Status FindOwnedCallPaths(const CallTable& table, bool group_by_op, TimeNs from,
                          TimeNs until, InputStats* stats,
                          std::vector<Pattern>* patterns,
                          std::vector<uint32_t>* root_pattern) {
  std::vector<uint32_t> unused;
  PatternBuilder builder(table, group_by_op, stats,
                         root_pattern != nullptr ? root_pattern : &unused);
  builder.OwnOnly(from, until);
  return builder.FindCallPaths(1, patterns);
}

void PatternMerger::Add(std::vector<Pattern>&& part) {
  for (Pattern& later : part) {
    auto [it, inserted] = index_.try_emplace(later.shape, patterns_.size());
    if (inserted) {
      patterns_.push_back(std::move(later));
      continue;
    }
    Pattern& pat = patterns_[it->second];
    pat.count += later.count;
    pat.total_latency_ns += later.total_latency_ns;
    MergeNode(later.root, &pat.root);
    if (later.slowest.tree.latency_ns > pat.slowest.tree.latency_ns) {
      pat.slowest = std::move(later.slowest);
    }
    // The median instance: of the parts' own, the nearest the p50 so far.
    const double p50 = pat.root.latency.Quantile(0.5);
    auto off = [&](const Example& e) {
      return std::fabs(trace::NsToSeconds(e.tree.latency_ns) - p50);
    };
    if (off(later.median) < off(pat.median)) pat.median = std::move(later.median);
    const TimeNs bucket =
        std::max(pat.timeline.bucket_ns, later.timeline.bucket_ns);
    Rebucket(bucket, &pat.timeline);
    AddTimeline(later.timeline, &pat.timeline);
  }
}

std::vector<Pattern> PatternMerger::Finish() {
  // One bucket for every pattern, as one pass gives: the ladder's step
  // for the span of all the timelines.
  TimeNs first = std::numeric_limits<TimeNs>::max(), last = 0;
  TimeNs bucket = 0;
  for (const Pattern& pat : patterns_) {
    const Timeline& t = pat.timeline;
    if (t.counts.empty()) continue;
    first = std::min(first, t.start_ns);
    last = std::max(last, t.start_ns + static_cast<TimeNs>(t.counts.size() - 1) *
                                           t.bucket_ns);
    bucket = std::max(bucket, t.bucket_ns);
  }
  bucket = std::max(bucket, BucketFor(last > first ? last - first : 0));
  for (Pattern& pat : patterns_) {
    Rebucket(bucket, &pat.timeline);
    PatternBuilder::ForDisplay(group_by_op_, &pat);
  }
  index_.clear();
  return std::move(patterns_);
}

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
    return p.count ? p.total_latency_s() / static_cast<double>(p.count) : 0.0;
  };
  std::sort(patterns.begin(), patterns.end(),
            [&](const Pattern& a, const Pattern& b) {
              switch (key) {
                case SortKey::kCount:
                  if (a.count != b.count) return a.count > b.count;
                  if (a.total_latency_ns != b.total_latency_ns)
                    return a.total_latency_ns > b.total_latency_ns;
                  break;
                case SortKey::kTotalLatency:
                  if (a.total_latency_ns != b.total_latency_ns)
                    return a.total_latency_ns > b.total_latency_ns;
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

}  // namespace bbprof::nesting
