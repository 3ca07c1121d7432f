// Binary trace reader and writer (layout: trace/binary_format.h and
// docs/formats.md). The reader's hot loop decodes one op byte and a handful
// of varints per message straight out of a checksummed block buffer; the
// buffer carries zeroed padding so a varint can be decoded without a bounds
// check per byte (the position is checked once per field instead).
#include "trace/binary_format.h"

#include <libdeflate.h>

#include <charconv>
#include <deque>
#include <functional>
#include <string>
#include <unordered_map>
#include <cstring>
#include <optional>
#include <vector>

#include "trace/op.h"
#include "trace/string_hash.h"
#include "trace/text_format.h"
#include "trace/timestamp.h"
#include "trace/token.h"

namespace bbprof::trace {

namespace {

// Enough zeroed bytes past a block's end that any varint that starts inside
// the block can be decoded before its position is checked.
constexpr size_t kPadding = 32;

inline uint32_t LoadU32(const uint8_t* p) {
  return static_cast<uint32_t>(p[0]) | static_cast<uint32_t>(p[1]) << 8 |
         static_cast<uint32_t>(p[2]) << 16 | static_cast<uint32_t>(p[3]) << 24;
}

inline void StoreU32(uint32_t v, uint8_t* p) {
  p[0] = static_cast<uint8_t>(v);
  p[1] = static_cast<uint8_t>(v >> 8);
  p[2] = static_cast<uint8_t>(v >> 16);
  p[3] = static_cast<uint8_t>(v >> 24);
}

inline uint64_t ZigZag(int64_t v) {
  return (static_cast<uint64_t>(v) << 1) ^ static_cast<uint64_t>(v >> 63);
}

inline int64_t UnZigZag(uint64_t v) {
  return static_cast<int64_t>(v >> 1) ^ -static_cast<int64_t>(v & 1);
}

// Decodes a LEB128 varint at p (which must have 10 readable bytes). Returns
// false for an over-long or over-large encoding.
inline bool DecodeVarint(const uint8_t*& p, uint64_t* out) {
  uint8_t b = p[0];
  if (b < 0x80) {
    *out = b;
    ++p;
    return true;
  }
  uint64_t v = b & 0x7f;
  for (int i = 1; i < 10; ++i) {
    b = p[i];
    v |= static_cast<uint64_t>(b & 0x7f) << (7 * i);
    if (b < 0x80) {
      if (i == 9 && b > 1) return false;  // more than 64 bits
      p += i + 1;
      *out = v;
      return true;
    }
  }
  return false;
}

// Writes a varint at p (at most 10 bytes); returns the end.
inline uint8_t* PutVarint(uint8_t* p, uint64_t v) {
  while (v >= 0x80) {
    *p++ = static_cast<uint8_t>(v) | 0x80;
    v >>= 7;
  }
  *p++ = static_cast<uint8_t>(v);
  return p;
}

inline void AppendVarint(std::vector<uint8_t>& buf, uint64_t v) {
  while (v >= 0x80) {
    buf.push_back(static_cast<uint8_t>(v) | 0x80);
    v >>= 7;
  }
  buf.push_back(static_cast<uint8_t>(v));
}

std::string Hex(uint8_t b) {
  static const char kDigits[] = "0123456789abcdef";
  return std::string("0x") + kDigits[b >> 4] + kDigits[b & 15];
}

class BinaryReader final : public TraceReader {
 public:
  BinaryReader(std::unique_ptr<InputStream> in, std::string path,
               std::shared_ptr<NodeTable> nodes, const ReaderOptions& options)
      : TraceReader(std::move(path), std::move(nodes)),
        in_(std::move(in)),
        options_(options) {}

  Status Open() {
    uint8_t head[kBinaryFileHeaderBytes];
    Result<size_t> n = ReadFully(head, sizeof head);
    if (!n.ok()) return n.status();
    size_t magic_seen = std::min(*n, kBinaryMagic.size());
    if (std::memcmp(head, kBinaryMagic.data(), magic_seen) != 0) {
      return Status::Error(path_ +
                           ": not a bbprof binary trace (bad magic bytes)");
    }
    if (*n < sizeof head) {
      return Status::Error(path_ +
                           ": truncated binary trace (file header, byte "
                           "offset " +
                           std::to_string(*n) + ")");
    }
    uint32_t version = LoadU32(head + kBinaryMagic.size());
    if (version != kBinaryVersion) {
      return Status::Error(path_ + ": unsupported binary trace version " +
                           std::to_string(version) +
                           " (this bbprof reads version 1)");
    }
    offset_ = sizeof head;
    return ReadAheadFirstRecord();
  }

  uint64_t raw_bytes_read() const override { return in_->raw_bytes_read(); }
  std::optional<uint32_t> raw_crc32() const override { return in_->raw_crc32(); }

 private:
  Result<size_t> ReadFully(uint8_t* dst, size_t size) {
    size_t got = 0;
    while (got < size) {
      Result<size_t> n =
          in_->Read(reinterpret_cast<char*>(dst) + got, size - got);
      if (!n.ok()) return n.status();
      if (*n == 0) break;
      got += *n;
    }
    return got;
  }

  bool Fail(std::string message) {
    status_ = Status::Error(std::move(message));
    p_ = end_ = nullptr;
    done_ = true;
    return false;
  }
  bool Truncated(uint64_t at) {
    return Fail(path_ + ": truncated binary trace (block " +
                std::to_string(block_index_) + " at byte offset " +
                std::to_string(at) + ")");
  }
  // Structural damage inside a block whose checksum matched (a writer bug or
  // a deliberately forged file): still a clear error, never a crash.
  bool Corrupt(const std::string& what) {
    return Fail(path_ + ": corrupt binary trace: block " +
                std::to_string(block_index_ - 1) + ": " + what);
  }
  // The error paths of the per-record decoding, kept out of line so that
  // the hot path (Advance, DecodeId, NodeRef) stays small and inlined.
  [[gnu::cold, gnu::noinline]] bool CorruptAt(const char* what,
                                              const char* detail) {
    return Corrupt(std::string(what) + detail);
  }
  // FILE: message N: what is wrong with a record (numbered from 1, as the
  // text reader numbers lines).
  [[gnu::cold, gnu::noinline]] bool BadRecord(const std::string& what) {
    return Fail(path_ + ": message " + std::to_string(messages_ + 1) + ": " +
                what);
  }
  [[gnu::cold, gnu::noinline]] bool BadToken(const std::string& why) {
    return BadRecord("corrupt binary trace: bad " + why);
  }
  [[gnu::cold, gnu::noinline]] bool TimeOutOfRange(TimeNs prev, int64_t delta) {
    return BadRecord("corrupt binary trace: timestamp delta " +
                     std::to_string(delta) + " ns after " +
                     FormatTimestamp(prev) + " leaves the valid range (" +
                     kTimeRangeText + ")");
  }
  [[gnu::cold, gnu::noinline]] bool UnknownOp(uint8_t op) {
    return Corrupt("unknown op byte " + Hex(op));
  }
  [[gnu::cold, gnu::noinline]] bool UndefinedNode(uint64_t id) {
    return Corrupt("undefined node id " + std::to_string(id));
  }
  [[gnu::cold, gnu::noinline]] bool OutOfOrder(TimeNs ts) {
    return Fail(path_ + ": message " + std::to_string(messages_) +
                ": timestamp " + FormatTimestamp(ts) +
                " is earlier than the previous message's " +
                FormatTimestamp(last_ts_) + " (" + kSortHint + ")");
  }

  // Loads the next block into block_. False at the end marker or on error.
  [[gnu::noinline]] bool LoadBlock() {  // once a block: off the hot path
    if (done_) return false;
    if (block_index_ > 0 && block_messages_ != expected_messages_) {
      return Corrupt("holds " + std::to_string(block_messages_) +
                     " messages but its header says " +
                     std::to_string(expected_messages_));
    }
    uint8_t h[kBinaryBlockHeaderBytes];
    Result<size_t> n = ReadFully(h, sizeof h);
    if (!n.ok()) return Fail(n.status().message());
    if (*n < sizeof h) return Truncated(offset_);
    uint32_t len = LoadU32(h);
    uint32_t count = LoadU32(h + 4);
    uint32_t crc = LoadU32(h + 8);
    if (len == 0) {
      if (count != 0 || crc != 0) {
        return Fail(path_ +
                    ": corrupt binary trace: bad end marker at byte "
                    "offset " +
                    std::to_string(offset_));
      }
      uint8_t extra;
      Result<size_t> m = ReadFully(&extra, 1);
      if (!m.ok()) return Fail(m.status().message());
      if (*m != 0) {
        return Fail(path_ +
                    ": corrupt binary trace: data after the end "
                    "marker at byte offset " +
                    std::to_string(offset_ + sizeof h));
      }
      done_ = true;
      return false;
    }
    if (len > kBinaryMaxBlockPayload) {
      return Fail(path_ + ": corrupt binary trace: block " +
                  std::to_string(block_index_) + " claims " +
                  std::to_string(len) + " bytes (at most " +
                  std::to_string(kBinaryMaxBlockPayload) + ")");
    }
    block_.resize(len + kPadding);
    n = ReadFully(block_.data(), len);
    if (!n.ok()) return Fail(n.status().message());
    if (*n < len) return Truncated(offset_);
    std::memset(block_.data() + len, 0, kPadding);
    if (libdeflate_crc32(0, block_.data(), len) != crc) {
      return Fail(path_ +
                  ": corrupt binary trace: checksum mismatch in block " +
                  std::to_string(block_index_));
    }
    offset_ += sizeof h + len;
    ++block_index_;
    p_ = block_.data();
    end_ = p_ + len;
    expected_messages_ = count;
    block_messages_ = 0;
    prev_ts_ = 0;
    prev_callid_ = 0;
    prev_pathid_ = 0;
    return true;
  }

  // Decodes a callid/pathid in `encoding` into *out (a view into the block or
  // into `num_buf`).
  [[gnu::always_inline]] bool DecodeId(uint8_t encoding, uint64_t* prev,
                                       char* num_buf, std::string_view* out,
                                       bool* is_number, uint64_t* number,
                                       TokenKind kind) {
    const char* what = kind == TokenKind::kCallid ? "callid" : "pathid";
    *is_number = false;
    switch (encoding) {
      case kIdAbsent:
        *out = {};
        return true;
      case kIdNumeric: {
        uint64_t z;
        if (!DecodeVarint(p_, &z) || p_ > end_) {
          return CorruptAt("bad numeric ", what);
        }
        *prev += static_cast<uint64_t>(UnZigZag(z));
        if (options_.numeric_ids) {
          *is_number = true;
          *number = *prev;
          *out = {};
          return true;
        }
        auto r = std::to_chars(num_buf, num_buf + 24, *prev);
        *out = std::string_view(num_buf, static_cast<size_t>(r.ptr - num_buf));
        return true;
      }
      case kIdRaw: {
        uint64_t len;
        if (!DecodeVarint(p_, &len) || p_ > end_ ||
            len > static_cast<uint64_t>(end_ - p_)) {
          return CorruptAt(what, " runs past the end of the block");
        }
        *out = std::string_view(reinterpret_cast<const char*>(p_), len);
        p_ += len;
        if (std::string why = CheckToken(*out, kind); !why.empty()) {
          return BadToken(why);
        }
        return true;
      }
      default:
        return CorruptAt("bad encoding of ", what);
    }
  }

  [[gnu::always_inline]] bool NodeRef(NodeId* out) {
    uint64_t id;
    if (!DecodeVarint(p_, &id) || p_ > end_) {
      return CorruptAt("message runs past the end of the block", "");
    }
    if (id >= file_nodes_.size()) return UndefinedNode(id);
    *out = file_nodes_[id];
    return true;
  }

  [[gnu::noinline]] bool Special(uint8_t op) {  // node definitions, meta
    uint64_t a, len;
    switch (op) {
      case kOpNodeDef: {
        if (!DecodeVarint(p_, &a) || p_ > end_ || !DecodeVarint(p_, &len) ||
            p_ > end_ || len > static_cast<uint64_t>(end_ - p_)) {
          return Corrupt("node definition runs past the end of the block");
        }
        std::string_view name(reinterpret_cast<const char*>(p_), len);
        p_ += len;
        if (a != file_nodes_.size()) {
          return Corrupt("node id " + std::to_string(a) +
                         " defined out of order (expected " +
                         std::to_string(file_nodes_.size()) + ")");
        }
        std::string why = CheckNodeName(name);
        if (!why.empty()) return Corrupt(why);
        file_nodes_.push_back(nodes_->Intern(name));
        return true;
      }
      case kOpMeta: {
        if (!DecodeVarint(p_, &len) || p_ > end_ ||
            len > static_cast<uint64_t>(end_ - p_)) {
          return Corrupt("meta line runs past the end of the block");
        }
        std::string_view body(reinterpret_cast<const char*>(p_), len);
        p_ += len;
        if (body.find('\n') != std::string_view::npos) {
          return Corrupt("meta line contains a newline");
        }
        meta_.emplace_back(body);
        return true;
      }
      case kOpOperationDef: {
        if (!DecodeVarint(p_, &a) || p_ > end_ || !DecodeVarint(p_, &len) ||
            p_ > end_ || len > static_cast<uint64_t>(end_ - p_)) {
          return Corrupt(
              "operation definition runs past the end of the block");
        }
        std::string_view name(reinterpret_cast<const char*>(p_), len);
        p_ += len;
        if (a != file_ops_.size()) {
          return Corrupt("operation id " + std::to_string(a) +
                         " defined out of order (expected " +
                         std::to_string(file_ops_.size()) + ")");
        }
        std::string why = CheckOpToken(name);
        if (!why.empty()) return Corrupt(why);
        file_ops_.emplace_back(name);
        return true;
      }
      default:
        return Corrupt("unknown op byte " + Hex(op));
    }
  }

  bool Advance(Record& rec) override {
    for (;;) {
      if (p_ >= end_) {
        if (!LoadBlock()) return false;
        continue;
      }
      uint8_t op = *p_++;
      if ((op & 3) == kOpSpecial) {
        if (!Special(op)) return false;
        continue;
      }
      if (op & 0x80) return UnknownOp(op);
      rec.kind = static_cast<Kind>(op & 3);
      uint64_t z;
      if (!DecodeVarint(p_, &z) || p_ > end_) {
        return CorruptAt("message runs past the end of the block", "");
      }
      // A forged block with a valid checksum can carry any delta: the sum is
      // checked, and the one range rule of timestamp.h applied.
      if (!CheckedTimeAdd(prev_ts_, UnZigZag(z), &rec.ts_ns)) {
        return TimeOutOfRange(prev_ts_, UnZigZag(z));
      }
      prev_ts_ = rec.ts_ns;
      if (!NodeRef(&rec.sender) || !NodeRef(&rec.receiver)) return false;
      if (!DecodeId((op >> 2) & 3, &prev_callid_, callid_buf_, &rec.callid,
                    &rec.callid_is_number, &rec.callid_number,
                    TokenKind::kCallid) ||
          !DecodeId((op >> 4) & 3, &prev_pathid_, pathid_buf_, &rec.pathid,
                    &rec.pathid_is_number, &rec.pathid_number,
                    TokenKind::kPathid)) {
        return false;
      }
      rec.op = {};
      if (op & kMessageHasOp) {
        uint64_t id;
        if (!DecodeVarint(p_, &id) || p_ > end_) {
          return CorruptAt("message runs past the end of the block", "");
        }
        if (id >= file_ops_.size()) {
          return Corrupt("message refers to undefined operation id " +
                         std::to_string(id));
        }
        rec.op = file_ops_[id];
      }
      ++block_messages_;
      ++messages_;
      if (rec.ts_ns < last_ts_ && !options_.allow_unsorted) {
        return OutOfOrder(rec.ts_ns);
      }
      if (rec.ts_ns > last_ts_) last_ts_ = rec.ts_ns;
      return true;
    }
  }

  std::unique_ptr<InputStream> in_;
  ReaderOptions options_;
  std::vector<uint8_t> block_;
  const uint8_t* p_ = nullptr;
  const uint8_t* end_ = nullptr;
  bool done_ = false;
  uint64_t block_index_ = 0;  // blocks loaded so far
  uint64_t offset_ = 0;       // decompressed offset of the next block header
  uint32_t expected_messages_ = 0;
  uint32_t block_messages_ = 0;
  uint64_t messages_ = 0;
  TimeNs prev_ts_ = 0;
  uint64_t prev_callid_ = 0;
  uint64_t prev_pathid_ = 0;
  TimeNs last_ts_ = INT64_MIN;
  std::vector<NodeId> file_nodes_;  // file-local id -> NodeTable id
  // File-local operation id -> name. A deque, so that the views handed out
  // in Record::op stay valid as definitions are added.
  std::deque<std::string> file_ops_;
  char callid_buf_[24] = {};
  char pathid_buf_[24] = {};
};

class BinaryWriter final : public TraceWriter {
 public:
  BinaryWriter(std::unique_ptr<OutputStream> out, const NodeTable* nodes)
      : out_(std::move(out)), nodes_(nodes) {
    buf_.reserve(kBinaryBlockTarget + 2 * kMaxLineBytes + 64);
  }

  Status WriteMeta(std::string_view body) override {
    if (body.find('\n') != std::string_view::npos) {
      return Status::Error("meta line contains a newline");
    }
    if (body.size() > kMaxLineBytes) {
      return Status::Error("meta line longer than " +
                           std::to_string(kMaxLineBytes) + " bytes");
    }
    buf_.push_back(kOpMeta);
    AppendVarint(buf_, body.size());
    buf_.insert(buf_.end(), body.begin(), body.end());
    return MaybeFlush();
  }

  Status Write(const Record& rec) override {
    BBPROF_RETURN_IF_ERROR(CheckRecordFields(rec, records_));
    uint32_t s = FileId(rec.sender);
    uint32_t r = FileId(rec.receiver);
    uint8_t op = static_cast<uint8_t>(rec.kind);
    uint64_t callid_num = 0, pathid_num = 0;
    uint8_t cenc, penc;
    Classify(rec.callid, rec.callid_is_number, rec.callid_number, &cenc,
             &callid_num);
    Classify(rec.pathid, rec.pathid_is_number, rec.pathid_number, &penc,
             &pathid_num);
    op |= static_cast<uint8_t>(cenc << 2 | penc << 4);
    uint32_t op_id = 0;
    if (!rec.op.empty()) {
      Result<uint32_t> id = OperationId(rec.op);
      if (!id.ok()) return id.status();
      op_id = *id;
      op |= kMessageHasOp;
    }
    // The record's bytes are written through a pointer, not byte by byte
    // through push_back: this is the inner loop of maketrace and capture.
    // Without raw ids a record takes at most 51 bytes: it is built on the
    // stack and appended in one copy; raw ids go through room made in buf_.
    const size_t raw = IdBytes(cenc, rec.callid) + IdBytes(penc, rec.pathid);
    uint8_t small[1 + 6 * 10];
    const size_t start = buf_.size();
    if (raw > 0) buf_.resize(start + sizeof small + raw);
    uint8_t* const begin = raw > 0 ? buf_.data() + start : small;
    uint8_t* p = begin;
    *p++ = op;
    p = PutVarint(p, ZigZag(rec.ts_ns - prev_ts_));
    prev_ts_ = rec.ts_ns;
    p = PutVarint(p, s);
    p = PutVarint(p, r);
    p = PutId(p, cenc, rec.callid, callid_num, &prev_callid_);
    p = PutId(p, penc, rec.pathid, pathid_num, &prev_pathid_);
    if (op & kMessageHasOp) p = PutVarint(p, op_id);
    if (raw > 0) {
      buf_.resize(start + static_cast<size_t>(p - begin));
    } else {
      buf_.insert(buf_.end(), small, p);
    }
    ++block_messages_;
    ++records_;
    return MaybeFlush();
  }

  uint64_t bytes_encoded() const override { return flushed_ + buf_.size(); }

  Status Close() override {
    if (closed_) return Status::Error("trace writer closed twice");
    closed_ = true;
    BBPROF_RETURN_IF_ERROR(FlushBlock());
    BBPROF_RETURN_IF_ERROR(WriteFileHeader());
    uint8_t end[kBinaryBlockHeaderBytes] = {};
    BBPROF_RETURN_IF_ERROR(
        out_->Write(reinterpret_cast<const char*>(end), sizeof end));
    return out_->Close();
  }

 private:
  // The file-local id of a node, emitting its definition on first use.
  uint32_t FileId(NodeId id) {
    if (id >= file_ids_.size()) file_ids_.resize(id + 1, kUndefined);
    if (file_ids_[id] == kUndefined) {
      file_ids_[id] = next_file_id_++;
      std::string_view name = nodes_->Name(id);
      buf_.push_back(kOpNodeDef);
      AppendVarint(buf_, file_ids_[id]);
      AppendVarint(buf_, name.size());
      buf_.insert(buf_.end(), name.begin(), name.end());
    }
    return file_ids_[id];
  }

  // The file-local id of an operation name, emitting its definition on
  // first use. Consecutive calls mostly repeat the last op, so it is checked
  // before the table.
  Result<uint32_t> OperationId(std::string_view name) {
    if (name == last_op_) return last_op_id_;
    auto it = op_ids_.find(name);
    uint32_t id;
    if (it != op_ids_.end()) {
      id = it->second;
    } else {
      std::string why = CheckOpToken(name);
      if (!why.empty()) return Status::Error("bad op: " + why);
      id = static_cast<uint32_t>(op_ids_.size());
      op_ids_.emplace(std::string(name), id);
      buf_.push_back(kOpOperationDef);
      AppendVarint(buf_, id);
      AppendVarint(buf_, name.size());
      buf_.insert(buf_.end(), name.begin(), name.end());
    }
    last_op_.assign(name);
    last_op_id_ = id;
    return id;
  }

  // How an id is stored: a number given as one (Record::*_is_number) or
  // written in canonical decimal, raw text (checked by CheckRecordFields),
  // or absent.
  static void Classify(std::string_view token, bool is_number, uint64_t number,
                       uint8_t* enc, uint64_t* num) {
    if (is_number) {
      *enc = kIdNumeric;
      *num = number;
    } else if (token.empty()) {
      *enc = kIdAbsent;
    } else if (ParseCanonicalUnsigned(token, num)) {
      *enc = kIdNumeric;
    } else {
      *enc = kIdRaw;
    }
  }

  // Bytes a raw id needs beyond the varint room Write always makes.
  static size_t IdBytes(uint8_t enc, std::string_view token) {
    return enc == kIdRaw ? token.size() : 0;
  }

  static uint8_t* PutId(uint8_t* p, uint8_t enc, std::string_view token,
                        uint64_t num, uint64_t* prev) {
    if (enc == kIdNumeric) {
      p = PutVarint(p, ZigZag(static_cast<int64_t>(num - *prev)));
      *prev = num;
    } else if (enc == kIdRaw) {
      p = PutVarint(p, token.size());
      if (!token.empty()) std::memcpy(p, token.data(), token.size());
      p += token.size();
    }
    return p;
  }

  Status MaybeFlush() {
    if (buf_.size() < kBinaryBlockTarget) return Status::Ok();
    return FlushBlock();
  }

  Status WriteFileHeader() {
    if (header_written_) return Status::Ok();
    header_written_ = true;
    uint8_t h[kBinaryFileHeaderBytes];
    std::memcpy(h, kBinaryMagic.data(), kBinaryMagic.size());
    StoreU32(kBinaryVersion, h + kBinaryMagic.size());
    flushed_ += sizeof h;
    return out_->Write(reinterpret_cast<const char*>(h), sizeof h);
  }

  Status FlushBlock() {
    BBPROF_RETURN_IF_ERROR(WriteFileHeader());
    if (buf_.empty()) return Status::Ok();
    uint8_t h[kBinaryBlockHeaderBytes];
    StoreU32(static_cast<uint32_t>(buf_.size()), h);
    StoreU32(block_messages_, h + 4);
    StoreU32(libdeflate_crc32(0, buf_.data(), buf_.size()), h + 8);
    BBPROF_RETURN_IF_ERROR(
        out_->Write(reinterpret_cast<const char*>(h), sizeof h));
    BBPROF_RETURN_IF_ERROR(
        out_->Write(reinterpret_cast<const char*>(buf_.data()), buf_.size()));
    flushed_ += sizeof h + buf_.size();
    buf_.clear();
    block_messages_ = 0;
    prev_ts_ = 0;
    prev_callid_ = 0;
    prev_pathid_ = 0;
    return Status::Ok();
  }

  static constexpr uint32_t kUndefined = UINT32_MAX;
  std::unique_ptr<OutputStream> out_;
  const NodeTable* nodes_;
  std::vector<uint8_t> buf_;
  std::vector<uint32_t> file_ids_;
  uint32_t next_file_id_ = 0;
  std::unordered_map<std::string, uint32_t, StringHash, std::equal_to<>>
      op_ids_;
  std::string last_op_;
  uint32_t last_op_id_ = 0;
  uint32_t block_messages_ = 0;
  TimeNs prev_ts_ = 0;
  uint64_t prev_callid_ = 0;
  uint64_t prev_pathid_ = 0;
  bool header_written_ = false;
  bool closed_ = false;
  uint64_t flushed_ = 0;
};

}  // namespace

bool ParseCanonicalUnsigned(std::string_view token, uint64_t* value) {
  if (token.empty() || token.size() > 20) return false;
  if (token[0] == '0' && token.size() > 1) return false;
  if (token.size() < 20) {  // at most 19 digits cannot overflow 64 bits
    uint64_t v = 0;
    for (char c : token) {
      auto d = static_cast<unsigned>(c - '0');
      if (d > 9) return false;
      v = v * 10 + d;
    }
    *value = v;
    return true;
  }
  for (char c : token) {
    if (c < '0' || c > '9') return false;
  }
  auto r = std::from_chars(token.data(), token.data() + token.size(), *value);
  return r.ec == std::errc() && r.ptr == token.data() + token.size();
}

Result<std::unique_ptr<TraceReader>> NewBinaryReader(
    std::unique_ptr<InputStream> in, std::string path,
    std::shared_ptr<NodeTable> nodes, const ReaderOptions& options) {
  auto reader = std::make_unique<BinaryReader>(std::move(in), std::move(path),
                                               std::move(nodes), options);
  BBPROF_RETURN_IF_ERROR(reader->Open());
  return std::unique_ptr<TraceReader>(std::move(reader));
}

std::unique_ptr<TraceWriter> NewBinaryWriter(std::unique_ptr<OutputStream> out,
                                             const NodeTable* nodes) {
  return std::make_unique<BinaryWriter>(std::move(out), nodes);
}

}  // namespace bbprof::trace
