// Where `bbprof capture` writes: one trace file, or a directory of traces
// rotated by size or by capture time (tcpdump's -C and -G). Every file is a
// complete, valid trace on its own: it starts with the capture's #meta
// header lines, ends with the counters at the time it closed, and appears
// atomically when closed (a reader never sees half a file).
//
// A file (not standard output, a device or a FIFO) is written as NAME.partial
// (".partial" goes before a .gz/.zst suffix: out.trace.partial.gz) and
// renamed to NAME only when it is complete: rotated, or closed at the end of
// a capture that did not fail and was not an interrupted offline read. So a
// failed or interrupted `capture -r` never replaces an existing NAME with a
// partial trace; what it decoded is in NAME.partial beside it.
#ifndef BBPROF_CAPTURE_TRACE_OUTPUT_H_
#define BBPROF_CAPTURE_TRACE_OUTPUT_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "base/status.h"
#include "trace/node_table.h"
#include "trace/writer.h"

namespace bbprof::capture {

struct OutputOptions {
  std::string path;  // a file, "-", or (with `directory`) a folder
  bool directory = false;
  trace::TraceFormat format = trace::TraceFormat::kText;
  uint64_t rotate_bytes = 0;             // 0: no size rotation
  trace::TimeNs rotate_interval = 0;     // 0: no time rotation
  std::vector<std::string> header_meta;  // written at the top of every file
};

class TraceOutput {
 public:
  // `footer` returns the #meta bodies to write at the end of each file.
  TraceOutput(OutputOptions options, const trace::NodeTable* nodes,
              std::function<std::vector<std::string>()> footer)
      : options_(std::move(options)),
        nodes_(nodes),
        footer_(std::move(footer)) {}

  // Writes one record, opening the first file on demand.
  Status Write(const trace::Record& rec);
  // Whether the current file is due to be closed before a record stamped
  // `ts` (its size or time span reached the limit).
  bool RotationDue(trace::TimeNs ts) const;
  // Closes the current file (footer included); the next Write opens a new one.
  Status Rotate();
  // Closes the last file; an empty capture still leaves one valid trace.
  // `complete` false leaves it under its .partial name.
  Status Close(bool complete);

  // The files written, under the names they were left with.
  const std::vector<std::string>& files() const { return files_; }
  // Whether the last file was left under its .partial name.
  bool left_partial() const { return left_partial_; }

 private:
  Status OpenNext(trace::TimeNs first_ts);
  Status CloseCurrent(bool complete);

  OutputOptions options_;
  const trace::NodeTable* nodes_;
  std::function<std::vector<std::string>()> footer_;
  std::unique_ptr<trace::TraceWriter> writer_;
  trace::TimeNs file_start_ = 0;
  uint64_t sequence_ = 0;
  std::vector<std::string> files_;
  std::string final_path_;  // where a complete .partial file is renamed to
  bool left_partial_ = false;
};

// NAME with ".partial" added before a .gz or .zst suffix, so that the
// partial file still says how it is compressed.
std::string PartialName(const std::string& path);

// The name of the n-th rotated file (from 1) whose first record is stamped
// `first_ts`: capture-20261122T101500Z-00001.trace (.bbt for binary).
std::string RotatedFileName(trace::TimeNs first_ts, uint64_t n,
                            trace::TraceFormat format);

}  // namespace bbprof::capture

#endif  // BBPROF_CAPTURE_TRACE_OUTPUT_H_
