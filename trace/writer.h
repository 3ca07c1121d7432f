// TraceWriter: writes a trace in text or binary form, streaming, to a file
// that appears atomically on Close() (or to standard output for "-").
#ifndef BBPROF_TRACE_WRITER_H_
#define BBPROF_TRACE_WRITER_H_

#include <memory>
#include <string>
#include <string_view>

#include "base/status.h"
#include "trace/node_table.h"
#include "trace/record.h"

namespace bbprof::trace {

enum class TraceFormat { kText, kBinary };

// ".bbt" (optionally followed by ".gz"/".zst") names a binary trace; any
// other name a text trace.
TraceFormat FormatForPath(std::string_view path);
// Parses "text" or "binary" (for --format flags).
bool ParseTraceFormat(std::string_view text, TraceFormat* out);

// The writers' input check, the same rule the readers apply: a timestamp in
// the valid range (trace/timestamp.h) and callid/pathid text that is a token
// (trace/token.h), so a writer never produces a file its reader refuses.
// `index` (records written before this one) numbers the record in the
// message. Node names are checked where they are interned.
Status CheckRecordFields(const Record& rec, uint64_t index);

class TraceWriter {
 public:
  virtual ~TraceWriter() = default;
  // One "#meta" line; `body` is what follows "#meta " (key=value words).
  virtual Status WriteMeta(std::string_view body) = 0;
  virtual Status Write(const Record& rec) = 0;
  // Flushes and moves the file into place. Without it nothing is left behind.
  virtual Status Close() = 0;
  uint64_t records_written() const { return records_; }
  // Bytes of the (uncompressed) encoding produced so far, buffered bytes
  // included: what a size-rotated output (capture -C) measures.
  virtual uint64_t bytes_encoded() const = 0;

 protected:
  uint64_t records_ = 0;
};

// `nodes` must outlive the writer; it may grow while writing (new names are
// written as they first appear).
Result<std::unique_ptr<TraceWriter>> OpenTraceWriter(const std::string& path,
                                                     const NodeTable* nodes,
                                                     TraceFormat format);
// Same, with the format chosen by FormatForPath(path).
Result<std::unique_ptr<TraceWriter>> OpenTraceWriter(const std::string& path,
                                                     const NodeTable* nodes);

}  // namespace bbprof::trace

#endif  // BBPROF_TRACE_WRITER_H_
