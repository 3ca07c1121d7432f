// Step 1 of the nesting algorithm (section 5.1.1.1, Figure 4's "find call
// pairs"): match each RET to its CALL, and what the later steps need of the
// pairs before candidates are sought: external clients folded, callees
// keyed with their ops, lost returns imputed, the pairs in return order.
// The pairer takes records one at a time from whichever driver reads the
// trace (memory_driver.cc today); it never sees a reader.
#ifndef BBPROF_NESTING_STEPS_CALL_PAIRS_H_
#define BBPROF_NESTING_STEPS_CALL_PAIRS_H_

#include <cstdint>
#include <string>

#include "base/status.h"
#include "nesting/call_table.h"
#include "nesting/nesting.h"
#include "trace/pending_calls.h"
#include "trace/record.h"

namespace bbprof::nesting {

// The stream driver's tracker of the calls open at a segment's start
// (stream_driver.cc, OpenCalls) follows the same rule; a change to it
// belongs in both. (They are not one template: shared, the pairer's hot
// path, the per-record loop of step 1, comes out slower; docs/nesting.md,
// "The stream driver".)
//
// Matches returns to calls by (sender, receiver, callid); where callids are
// absent or repeat, each return takes the earliest unmatched call with the
// same key (FIFO). Pairs are kept in call order; ret_order records the
// order in which they returned.
//
// Under a skew window w (7.5.6) a return stamped by a slow clock can come
// before its own call: such a return waits up to w for a call with its key
// instead of being dropped, and the pair keeps the observed (negative)
// latency. Without this, every call faster than the skew would be lost
// with its return, and its subtree with it.
class CallPairer {
 public:
  // `path` names the input in errors. `labels` (may be null) receives
  // every call's callid.
  CallPairer(const Params& params, std::string path, CallTable* table,
             InputStats* stats, CallLabels* labels);
  // One record, in trace order.
  Status Add(const trace::Record& rec);
  // After the last record: the counts of stats (messages, pairs, unmatched
  // calls and returns, evictions, duration).
  void Finish();
  // Some CALL carried a pathid (with Params::use_pathids).
  bool any_pathid() const { return any_pathid_; }
  // Calls f(index into table->pairs) for every call still waiting for its
  // return, oldest first.
  template <class F>
  void ForEachOpen(F&& f) const {
    open_.ForEach(f);
  }
  // The time of the last record added.
  trace::TimeNs last_ts() const { return last_ts_; }

 private:
  // Drops early returns older than `now - w_`: no call can claim them.
  void ExpireEarly(trace::TimeNs now);

  const Params& params_;
  std::string path_;
  CallTable* table_;
  InputStats* stats_;
  CallLabels* labels_;
  // Calls waiting for their return, keyed by trace::PendingCallKey (a
  // numeric callid of a binary trace as its number, any other as text),
  // bounded by Params::max_pending_calls: an evicted call stays in pairs
  // unmatched, like one whose return was lost (trace/pending_calls.h).
  trace::PendingCalls<uint32_t> open_;
  // Returns waiting for their call (their times, by key), bounded the
  // same way: one evicted past the limit counts as unmatched.
  trace::PendingCalls<trace::TimeNs> early_;
  // Each of two clocks may be up to the skew window off, so a return can
  // precede its call by up to twice it.
  trace::TimeNs w_;
  bool first_ = true;
  bool any_pathid_ = false;
  trace::TimeNs first_ts_ = 0, last_ts_ = 0;
  trace::PendingCallKey key_;
};

// Beyond the paper: external clients fold into groups (client_folding.h),
// once calls are paired, since callids are per caller. Renames
// table->names.
void FoldExternalClients(const Params& params, CallTable* table);

// The node a call's callee is keyed as in the scoreboards and timeline
// edges: the node itself, or with Params::op_keys the pair (node, op) as
// a node id of its own (numbered after the real nodes, within the 21 bits
// a scoreboard key gives each node; past them, the node alone).
void KeyCallees(const Params& params, CallTable* table);

// Beyond the paper: a call without a return (its return lost to the
// sniffer, or still in flight when the capture ended) gets an assumed
// return at its edge's 99th-percentile latency, so that it stays a
// candidate parent for the calls it caused. Dropping it (the paper's
// rule) leaves its children without their true parent, and they are
// nested under a concurrent call of the same node, making two instances
// wrong. Its latency is unknown: it is left out of latency statistics.
// Edges with no matched call keep their calls unmatched.
void ImputeLostReturns(const InputStats& stats, CallTable* table);

// Early returns (skew window) and assumed ones joined ret_order out of
// return-time order: restores the order the candidate sweep relies on.
// The same order on any number of threads.
void SortByReturn(CallTable* table, int threads = 1);

}  // namespace bbprof::nesting

#endif  // BBPROF_NESTING_STEPS_CALL_PAIRS_H_
