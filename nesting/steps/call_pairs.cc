#include "nesting/steps/call_pairs.h"

#include <algorithm>
#include <functional>
#include <map>
#include <set>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "base/workers.h"
#include "nesting/bins.h"
#include "nesting/skew/skew.h"
#include "nesting/steps/client_folding.h"
#include "trace/timestamp.h"

namespace bbprof::nesting {

using trace::Kind;
using trace::NodeId;
using trace::TimeNs;

CallPairer::CallPairer(const Params& params, std::string path, CallTable* table,
                       InputStats* stats, CallLabels* labels)
    : params_(params),
      path_(std::move(path)),
      table_(table),
      stats_(stats),
      labels_(labels),
      open_(params.max_pending_calls),
      early_(params.max_pending_calls),
      w_(2 * (params.skew_auto ? kAutoSkewCap : params.skew_window)) {}

void CallPairer::ExpireEarly(TimeNs now) {
  TimeNs oldest;
  while (early_.Oldest(&oldest) && oldest < now - w_) {
    early_.PopOldest();
    ++stats_->unmatched_returns;
  }
}

Status CallPairer::Add(const trace::Record& rec) {
  Pairs& pairs = table_->pairs;
  ++stats_->messages;
  if (first_) {
    first_ts_ = rec.ts_ns;
    first_ = false;
  }
  last_ts_ = rec.ts_ns;
  if (rec.kind == Kind::kMessage) {
    ++stats_->free_messages;
    return Status::Ok();
  }
  if (pairs.size() >= kNone - 1) {
    return Status::Error(path_ +
                         ": more than 4 billion calls; split the trace");
  }
  if (rec.kind == Kind::kCall) {
    key_.Set(rec.sender, rec.receiver, rec);
    Pair p;
    p.call = rec.ts_ns;
    p.caller = rec.sender;
    p.callee = rec.receiver;
    if (const uint32_t op = table_->InternOp(rec.op);
        op != 0 || !table_->op_of.empty()) {
      table_->op_of.resize(pairs.size());  // this call's index
      table_->op_of.push_back(op);
    }
    // A call without a pathid (in a real capture: one whose protocol
    // carries no request id, as Redis) keeps pathid 0: no ground truth.
    if (params_.use_pathids && (!rec.pathid.empty() || rec.pathid_is_number)) {
      p.pathid =
          (rec.pathid_is_number ? rec.pathid_number * 0x9E3779B97F4A7C15ULL
                                : std::hash<std::string_view>()(rec.pathid)) |
          1;
      any_pathid_ = true;
    }
    // A call's callid, for a per-request export. Its op needs nothing
    // here: every call's op is interned already, and the driver hands
    // those ids over.
    if (labels_ != nullptr) {
      labels_->callids.push_back(rec.callid_is_number
                                     ? std::to_string(rec.callid_number)
                                     : std::string(rec.callid));
    }
    if (w_ > 0 && early_.size() > 0) {
      ExpireEarly(rec.ts_ns);
      if (early_.Take(key_, &p.ret)) {
        table_->ret_order.push_back(static_cast<uint32_t>(pairs.size()));
        pairs.push_back(p);
        return Status::Ok();
      }
    }
    uint32_t evicted;
    open_.Add(key_, static_cast<uint32_t>(pairs.size()), &evicted);
    pairs.push_back(p);
    return Status::Ok();
  }
  // A return travels callee -> caller.
  key_.Set(rec.receiver, rec.sender, rec);
  uint32_t idx;
  if (!open_.Take(key_, &idx)) {
    if (w_ > 0) {
      ExpireEarly(rec.ts_ns);
      TimeNs dropped;
      if (early_.Add(key_, rec.ts_ns, &dropped)) ++stats_->unmatched_returns;
    } else {
      ++stats_->unmatched_returns;
    }
    return Status::Ok();
  }
  pairs[idx].ret = rec.ts_ns;
  // A RET carries its CALL's op or none; a CALL without one takes it.
  if (table_->OpOf(idx) == 0 && !rec.op.empty()) {
    table_->op_of.resize(pairs.size());
    table_->op_of[idx] = table_->InternOp(rec.op);
  }
  table_->ret_order.push_back(idx);
  return Status::Ok();
}

void CallPairer::Finish() {
  stats_->unmatched_returns += early_.size();
  stats_->call_pairs = table_->ret_order.size();
  stats_->unmatched_calls = table_->pairs.size() - table_->ret_order.size();
  stats_->pending_calls_evicted = open_.evictions();
  stats_->duration_s = trace::NsToSeconds(last_ts_ - first_ts_);
}

void FoldExternalClients(const Params& params, CallTable* table) {
  // Two walks over every pair, in ranges on the threads: the flags are ORs
  // of the ranges', the relabelling a pair at a time (exact either way),
  // so the pass does not hold the other threads back on a long trace.
  Pairs& pairs = table->pairs;
  const size_t n_names = table->names.size();
  const int parts = RangeParts(params.threads, pairs.size());
  // Per part: the nodes that call, then those called (a byte each, so
  // that parts write their own memory).
  std::vector<std::vector<char>> seen(static_cast<size_t>(parts));
  RunRanges(parts, pairs.size(), [&](int part, size_t begin, size_t end) {
    std::vector<char>& flags = seen[part];
    flags.assign(2 * n_names, 0);
    for (size_t i = begin; i < end; ++i) {
      flags[pairs[i].caller] = 1;
      flags[n_names + pairs[i].callee] = 1;
    }
  });
  std::vector<bool> calls(n_names, false), called(n_names, false);
  for (const std::vector<char>& flags : seen) {
    for (size_t k = 0; k < n_names; ++k) {
      if (flags[k] != 0) calls[k] = true;
      if (flags[n_names + k] != 0) called[k] = true;
    }
  }
  const std::vector<uint32_t> to =
      FoldClients(calls, called, params.clients, &table->names);
  RunRanges(parts, pairs.size(), [&](int, size_t begin, size_t end) {
    for (size_t i = begin; i < end; ++i) pairs[i].caller = to[pairs[i].caller];
  });
}

namespace {

// The op a call into `node` is keyed by, per PairKey(node, op) where it is
// not the op itself. Per node, its ops are split at '/' into a head and
// path segments; where kIdVariants or more of them agree on every segment
// but one (and on their number), that segment holds an id (/item/k0 ...
// /item/k9, /user/42/orders), and it is read as a wildcard (counted in
// distinct values of the segment). Two rounds, so
// that a path with two ids (/a/1/b/2) is seen too. Ops whose templates
// agree key as one, the first of them. Routes often carry such a key,
// and keyed by every variant each board would hold a fraction of the
// samples, too few to learn from (docs/nesting.md, "Operations").
struct OpKeys {
  // Per PairKey(node, op): the op it is keyed by, where not itself.
  std::unordered_map<uint64_t, uint32_t> key;
  // Per PairKey(node, op) with an id: the values of its id segments.
  std::unordered_map<uint64_t, std::string> id;
};

OpKeys KeyOps(const CallTable& table) {
  constexpr size_t kIdVariants = 8;
  constexpr std::string_view kWild = "\x01";  // no op holds a control byte
  std::unordered_map<uint64_t, bool> seen;
  std::unordered_map<NodeId, std::vector<uint32_t>> ops_of;
  for (uint32_t i = 0; i < table.pairs.size(); ++i) {
    const uint32_t op = table.OpOf(i);
    if (op == 0) continue;
    const NodeId node = table.pairs[i].callee;
    if (seen.try_emplace(uint64_t{node} << 32 | op, true).second) {
      ops_of[node].push_back(op);
    }
  }
  OpKeys keys;
  for (auto& [node, ops] : ops_of) {
    std::sort(ops.begin(), ops.end());
    // Each op as its parts: the head, then the segments after each '/'.
    std::vector<std::vector<std::string_view>> parts(ops.size());
    for (size_t k = 0; k < ops.size(); ++k) {
      const std::string_view name = table.op_names[ops[k]];
      size_t from = 0;
      for (size_t slash; (slash = name.find('/', from)) != name.npos;
           from = slash + 1) {
        parts[k].push_back(name.substr(from, slash - from));
      }
      parts[k].push_back(name.substr(from));
    }
    const std::vector<std::vector<std::string_view>> stamped = parts;
    for (int round = 0; round < 2; ++round) {
      std::vector<std::pair<size_t, size_t>> wild;  // (op, segment)
      size_t longest = 0;
      for (const auto& p : parts) longest = std::max(longest, p.size());
      for (size_t i = 1; i < longest; ++i) {
        std::map<std::vector<std::string_view>, std::vector<size_t>> by_rest;
        for (size_t k = 0; k < parts.size(); ++k) {
          if (parts[k].size() <= i || parts[k][i] == kWild) continue;
          std::vector<std::string_view> rest = parts[k];
          rest[i] = kWild;
          by_rest[rest].push_back(k);
        }
        for (const auto& [rest, members] : by_rest) {
          // Distinct values, not ops: once an id is a wildcard, the ops of
          // /part/{id} and /price/{id} agree on all but "part" and "price".
          std::set<std::string_view> values;
          for (size_t k : members) values.insert(parts[k][i]);
          if (values.size() < kIdVariants) continue;
          for (size_t k : members) wild.emplace_back(k, i);
        }
      }
      for (const auto& [k, i] : wild) parts[k][i] = kWild;
    }
    std::map<std::vector<std::string_view>, uint32_t> first;
    for (size_t k = 0; k < ops.size(); ++k) {
      const uint32_t op = first.try_emplace(parts[k], ops[k]).first->second;
      const uint64_t node_op = uint64_t{node} << 32 | ops[k];
      if (op != ops[k]) keys.key[node_op] = op;
      std::string id;
      for (size_t i = 0; i < parts[k].size(); ++i) {
        if (parts[k][i] != kWild) continue;
        if (!id.empty()) id += '/';
        id += stamped[k][i];
      }
      if (!id.empty()) keys.id[node_op] = std::move(id);
    }
  }
  return keys;
}

}  // namespace

void KeyCallees(const Params& params, CallTable* table) {
  if (!params.op_keys || table->op_of.empty()) return;  // keyed by node alone
  constexpr NodeId kMaxKeyedNode = NodeId{1} << 21;
  const Pairs& pairs = table->pairs;
  table->key_callee.resize(pairs.size());
  const OpKeys keys = KeyOps(*table);
  std::unordered_map<uint64_t, NodeId> ids;
  auto next = static_cast<NodeId>(table->names.size());
  std::unordered_map<std::string_view, uint32_t> id_numbers;
  if (!keys.id.empty()) table->id_of.assign(pairs.size(), 0);
  for (uint32_t i = 0; i < pairs.size(); ++i) {
    const Pair& p = pairs[i];
    table->key_callee[i] = p.callee;
    uint32_t op = table->OpOf(i);
    if (op == 0) continue;
    if (auto id = keys.id.find(uint64_t{p.callee} << 32 | op);
        id != keys.id.end()) {
      table->id_of[i] =
          id_numbers
              .try_emplace(id->second,
                           static_cast<uint32_t>(id_numbers.size() + 1))
              .first->second;
    }
    if (auto k = keys.key.find(uint64_t{p.callee} << 32 | op);
        k != keys.key.end()) {
      op = k->second;
    }
    auto [it, inserted] = ids.try_emplace(uint64_t{p.callee} << 32 | op, next);
    if (inserted) {
      if (next >= kMaxKeyedNode) {
        ids.erase(it);
        continue;
      }
      ++next;
    }
    table->key_callee[i] = it->second;
  }
}

void ImputeLostReturns(const InputStats& stats, CallTable* table) {
  if (stats.unmatched_calls == 0) return;
  Pairs& pairs = table->pairs;
  // Only the edges with a lost return need their latencies (a few edges
  // out of many, on a trace where most calls returned): numbered by a
  // KeyIndex in the order of their first lost return, each pair's edge is
  // one flat lookup, not a map of every edge's latencies.
  KeyIndex lossy;
  for (const Pair& p : pairs) {
    if (p.ret < 0) lossy.Insert(CallTable::EdgeKey(p));
  }
  std::vector<std::vector<TimeNs>> latencies(lossy.size());
  for (const Pair& p : pairs) {
    if (p.ret < 0) continue;
    const uint32_t k = lossy.Find(CallTable::EdgeKey(p));
    if (k != KeyIndex::kMissing) {
      latencies[k].push_back(std::max<TimeNs>(0, p.ret - p.call));
    }
  }
  std::vector<TimeNs> p99(lossy.size(), -1);  // -1: the edge never returned
  for (size_t e = 0; e < latencies.size(); ++e) {
    std::vector<TimeNs>& v = latencies[e];
    if (v.empty()) continue;
    size_t k = v.size() - 1 - (v.size() - 1) / 100;
    std::nth_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(k),
                     v.end());
    p99[e] = v[k];
  }
  for (uint32_t i = 0; i < pairs.size(); ++i) {
    Pair& p = pairs[i];
    if (p.ret >= 0) continue;
    const TimeNs latency = p99[lossy.Find(CallTable::EdgeKey(p))];
    if (latency < 0) continue;
    p.ret = p.call + latency;
    p.imputed = true;
    table->ret_order.push_back(i);  // out of order: see SortByReturn
  }
}

void SortByReturn(CallTable* table, int threads) {
  const Pairs& pairs = table->pairs;
  auto by_return = [&](uint32_t a, uint32_t b) {
    return pairs[a].ret < pairs[b].ret;
  };
  // Returns are listed as they arrive, so mostly in order already; what
  // breaks it is mostly at the end (ImputeLostReturns appends). Sorting
  // only what follows the sorted prefix and merging the two (stably) gives
  // exactly what sorting the whole would, at a fraction of the cost: a
  // scan of the prefix instead of an n log n sort of the whole order.
  auto& order = table->ret_order;
  // The prefix is found in ranges on the threads: each range's first
  // position out of order (comparing with the element before it, across
  // the range's start too); the earliest of them is the prefix's end. The
  // scan reads every pair's return at random, which is worth splitting.
  const size_t n = order.size();
  const int parts = RangeParts(threads, n);
  std::vector<size_t> first_out(static_cast<size_t>(parts), n);
  RunRanges(parts, n, [&](int part, size_t begin, size_t end) {
    for (size_t i = std::max<size_t>(begin, 1); i < end; ++i) {
      if (by_return(order[i], order[i - 1])) {
        first_out[part] = i;
        return;
      }
    }
  });
  const auto sorted_until =
      order.begin() + static_cast<std::ptrdiff_t>(*std::min_element(
                          first_out.begin(), first_out.end()));
  if (sorted_until == order.end()) return;
  // After it, the returns that keep the running maximum stay where they
  // are, in order (moved up over the gaps), and the others are set aside,
  // sorted (stably) and merged back. The trace is in time order, so those
  // are the returns paired after later ones: a return stamped before its
  // call (a clock behind), paired when the call came, and the imputed
  // ones. On a trace whose clocks disagree by milliseconds the first of
  // them comes early, and sorting all that follows it would sort nearly
  // the whole order. The merge puts a kept return first among equals: a
  // return set aside came after the running maximum had passed its time,
  // so an equal kept one came before it, as a stable sort of the whole
  // would order them.
  const auto start = static_cast<size_t>(sorted_until - order.begin());
  trace::TimeNs most = pairs[order[start - 1]].ret;
  size_t kept = start;
  std::vector<uint32_t> late;
  for (size_t i = start; i < n; ++i) {
    const uint32_t x = order[i];
    if (pairs[x].ret >= most) {
      most = pairs[x].ret;
      order[kept++] = x;
    } else {
      late.push_back(x);
    }
  }
  std::stable_sort(late.begin(), late.end(), by_return);
  // From the back: the later of the two ends goes last.
  size_t k = n, j = late.size();
  while (j > 0) {
    if (kept > 0 && pairs[order[kept - 1]].ret > pairs[late[j - 1]].ret) {
      order[--k] = order[--kept];
    } else {
      order[--k] = late[--j];
    }
  }
}

}  // namespace bbprof::nesting
