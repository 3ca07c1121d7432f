// What the drivers of the nesting algorithm share (docs/nesting.md,
// "Passes and their state"): the in-memory driver (memory_driver.cc) runs
// every pass over the whole trace; the stream driver (stream_driver.cc)
// runs the same passes over one segment of the trace at a time, through
// AssignSegment, and adds the segments' patterns up.
#ifndef BBPROF_NESTING_DRIVERS_H_
#define BBPROF_NESTING_DRIVERS_H_

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
};
// With `labels`, every call's callid too (CallLabels::callids), for
// FillCallDetails.
Status AssignSegment(trace::TraceReader& reader, const Params& params,
                     AssignedSegment* out, CallLabels* labels = nullptr);

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

#endif  // BBPROF_NESTING_DRIVERS_H_
