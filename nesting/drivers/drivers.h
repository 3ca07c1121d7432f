// What the drivers of the nesting algorithm share (docs/nesting.md,
// "Passes and their state"): the in-memory driver (memory_driver.cc) runs
// every pass over the whole trace; the stream driver (stream_driver.cc)
// runs the same passes over one segment of the trace at a time, through
// AssignSegment, and adds the segments' patterns up.
#ifndef BBPROF_NESTING_DRIVERS_DRIVERS_H_
#define BBPROF_NESTING_DRIVERS_DRIVERS_H_

#include <cstdint>
#include <vector>

#include "base/status.h"
#include "nesting/call_table.h"
#include "nesting/nesting.h"
#include "trace/reader.h"

namespace bbprof::nesting {

// Steps 1-4 of Figure 4 with the refinements (pairing, clock skew, the
// candidates, scoreboards, parent choice, timeline passes) over everything
// `reader` gives: every call's parent in `table`, at the times as stamped.
// `result` has the parameters, the skew and clock offsets and the input's
// counts; no patterns. Shows no progress.
struct AssignedSegment {
  CallTable table;
  NestingResult result;
  // With a SegmentTail: the records read past its base (0 without one).
  uint64_t tail_records = 0;
};

// A stream segment's end (docs/nesting.md, "The stream driver"): the
// reader holds `base` records and then a stored tail. The tail is read only
// as far as the calls the segment owns (called in [own_from, own_until))
// still wait for a return that may come: a call open at the base's end is
// waited for while its age is below twice the longest call into its callee
// returned so far in the segment (by callee, not by edge: a client seen
// once has no history, its server has); a call into a callee with none
// returned, or older than that, is taken for lost. So a request that runs
// past the overlap is still nested whole, and a lost return costs a wait of
// about its server's latency, not the whole tail.
struct SegmentTail {
  uint64_t base = 0;
  trace::TimeNs own_from = 0, own_until = 0;
};

// The segment's calls go into `out->table`'s storage: a driver that hands
// back the table of the segment before (CallTable::Recycle) saves the
// kernel mapping and zeroing its pages again.
// With `labels`, every call's callid too (CallLabels::callids), for
// FillCallDetails. With `tail`, the reader's records past tail->base are
// read only while the segment's owned calls wait for their returns.
Status AssignSegment(trace::TraceReader& reader, const Params& params,
                     AssignedSegment* out, CallLabels* labels = nullptr,
                     const SegmentTail* tail = nullptr);

// What the requests export reads of every call of `table` (parents, times,
// nodes, the root's pattern: `root_pattern` as FindCallPaths gives it), its
// node names and, when `d->labels.callids` holds the pairer's callids, the
// calls' operations: into `d`.
void FillCallDetails(const CallTable& table,
                     const std::vector<uint32_t>& root_pattern,
                     DetailedResult* d);

// What the input was, once `reader` is at its end: its path, the bytes read
// and their CRC-32, the node names and those folded, the "#meta" lines
// (at most kMaxInputMeta of kMaxInputMetaChars), into `in`.
void TakeReaderStats(trace::TraceReader& reader, InputStats* in);

}  // namespace bbprof::nesting

#endif  // BBPROF_NESTING_DRIVERS_DRIVERS_H_
