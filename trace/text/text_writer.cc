// Text trace writer: canonical form (TAB-separated, nine fraction digits,
// "-" for an unknown callid, the pathid field only when known or when an
// op follows, the op field only when known), formatted
// into a 256 KiB buffer and handed to the output stream in large writes.
#include <charconv>
#include <cstring>
#include <vector>

#include "trace/text/text_format.h"
#include "trace/timestamp.h"

namespace bbprof::trace {

namespace {

constexpr size_t kBufferSize = 1 << 18;

class TextWriter final : public TraceWriter {
 public:
  TextWriter(std::unique_ptr<OutputStream> out, const NodeTable* nodes)
      : out_(std::move(out)), nodes_(nodes) {
    buf_.reserve(kBufferSize + 2 * kMaxLineBytes);
    Append(kTextHeader);
    buf_.push_back('\n');
  }

  Status WriteMeta(std::string_view body) override {
    if (body.find('\n') != std::string_view::npos) {
      return Status::Error("meta line contains a newline");
    }
    Append("#meta ");
    Append(body);
    buf_.push_back('\n');
    return MaybeFlush();
  }

  Status Write(const Record& rec) override {
    BBPROF_RETURN_IF_ERROR(CheckRecordFields(rec, records_));
    char ts[32];
    Append(std::string_view(ts, FormatTimestamp(rec.ts_ns, ts)));
    buf_.push_back('\t');
    Append(KindName(rec.kind));
    buf_.push_back('\t');
    Append(nodes_->Name(rec.sender));
    buf_.push_back('\t');
    Append(nodes_->Name(rec.receiver));
    buf_.push_back('\t');
    char num[24];
    if (rec.callid_is_number) {
      Append(std::string_view(num, Decimal(rec.callid_number, num)));
    } else {
      Append(rec.callid.empty() ? std::string_view("-") : rec.callid);
    }
    if (rec.pathid_is_number) {
      buf_.push_back('\t');
      Append(std::string_view(num, Decimal(rec.pathid_number, num)));
    } else if (!rec.pathid.empty()) {
      buf_.push_back('\t');
      Append(rec.pathid);
    } else if (!rec.op.empty()) {
      Append("\t-");  // field 7 needs field 6, "-" when no pathid is known
    }
    if (!rec.op.empty()) {
      buf_.push_back('\t');
      Append(rec.op);
    }
    buf_.push_back('\n');
    ++records_;
    return MaybeFlush();
  }

  uint64_t bytes_encoded() const override { return flushed_ + buf_.size(); }

  Status Close() override {
    if (closed_) return Status::Error("trace writer closed twice");
    closed_ = true;
    BBPROF_RETURN_IF_ERROR(Flush());
    return out_->Close();
  }

 private:
  static size_t Decimal(uint64_t v, char* out) {
    return static_cast<size_t>(std::to_chars(out, out + 24, v).ptr - out);
  }
  void Append(std::string_view s) { buf_.insert(buf_.end(), s.begin(), s.end()); }
  Status MaybeFlush() {
    if (buf_.size() < kBufferSize) return Status::Ok();
    return Flush();
  }
  Status Flush() {
    Status s = out_->Write(buf_.data(), buf_.size());
    flushed_ += buf_.size();
    buf_.clear();
    return s;
  }

  std::unique_ptr<OutputStream> out_;
  const NodeTable* nodes_;
  std::vector<char> buf_;
  uint64_t flushed_ = 0;
  bool closed_ = false;
};

}  // namespace

std::unique_ptr<TraceWriter> NewTextWriter(std::unique_ptr<OutputStream> out,
                                           const NodeTable* nodes) {
  return std::make_unique<TextWriter>(std::move(out), nodes);
}

}  // namespace bbprof::trace
