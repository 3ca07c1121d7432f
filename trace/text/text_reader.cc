// Text trace reader. Hot loop: find the line with memchr, split on runs of
// TABs/spaces by hand, parse the timestamp as integers, intern names through
// a one-entry cache (consecutive lines tend to repeat nodes). No allocation
// per line once the node table is warm.
#include <cstring>
#include <optional>
#include <string_view>
#include <vector>

#include "trace/op.h"
#include "trace/text/text_format.h"
#include "trace/timestamp.h"
#include "trace/token.h"

namespace bbprof::trace {

namespace {

constexpr size_t kReadChunk = 1 << 20;
constexpr size_t kMaxFields = 7;

inline bool IsSep(char c) { return c == ' ' || c == '\t'; }

std::string Quote(std::string_view s) { return EscapeForMessage(s); }

// A file with old Mac (CR-only) line endings reads as one long line. CRLF is
// accepted (the CR before the newline is dropped); a CR anywhere else is
// named as what it is rather than as the field error it causes. Checked on
// the error paths and in comment lines only, off the hot path.
bool HasCr(std::string_view s) {
  return s.find('\r') != std::string_view::npos;
}
constexpr const char* kCrMessage =
    "CR line endings are not supported (expected LF or CRLF); convert with "
    "tr '\\r' '\\n' < IN > OUT";

class TextReader final : public TraceReader {
 public:
  TextReader(std::unique_ptr<InputStream> in, std::string path,
             std::shared_ptr<NodeTable> nodes, const ReaderOptions& options)
      : TraceReader(std::move(path), std::move(nodes)),
        in_(std::move(in)),
        options_(options),
        buf_(kReadChunk + kMaxLineBytes + 1) {}

  // Reads up to the first record, collecting the header and meta lines.
  Status ReadHeader() { return ReadAheadFirstRecord(); }

  uint64_t raw_bytes_read() const override { return in_->raw_bytes_read(); }
  std::optional<uint32_t> raw_crc32() const override { return in_->raw_crc32(); }

 private:
  // Returns the next line (without its newline), or false at end/error.
  bool NextLine(std::string_view* line) {
    for (;;) {
      const char* nl = static_cast<const char*>(
          std::memchr(buf_.data() + pos_, '\n', end_ - pos_));
      if (nl != nullptr) {
        size_t len = static_cast<size_t>(nl - (buf_.data() + pos_));
        if (len > kMaxLineBytes) return LineTooLong(line_no_ + 1);
        *line = std::string_view(buf_.data() + pos_, len);
        pos_ += len + 1;
        ++line_no_;
        return true;
      }
      if (end_ - pos_ > kMaxLineBytes) return LineTooLong(line_no_ + 1);
      if (eof_) {
        if (pos_ == end_) return false;
        // Last line without a newline.
        *line = std::string_view(buf_.data() + pos_, end_ - pos_);
        pos_ = end_;
        ++line_no_;
        return true;
      }
      // Move the partial line to the front and read more behind it.
      std::memmove(buf_.data(), buf_.data() + pos_, end_ - pos_);
      end_ -= pos_;
      pos_ = 0;
      Result<size_t> n = in_->Read(buf_.data() + end_, buf_.size() - end_);
      if (!n.ok()) {
        status_ = n.status();
        return false;
      }
      if (*n == 0) eof_ = true;
      end_ += *n;
    }
  }

  bool LineTooLong(uint64_t line) {
    if (HasCr(std::string_view(buf_.data() + pos_, end_ - pos_))) {
      status_ =
          Status::Error(path_ + ":" + std::to_string(line) + ": " + kCrMessage);
      return false;
    }
    status_ = Status::Error(
        path_ + ":" + std::to_string(line) + ": line longer than " +
        std::to_string(kMaxLineBytes) + " bytes (is this a trace file?)");
    return false;
  }

  bool Advance(Record& rec) override {
    std::string_view line;
    while (NextLine(&line)) {
      if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
      if (line.empty()) continue;
      if (line[0] == '#') {
        if (HasCr(line)) {
          status_ = Status::Error(Where() + kCrMessage);
          return false;
        }
        if (!HandleComment(line)) return false;
        continue;
      }
      std::string err = ParseLine(line, rec);
      if (!err.empty() && HasCr(line)) err = kCrMessage;
      if (err.empty()) {
        if (rec.ts_ns < last_ts_ && !options_.allow_unsorted) {
          status_ = Status::Error(
              Where() + "timestamp " + FormatTimestamp(rec.ts_ns) +
              " is earlier than the previous message's " +
              FormatTimestamp(last_ts_) + " (" + kSortHint + ")");
          return false;
        }
        last_ts_ = std::max(last_ts_, rec.ts_ns);
        return true;
      }
      if (options_.skip_bad_lines) {
        if (bad_lines_++ == 0) first_bad_error_ = Where() + err;
        continue;
      }
      status_ = Status::Error(Where() + err);
      return false;
    }
    return false;
  }

  std::string Where() const {
    return path_ + ":" + std::to_string(line_no_) + ": ";
  }

  bool HandleComment(std::string_view line) {
    if (line.starts_with("#bbprof-trace")) {
      std::string_view v = line.substr(13);
      while (!v.empty() && IsSep(v.front())) v.remove_prefix(1);
      while (!v.empty() && IsSep(v.back())) v.remove_suffix(1);
      if (v != "1") {
        status_ = Status::Error(Where() + "unsupported trace version " +
                                Quote(v) + " (this bbprof reads version 1)");
        return false;
      }
      return true;
    }
    if (line.starts_with("#meta") &&
        (line.size() == 5 || IsSep(line[5]))) {
      std::string_view body = line.substr(5);
      while (!body.empty() && IsSep(body.front())) body.remove_prefix(1);
      meta_.emplace_back(body);
    }
    return true;
  }

  NodeId InternName(std::string_view name, std::string* err,
                    const char* role) {
    if (name == last_name_) return last_id_;
    NodeId id;
    if (!nodes_->Find(name, &id)) {
      std::string why = CheckNodeName(name);
      if (!why.empty()) {
        *err = std::string("bad ") + role + ": " + why;
        return 0;
      }
      id = nodes_->Intern(name);
    }
    last_name_storage_.assign(name);
    last_name_ = last_name_storage_;
    last_id_ = id;
    return id;
  }

  // Parses one record line; returns what is wrong, or an empty string.
  std::string ParseLine(std::string_view line, Record& rec) {
    std::string_view f[kMaxFields];
    size_t n = 0;
    const char* p = line.data();
    const char* end = p + line.size();
    while (p < end) {
      while (p < end && IsSep(*p)) ++p;
      if (p == end) break;
      const char* start = p;
      while (p < end && !IsSep(*p)) ++p;
      if (n == kMaxFields) {
        return "too many fields (expected at most 7: timestamp kind sender "
               "receiver callid pathid op)";
      }
      f[n++] = std::string_view(start, static_cast<size_t>(p - start));
    }
    if (n < 5) {
      return "too few fields (expected 5 to 7: timestamp kind sender "
             "receiver callid [pathid [op]]), found " +
             std::to_string(n);
    }
    if (!ParseTimestamp(f[0], &rec.ts_ns)) {
      return "bad timestamp " + Quote(f[0]) +
             " (expected seconds since the epoch with 0 to 9 fraction "
             "digits, e.g. 1047680084.482205, from " +
             std::string(kTimeRangeText) + ")";
    }
    std::string_view k = f[1];
    if (k == "CALL" || k == "CALL_SENT") {
      rec.kind = Kind::kCall;
    } else if (k == "RET" || k == "RET_SENT") {
      rec.kind = Kind::kReturn;
    } else if (k == "MSG") {
      rec.kind = Kind::kMessage;
    } else {
      return "unknown kind " + Quote(k) + " (expected CALL, RET or MSG)";
    }
    std::string err;
    rec.sender = InternName(f[2], &err, "sender");
    if (!err.empty()) return err;
    rec.receiver = InternName(f[3], &err, "receiver");
    if (!err.empty()) return err;
    rec.callid = f[4] == "-" ? std::string_view() : f[4];
    rec.pathid = (n < 6 || f[5] == "-") ? std::string_view() : f[5];
    if (!rec.callid.empty()) {
      if (std::string why = CheckToken(rec.callid, TokenKind::kCallid);
          !why.empty()) {
        return "bad " + why;
      }
    }
    if (!rec.pathid.empty()) {
      if (std::string why = CheckToken(rec.pathid, TokenKind::kPathid);
          !why.empty()) {
        return "bad " + why;
      }
    }
    rec.op = (n < 7 || f[6] == "-") ? std::string_view() : f[6];
    if (!rec.op.empty()) {
      std::string why = CheckOpToken(rec.op);
      if (!why.empty()) return "bad op " + EscapeForMessage(rec.op) + ": " + why;
    }
    return {};
  }

  std::unique_ptr<InputStream> in_;
  ReaderOptions options_;
  std::vector<char> buf_;
  size_t pos_ = 0;
  size_t end_ = 0;
  bool eof_ = false;
  uint64_t line_no_ = 0;
  TimeNs last_ts_ = INT64_MIN;
  std::string last_name_storage_;
  std::string_view last_name_;
  NodeId last_id_ = 0;
};

}  // namespace

Result<std::unique_ptr<TraceReader>> NewTextReader(
    std::unique_ptr<InputStream> in, std::string path,
    std::shared_ptr<NodeTable> nodes, const ReaderOptions& options) {
  auto reader = std::make_unique<TextReader>(std::move(in), std::move(path),
                                             std::move(nodes), options);
  BBPROF_RETURN_IF_ERROR(reader->ReadHeader());
  return std::unique_ptr<TraceReader>(std::move(reader));
}

}  // namespace bbprof::trace
