// The state the passes of the nesting algorithm (section 5.1, Figure 4)
// share: every call of the trace as a Pair, in the order its CALL record
// came, with the orders the passes walk them in, the candidate lists of
// step 2 and the node and operation names. Step 1 (call_pairs.h) fills it;
// the skew pass (skew_estimation.h) moves its times; steps 2 to 4
// (candidates.h, scoreboards.h, parent_choice.h) and the timeline passes
// (timeline.h) fill the candidates and the parent links; the pattern table
// (pattern_table.h) reads it. No pass knows which driver (memory_driver.cc)
// built it, nor from what reader.
#ifndef BBPROF_NESTING_CALL_TABLE_H_
#define BBPROF_NESTING_CALL_TABLE_H_

#include <cstdint>
#include <deque>
#include <limits>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "base/huge_pages.h"
#include "trace/record.h"

namespace bbprof::nesting {

inline constexpr uint32_t kNone = std::numeric_limits<uint32_t>::max();

// One call (5.1.1.1): its times, its edge, its candidates (a range of
// CallTable::cands) and its place in the assignment (a parent and a list of
// children linked through next_sibling).
struct Pair {
  trace::TimeNs call = 0;
  trace::TimeNs ret = -1;  // -1 until matched
  trace::NodeId caller = 0;
  trace::NodeId callee = 0;
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

// The table's per-call arrays are on huge pages where large
// (base/huge_pages.h): the passes read them by index all over.
using Pairs = HugeVector<Pair>;

struct CallTable {
  std::vector<std::string> names;  // by NodeId, after client folding
  Pairs pairs;  // in the order of the CALL records
  // The matched pairs (and the imputed ones) in return order.
  std::vector<uint32_t> ret_order;
  // The pairs in corrected call order while clocks are corrected (see
  // skew_estimation.h); empty: index order, the order of the trace.
  std::vector<uint32_t> call_order;
  // Step 2's candidate parents: pair i's are cands[cand_begin, cand_end).
  HugeVector<uint32_t> cands;
  // Operations: per pair its op's id into op_names (0: none, ""); see OpOf.
  std::vector<uint32_t> op_of;
  // A deque: op_ids holds views of its strings, which must not move.
  std::deque<std::string> op_names{std::string()};
  std::unordered_map<std::string_view, uint32_t> op_ids;
  std::vector<trace::NodeId> key_callee;  // see KeyCallees; empty: callees
  // Per pair, the value of the id its op carries (/item/k7: k7), numbered
  // from 1 (0: none; empty: no op carries one); see KeyCallees.
  std::vector<uint32_t> id_of;

  // A call's op id (0: none). op_of stays empty until the first op, so a
  // trace without ops costs nothing, and may end short of pairs.
  uint32_t OpOf(uint32_t i) const { return i < op_of.size() ? op_of[i] : 0; }
  uint32_t IdOf(uint32_t i) const { return i < id_of.size() ? id_of[i] : 0; }
  uint32_t InternOp(std::string_view op) {
    if (op.empty()) return 0;
    auto it = op_ids.find(op);
    if (it != op_ids.end()) return it->second;
    op_names.emplace_back(op);
    const auto id = static_cast<uint32_t>(op_names.size() - 1);
    op_ids.emplace(op_names.back(), id);
    return id;
  }
  // The node a call's callee is keyed as in the scoreboards and timeline
  // edges (KeyCallees in call_pairs.h).
  trace::NodeId KeyedCallee(uint32_t i) const {
    return key_callee.empty() ? pairs[i].callee : key_callee[i];
  }
  // The scoreboard of child call `child` under candidate parent `parent`:
  // (A, B, C) of 5.1.1.2, B and C keyed with their ops (KeyCallees).
  uint64_t BoardKey(uint32_t parent, uint32_t child) const {
    return TripleKey(pairs[parent].caller, KeyedCallee(parent),
                     KeyedCallee(child));
  }
  static uint64_t TripleKey(trace::NodeId a, trace::NodeId b, trace::NodeId c) {
    return (static_cast<uint64_t>(a) << 42) | (static_cast<uint64_t>(b) << 21) |
           static_cast<uint64_t>(c);
  }
  static uint64_t EdgeKey(const Pair& p) {
    return static_cast<uint64_t>(p.caller) << 32 | p.callee;
  }
  // Empties the table but keeps the storage of its per-call vectors, for a
  // driver that nests one segment after another (AssignSegment): the next
  // segment's calls go into pages already mapped, where new ones cost the
  // kernel a fault and a zeroing each (docs/benchmarks.md). Every member
  // not named here starts as in a new table.
  void Recycle() {
    CallTable fresh;
    const auto keep = [](auto& from, auto& to) {
      from.clear();
      to = std::move(from);
    };
    keep(pairs, fresh.pairs);
    keep(ret_order, fresh.ret_order);
    keep(call_order, fresh.call_order);
    keep(cands, fresh.cands);
    keep(op_of, fresh.op_of);
    keep(key_callee, fresh.key_callee);
    keep(id_of, fresh.id_of);
    *this = std::move(fresh);
  }
  // The pair that is k-th in call order.
  uint32_t InCallOrder(size_t k) const {
    return call_order.empty() ? static_cast<uint32_t>(k) : call_order[k];
  }
};

// Deepest causal chain we follow; a deeper one means a pathological trace
// and is reported rather than risking the stack.
inline constexpr int kMaxDepth = 512;

}  // namespace bbprof::nesting

#endif  // BBPROF_NESTING_CALL_TABLE_H_
