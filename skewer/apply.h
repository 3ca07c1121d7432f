// ApplySkew: adds per-node clock skew to a trace, or removes it, streaming
// (paper section 7.5.6: "a simple program, skewer, to add per-node clock skew
// to an existing trace ... also useful to de-skew a real-world trace").
//
// Each record's timestamp is moved by the clock model (skewer/clock_model.h)
// of the node whose clock stamped it (Stamp), and the output is re-sorted
// through a bounded reorder buffer: a record leaves once no later input can
// land before it. Inputs arrive in time order and every clock map is
// monotone, so once the input has reached time t every future output time is
// at least min over nodes of C_n(t); the buffer therefore holds only the
// records within the spread of the nodes' shifts (max shift - min shift,
// e.g. 100 ms of traffic), never the trace. Ties keep input order.
#ifndef BBPROF_SKEWER_APPLY_H_
#define BBPROF_SKEWER_APPLY_H_

#include <optional>
#include <string>
#include <vector>

#include "base/status.h"
#include "skewer/clock_model.h"
#include "trace/writer.h"

namespace bbprof::skewer {

enum class Direction { kAdd, kRemove };

struct ApplyOptions {
  Direction direction = Direction::kAdd;
  // Models, stamp convention and (optional) reference. Adding without a
  // reference uses the first timestamp rounded down to a whole second;
  // removing without one takes it from the input's "#meta skewer op=add"
  // line when there is one.
  SkewTable table;
  trace::TraceFormat format = trace::TraceFormat::kText;
  // Stamp::kHost: the capture host when the trace's #meta does not name it.
  std::string host;
  bool quiet = false;
};

struct ApplySummary {
  uint64_t records = 0;
  uint64_t shifted = 0;  // records whose timestamp changed
  // Records stamped by a slow clock on its lost nanosecond (clock_model.h):
  // removal will give them back 1 ns late.
  uint64_t lost_values = 0;
  uint64_t max_buffered = 0;  // peak reorder-buffer size
  // Records with the same input timestamp as the previous one but a
  // different clock: their relative order is decided by the skew and cannot
  // be recovered by removing it (the only inexactness of a round trip at
  // microsecond resolution).
  uint64_t mixed_ties = 0;
  TimeNs reference = 0;
  std::string capture_host;  // Stamp::kHost
  // Nodes of the table never seen in the trace. When adding, the output is
  // not written if this is not empty (a misspelt --offset is a usage error).
  std::vector<std::string> unknown_nodes;
  // Stamp::kHost: table nodes other than the capture host (their clocks
  // stamp nothing in this trace). Adding refuses them too.
  std::vector<std::string> unused_nodes;
  bool written = false;
};

Result<ApplySummary> ApplySkew(const std::string& input,
                               const std::string& output,
                               const ApplyOptions& options);

// The capture host a per-host trace names in "#meta ... capture_host=NAME"
// (the last one wins), if any.
std::optional<std::string> CaptureHost(const std::vector<std::string>& meta);

}  // namespace bbprof::skewer

#endif  // BBPROF_SKEWER_APPLY_H_
