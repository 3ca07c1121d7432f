// TraceReader: streaming access to a trace file of either form (text or
// binary, told apart by magic bytes; gzip/zstd undone on the fly). A reader
// never holds more than one buffer of the file: a 20-million-line trace is
// read in constant memory.
//
//   auto reader = OpenTraceReader("run.trace");
//   if (!reader.ok()) { ... reader.status().message() ... }
//   Record rec;
//   while ((*reader)->Next(rec)) { ... }
//   if (!(*reader)->status().ok()) { ... "run.trace:17: ..." ... }
#ifndef BBPROF_TRACE_READER_H_
#define BBPROF_TRACE_READER_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "base/status.h"
#include "trace/node_table.h"
#include "trace/record.h"

namespace bbprof::trace {

struct ReaderOptions {
  // Skip and count malformed lines instead of stopping at the first one.
  // Out-of-order timestamps are still an error unless allow_unsorted is set.
  bool skip_bad_lines = false;
  // Accept decreasing timestamps (for tools that sort afterwards).
  bool allow_unsorted = false;
  // The binary reader hands numeric callids and pathids as numbers
  // (Record::callid_is_number / pathid_is_number, with empty text) instead of
  // formatting them to decimal text: for consumers that handle both forms
  // (nest, convert), this halves the cost of reading a binary trace. The
  // text reader always gives text.
  bool numeric_ids = false;
};

class TraceReader {
 public:
  virtual ~TraceReader() = default;
  TraceReader(const TraceReader&) = delete;
  TraceReader& operator=(const TraceReader&) = delete;

  // Reads the next record. Returns false at the end of the input or on an
  // error; status() tells which. rec's callid/pathid views stay valid until
  // the next call.
  bool Next(Record& rec) {
    if (has_pending_) {
      has_pending_ = false;
      rec = pending_;
      return true;
    }
    return Advance(rec);
  }

  const Status& status() const { return status_; }
  // Bodies of the "#meta" lines seen so far (without the "#meta " prefix).
  // Those before the first record are all known once the reader is open.
  const std::vector<std::string>& meta() const { return meta_; }
  NodeTable& nodes() { return *nodes_; }
  const std::shared_ptr<NodeTable>& shared_nodes() const { return nodes_; }
  const std::string& path() const { return path_; }
  // Malformed lines skipped under ReaderOptions::skip_bad_lines.
  uint64_t bad_lines_skipped() const { return bad_lines_; }
  // The first skipped line's error, for the report.
  const std::string& first_bad_line_error() const { return first_bad_error_; }
  // File bytes consumed so far, for progress against FileSizeOrZero(path).
  virtual uint64_t raw_bytes_read() const = 0;
  // CRC-32 of those bytes (InputStream::raw_crc32), when the reader reads a
  // byte stream; none for inputs read another way (a capture through
  // libpcap). Once the reader is at its end, with raw_bytes_read() this
  // names the input exactly.
  virtual std::optional<uint32_t> raw_crc32() const { return std::nullopt; }
  // How many records the reader will give in all, when it knows beforehand
  // (nest's stream driver hands each segment over already read); 0: not
  // known. Lets a consumer size its tables once instead of growing them.
  virtual uint64_t records_expected() const { return 0; }

 protected:
  TraceReader(std::string path, std::shared_ptr<NodeTable> nodes)
      : path_(std::move(path)), nodes_(std::move(nodes)) {}

  // Decodes the next record from the input (what Next() hands out).
  virtual bool Advance(Record& rec) = 0;
  // Called by a reader's opening code: reads ahead to the first record, so
  // that the header's meta lines are all in meta() and a malformed start is
  // reported at open time. Returns status().
  const Status& ReadAheadFirstRecord() {
    has_pending_ = Advance(pending_);
    return status_;
  }

  std::string path_;
  std::shared_ptr<NodeTable> nodes_;
  Status status_;
  std::vector<std::string> meta_;
  uint64_t bad_lines_ = 0;
  std::string first_bad_error_;

 private:
  // The first record, read ahead at open (views into the reader's buffer,
  // which the reader keeps until its next Advance()).
  Record pending_;
  bool has_pending_ = false;
};

// Opens a trace file ("-" = standard input). Names are interned into
// `nodes` (a fresh table if null), so several readers can share one table.
Result<std::unique_ptr<TraceReader>> OpenTraceReader(
    const std::string& path, std::shared_ptr<NodeTable> nodes = nullptr,
    const ReaderOptions& options = {});

// Something that opens an input as a trace: OpenTraceReader, or one that also
// knows other inputs (the cli's reader of capture files). Tools that open
// their inputs themselves (merge, skewer --estimate) take one.
using TraceOpener = std::function<Result<std::unique_ptr<TraceReader>>(
    const std::string& path, std::shared_ptr<NodeTable> nodes,
    const ReaderOptions& options)>;

}  // namespace bbprof::trace

#endif  // BBPROF_TRACE_READER_H_
