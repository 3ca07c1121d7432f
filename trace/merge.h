// MergeTraces: several per-host traces into one (paper section 6.5). A k-way
// streaming merge in timestamp order over readers that share one NodeTable
// (ties go to the earlier input, so output is deterministic), with removal
// of the duplicates that sniffing both ends of a link produces: the same
// kind, sender, receiver and callid seen in a *different* input within the
// dedup window. One input's own repeated messages are never dropped. An
// optional renaming map turns addresses into names. Memory: one buffer per
// input plus the messages inside the dedup window, unless inputs must be
// sorted first (--sort), which holds them in memory.
#ifndef BBPROF_TRACE_MERGE_H_
#define BBPROF_TRACE_MERGE_H_

#include <functional>
#include <map>
#include <string>
#include <vector>

#include "base/status.h"
#include "trace/reader.h"
#include "trace/record.h"
#include "trace/writer.h"

namespace bbprof::trace {

struct MergeOptions {
  TimeNs dedup_window = 1'000'000;  // 1 ms
  std::map<std::string, std::string> rename;  // old name -> new name
  bool sort_inputs = false;
  TraceFormat format = TraceFormat::kText;
  // Per input (empty = none): a correction applied to each timestamp as it is
  // read, before merging and dedup, e.g. removing the input's capture host's
  // clock skew (merge --offsets, skewer/). It must be non-decreasing so that
  // a sorted input stays sorted and the merge stays streaming.
  std::vector<std::function<TimeNs(TimeNs)>> input_clock;
  // More "#meta" bodies, written after the "merged=" line.
  std::vector<std::string> extra_meta;
  // How inputs are opened (null: OpenTraceReader).
  TraceOpener open;
};

struct MergeSummary {
  uint64_t read = 0, written = 0, duplicates = 0;
};

Result<MergeSummary> MergeTraces(const std::vector<std::string>& inputs,
                                 const std::string& output,
                                 const MergeOptions& options);

// Reads a renaming map: lines "OLD NEW", '#' comments, blank lines.
Result<std::map<std::string, std::string>> LoadRenameMap(const std::string& path);

}  // namespace bbprof::trace

#endif  // BBPROF_TRACE_MERGE_H_
