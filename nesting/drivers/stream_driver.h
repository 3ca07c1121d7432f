// The stream driver of the nesting algorithm: memory bounded by a segment
// of the trace, not by the trace (the paper's section 8 names the limit:
// the nesting algorithm "cannot currently handle traces with greater than
// a few million messages", a sliding-window version being future work).
// docs/nesting.md, "The stream driver", has the design; docs/benchmarks.md,
// "nest streamed", what it costs in accuracy.
//
// The trace is read once. Every `segment_messages` messages start a
// segment, which also reads `overlap_messages` before and after its own, so
// that the calls near its edges find their parents and children; a request
// running on past that is followed further (reach_messages). Each
// segment runs the passes of the in-memory driver (drivers.h) on its own,
// learning its own scoreboards, timelines and clocks, and owns the root
// calls made between its first and its next segment's first message: each
// request is counted by exactly one segment, whole. The segments' patterns
// are added up in segment order (PatternMerger), so the result is the same
// on any number of threads. A trace of one segment gives exactly the
// in-memory result.
#ifndef BBPROF_NESTING_DRIVERS_STREAM_DRIVER_H_
#define BBPROF_NESTING_DRIVERS_STREAM_DRIVER_H_

#include <cstdint>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "base/status.h"
#include "nesting/nesting.h"
#include "nesting/requests/request_export.h"
#include "trace/reader.h"

namespace bbprof::nesting {

struct StreamOptions {
  // Messages a segment owns: 2 Mi, the size of the trace the in-memory
  // driver's figures are measured on, about 250 MB held per segment in
  // flight (docs/benchmarks.md).
  uint64_t segment_messages = uint64_t{1} << 21;
  // Messages a segment reads before and after its own (0: a thirty-second
  // of segment_messages, 65,536 by default): context for the calls near
  // its edges. The messages of two overlaps are nested by two segments, so
  // this is the stream's extra work (a sixteenth of the trace by default);
  // the reach below, not the overlap, follows the requests that run on
  // past a segment's edge, so the overlap is kept narrow. A request whose
  // calls reach
  // further than this and the reach past its segment's edge is cut: its
  // root counts as unfinished, or a call whose parent lies before is taken
  // for a root.
  uint64_t overlap_messages = 0;
  // How far past its overlap a segment reaches (0: nine overlaps, 589,824
  // messages by default, so that overlap and reach together are five
  // sixteenths of a segment; at most what leaves the next segment's overlap
  // clear). A segment stores this many messages after its overlap and
  // nests them only while a call it owns waits for its return
  // (SegmentTail, drivers.h); and the calls still open where a segment
  // starts, made within this many messages before it, are carried into it,
  // so that a request running across the boundary keeps its root as a
  // candidate parent. A request longer than the overlap and this reach is
  // still cut.
  uint64_t reach_messages = 0;

  // A run split across processes (the MPI driver, nesting/drivers/mpi_driver.h):
  // every process reads the whole trace, and nests only the segments k with
  // k % ranks == rank. `gather` is then called once on every process with
  // its nested segments, each as (k, bytes); on rank 0 it returns every
  // process's (its own included, in any order), elsewhere nothing. Rank 0
  // adds them up in segment order: the result of one process, to the byte.
  int rank = 0, ranks = 1;
  using Parts = std::vector<std::pair<uint64_t, std::string>>;
  std::function<Result<Parts>(const Parts&)> gather;

  // Seeking instead of scanning, under several ranks (the block index of
  // the binary form makes finding a segment a seek, not a scan): when the
  // reader's file (reader.path()) is an uncompressed binary trace with a
  // block index, each rank reads only the blocks that hold its own
  // segments (trace::OpenBinaryBlockRange, with these reader options), and
  // rank 0 also the file's checksum and its last block. The segments, and
  // so the result, are exactly those of a whole read. Otherwise, or
  // without `seek`, every rank reads the whole trace, and
  // StreamReport::whole_read_why says why.
  bool seek = false;
  trace::ReaderOptions seek_options;

  // With a spool, every segment also writes the requests it owns to it
  // (RequestSpool::AddSegment), for `nest --requests` in bounded memory.
  // Under several ranks each spools its own segments; the MPI driver
  // brings them to rank 0's spool (RequestSpool::ReceiveFrom).
  RequestSpool* requests = nullptr;
};

struct StreamReport {
  uint64_t segments = 0;
  // The most messages held at once by the segments read or being nested.
  uint64_t most_messages_held = 0;
  // Messages this process decoded: the whole trace, or under seeking only
  // those of the blocks its segments need.
  uint64_t messages_read = 0;
  // Calls carried into a segment from before its start, and messages
  // nested past a segment's overlap while its calls waited for returns.
  uint64_t calls_carried = 0, tail_messages = 0;
  bool seeked = false;
  std::string whole_read_why;  // with StreamOptions::seek, why not
};

// Params::threads segments are nested at once, each on one thread. Under
// several ranks, only rank 0's result is the trace's; the others' is empty.
Result<NestingResult> RunNestingStream(trace::TraceReader& reader,
                                       const Params& params,
                                       const StreamOptions& options,
                                       StreamReport* report);

}  // namespace bbprof::nesting

#endif  // BBPROF_NESTING_DRIVERS_STREAM_DRIVER_H_
