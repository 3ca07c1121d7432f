// The MPI driver of the nesting algorithm, across machines:
// `mpirun -np N bbprof nest TRACE` splits the stream driver's segments
// (stream_driver.h) among N processes. Every rank reads the trace (on
// shared storage) and nests the segments k with k % N == its rank, on
// --threads segments at once; the segments' patterns and counts go to rank
// 0 in one gather, and rank 0 adds them up in segment order and writes
// every output. The result is the bytes one process writes with
// --search stream; with --requests, every rank's spooled requests follow
// to rank 0 (RequestSpool::SendTo, ReceiveFrom). Built with -DBBPROF_MPI=ON (Open MPI from Debian);
// docs/nesting.md, "Across machines: MPI", says what crosses the network.
#ifndef BBPROF_NESTING_DRIVERS_MPI_DRIVER_H_
#define BBPROF_NESTING_DRIVERS_MPI_DRIVER_H_

#include "base/status.h"
#include "nesting/drivers/stream_driver.h"
#include "nesting/nesting.h"
#include "trace/reader.h"

namespace bbprof::nesting {

// Whether this process was started by mpirun (or another MPI launcher) as
// one of two or more ranks: what its environment says, before MPI starts.
bool MpiLaunched();

// The stream driver across the MPI job's ranks. Starts MPI on the first
// call (it is finalized at exit). *rank gets this process's rank: only rank
// 0's result is the trace's; the others' is empty. With
// options.requests, each rank spools its own segments' requests and rank
// 0's spool receives every other rank's (RequestSpool::ReceiveFrom), for
// rank 0 to write; `spool_ready` is how making this rank's spool went (a
// failure on any rank ends the run on all of them before they nest).
Result<NestingResult> RunNestingMpi(trace::TraceReader& reader,
                                    const Params& params, StreamOptions options,
                                    StreamReport* report, int* rank,
                                    const Status& spool_ready = Status::Ok());

}  // namespace bbprof::nesting

#endif  // BBPROF_NESTING_DRIVERS_MPI_DRIVER_H_
