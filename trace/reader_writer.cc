// Dispatch from a path to the right reader or writer. The input's form is
// told by its first bytes after decompression (a gzip-compressed binary trace
// is a binary trace), never by its name.
#include <cstring>
#include <tuple>

#include "trace/binary/binary_format.h"
#include "trace/byte_stream.h"
#include "trace/reader.h"
#include "trace/text/text_format.h"
#include "trace/timestamp.h"
#include "trace/token.h"
#include "trace/writer.h"

namespace bbprof::trace {

namespace {
bool EndsWith(std::string_view s, std::string_view suffix) {
  return s.size() >= suffix.size() &&
         s.substr(s.size() - suffix.size()) == suffix;
}

// Replays the bytes already read to sniff the form, then reads on.
class PeekedInput final : public InputStream {
 public:
  explicit PeekedInput(std::unique_ptr<InputStream> in) : in_(std::move(in)) {}

  // Reads up to kPeek bytes (fewer only at the end of the input).
  Result<std::string_view> Peek() {
    while (len_ < kPeek) {
      Result<size_t> n = in_->Read(head_ + len_, kPeek - len_);
      if (!n.ok()) return n.status();
      if (*n == 0) break;
      len_ += *n;
    }
    return std::string_view(head_, len_);
  }

  Result<size_t> Read(char* buf, size_t size) override {
    if (pos_ < len_) {
      size_t n = std::min(size, len_ - pos_);
      std::memcpy(buf, head_ + pos_, n);
      pos_ += n;
      return n;
    }
    return in_->Read(buf, size);
  }
  uint64_t raw_bytes_read() const override { return in_->raw_bytes_read(); }
  uint32_t raw_crc32() const override { return in_->raw_crc32(); }

 private:
  static constexpr size_t kPeek = 8;
  std::unique_ptr<InputStream> in_;
  char head_[kPeek] = {};
  size_t len_ = 0;
  size_t pos_ = 0;
};

}  // namespace

Result<std::unique_ptr<TraceReader>> OpenTraceReader(
    const std::string& path, std::shared_ptr<NodeTable> nodes,
    const ReaderOptions& options) {
  if (nodes == nullptr) nodes = std::make_shared<NodeTable>();
  Result<std::unique_ptr<InputStream>> in = OpenInputStream(path);
  if (!in.ok()) return in.status();
  std::string name = path == "-" ? "standard input" : path;
  auto peeked = std::make_unique<PeekedInput>(std::move(*in));
  Result<std::string_view> head = peeked->Peek();
  if (!head.ok()) return head.status();
  if (LooksBinary(*head)) {
    return NewBinaryReader(std::move(peeked), std::move(name), std::move(nodes),
                           options);
  }
  return NewTextReader(std::move(peeked), std::move(name), std::move(nodes),
                       options);
}

Status CheckRecordFields(const Record& rec, uint64_t index) {
  if (!InTimeRange(rec.ts_ns)) [[unlikely]] {
    return Status::Error("record " + std::to_string(index + 1) +
                         ": timestamp " + FormatTimestamp(rec.ts_ns) +
                         " is out of range (" + kTimeRangeText + ")");
  }
  for (auto [text, is_number, kind] :
       {std::tuple{rec.callid, rec.callid_is_number, TokenKind::kCallid},
        std::tuple{rec.pathid, rec.pathid_is_number, TokenKind::kPathid}}) {
    if (is_number || text.empty()) continue;
    if (std::string why = CheckToken(text, kind); !why.empty()) [[unlikely]] {
      return Status::Error("record " + std::to_string(index + 1) + ": bad " +
                           why);
    }
  }
  return Status::Ok();
}

TraceFormat FormatForPath(std::string_view path) {
  if (EndsWith(path, ".gz")) path.remove_suffix(3);
  if (EndsWith(path, ".zst")) path.remove_suffix(4);
  return EndsWith(path, ".bbt") ? TraceFormat::kBinary : TraceFormat::kText;
}

bool ParseTraceFormat(std::string_view text, TraceFormat* out) {
  if (text == "text") {
    *out = TraceFormat::kText;
    return true;
  }
  if (text == "binary") {
    *out = TraceFormat::kBinary;
    return true;
  }
  return false;
}

Result<std::unique_ptr<TraceWriter>> OpenTraceWriter(const std::string& path,
                                                     const NodeTable* nodes,
                                                     TraceFormat format) {
  Result<std::unique_ptr<OutputStream>> out = OpenOutputStream(path);
  if (!out.ok()) return out.status();
  if (format == TraceFormat::kBinary) {
    return NewBinaryWriter(std::move(*out), nodes);
  }
  return NewTextWriter(std::move(*out), nodes);
}

Result<std::unique_ptr<TraceWriter>> OpenTraceWriter(const std::string& path,
                                                     const NodeTable* nodes) {
  return OpenTraceWriter(path, nodes, FormatForPath(path));
}

}  // namespace bbprof::trace
