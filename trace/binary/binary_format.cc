// Binary trace reader and writer (layout: trace/binary/binary_format.h and
// docs/formats.md). The reader's hot loop decodes one op byte and a handful
// of varints per message straight out of a checksummed block buffer; the
// buffer carries zeroed padding so a varint can be decoded without a bounds
// check per byte (the position is checked once per field instead).
#include "trace/binary/binary_format.h"

#include <fcntl.h>
#include <libdeflate.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cstring>
#include <deque>
#include <functional>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "trace/op.h"
#include "trace/string_hash.h"
#include "trace/text/text_format.h"
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

inline void StoreU64(uint64_t v, uint8_t* p) {
  StoreU32(static_cast<uint32_t>(v), p);
  StoreU32(static_cast<uint32_t>(v >> 32), p + 4);
}

inline uint64_t ZigZag(int64_t v) {
  return (static_cast<uint64_t>(v) << 1) ^ static_cast<uint64_t>(v >> 63);
}

inline int64_t UnZigZag(uint64_t v) {
  return static_cast<int64_t>(v >> 1) ^ -static_cast<int64_t>(v & 1);
}

// Decodes a LEB128 varint at p (which must have 10 readable bytes). Returns
// false for an over-long or over-large encoding. Always inlined: it is most
// of the reader's hot loop, and a call per field costs a third more time.
[[gnu::always_inline]] inline bool DecodeVarint(const uint8_t*& p,
                                                uint64_t* out) {
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
[[gnu::always_inline]] inline uint8_t* PutVarint(uint8_t* p, uint64_t v) {
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

constexpr uint64_t kPowersOf10[20] = {1,
                                      10,
                                      100,
                                      1000,
                                      10000,
                                      100000,
                                      1000000,
                                      10000000,
                                      100000000,
                                      1000000000,
                                      10000000000,
                                      100000000000,
                                      1000000000000,
                                      10000000000000,
                                      100000000000000,
                                      1000000000000000,
                                      10000000000000000,
                                      100000000000000000,
                                      1000000000000000000,
                                      10000000000000000000u};

// Lowercase hexadecimal ids (trace and span ids of tracers, hashes) are
// stored two digits a byte, the first in the high nibble.
bool IsLowerHex(std::string_view s) {
  if (s.size() < 2) return false;
  for (char c : s) {
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return false;
  }
  return true;
}

uint8_t* PackHex(uint8_t* p, std::string_view s) {
  auto nibble = [](char c) {
    return static_cast<uint8_t>(c <= '9' ? c - '0' : c - 'a' + 10);
  };
  for (size_t i = 0; i < s.size(); i += 2) {
    uint8_t lo = i + 1 < s.size() ? nibble(s[i + 1]) : 0;
    *p++ = static_cast<uint8_t>(nibble(s[i]) << 4 | lo);
  }
  return p;
}

// Unpacks `len` hex digits from p into out; returns the end of the input.
const uint8_t* UnpackHex(const uint8_t* p, size_t len, char* out) {
  static const char kDigits[] = "0123456789abcdef";
  for (size_t i = 0; i < len; i += 2, ++p) {
    out[i] = kDigits[*p >> 4];
    if (i + 1 < len) out[i + 1] = kDigits[*p & 15];
  }
  return p;
}

std::string Hex(uint8_t b) {
  static const char kDigits[] = "0123456789abcdef";
  return std::string("0x") + kDigits[b >> 4] + kDigits[b & 15];
}

// One block's index entry in its fixed 28-byte form (the file's and the
// reader's expectation are compared in this form).
void StoreEntry(const BinaryBlockInfo& e, uint8_t* p) {
  StoreU32(static_cast<uint32_t>(e.offset), p);
  StoreU32(static_cast<uint32_t>(e.offset >> 32), p + 4);
  StoreU32(e.messages, p + 8);
  for (int i = 0; i < 2; ++i) {
    auto v = static_cast<uint64_t>(i == 0 ? e.min_ts : e.max_ts);
    StoreU32(static_cast<uint32_t>(v), p + 12 + 8 * i);
    StoreU32(static_cast<uint32_t>(v >> 32), p + 16 + 8 * i);
  }
}

inline uint64_t LoadU64(const uint8_t* p) {
  return static_cast<uint64_t>(LoadU32(p)) |
         static_cast<uint64_t>(LoadU32(p + 4)) << 32;
}

BinaryBlockInfo LoadEntry(const uint8_t* p) {
  return {LoadU64(p), LoadU32(p + 8), static_cast<TimeNs>(LoadU64(p + 12)),
          static_cast<TimeNs>(LoadU64(p + 20))};
}

// The definitions part of the block index: node names, then operation names,
// each a varint count and varint length + bytes per name, in file-id order.
void AppendName(std::vector<uint8_t>& out, std::string_view name) {
  AppendVarint(out, name.size());
  out.insert(out.end(), name.begin(), name.end());
}
template <typename Name>
void AppendNames(std::vector<uint8_t>& out, size_t count, Name name) {
  AppendVarint(out, count);
  for (size_t i = 0; i < count; ++i) AppendName(out, name(i));
}
template <typename NodeName, typename OpName>
void AppendDefinitions(std::vector<uint8_t>& out, size_t node_count,
                       NodeName node_name, size_t op_count, OpName op_name) {
  AppendNames(out, node_count, node_name);
  AppendNames(out, op_count, op_name);
}

// The definitions and entries an index holds, as ReadIndex validated them.
struct BlockIndex {
  std::vector<BinaryBlockInfo> blocks;
  uint64_t end_marker_offset = 0;  // where the blocks end
  std::vector<std::string> node_names;
  std::vector<std::string> op_names;
};

// What a range reader reads: blocks [first, first + entries.size()) of a
// version-2 file, checked against their entries.
struct RangePlan {
  uint64_t first = 0;
  std::vector<BinaryBlockInfo> entries;
  uint64_t end_offset = 0;    // offset just after the last block read
  uint64_t message_base = 0;  // messages in the blocks before `first`
};

// Bytes [begin, end) of a file, read with pread: what a range reader reads
// after seeking.
class FileRangeInput final : public InputStream {
 public:
  FileRangeInput(int fd, std::string path, uint64_t begin, uint64_t end)
      : fd_(fd), path_(std::move(path)), pos_(begin), end_(end) {}
  ~FileRangeInput() override { ::close(fd_); }
  Result<size_t> Read(char* buf, size_t size) override {
    size = static_cast<size_t>(std::min<uint64_t>(size, end_ - pos_));
    if (size == 0) return size_t{0};
    for (;;) {
      ssize_t n = ::pread(fd_, buf, size, static_cast<off_t>(pos_));
      if (n < 0 && errno == EINTR) continue;
      if (n < 0) {
        return Status::Error(path_ + ": read failed: " + std::strerror(errno));
      }
      pos_ += static_cast<uint64_t>(n);
      read_ += static_cast<uint64_t>(n);
      return static_cast<size_t>(n);
    }
  }
  uint64_t raw_bytes_read() const override { return read_; }
  uint32_t raw_crc32() const override { return 0; }  // not asked for a range

 private:
  int fd_;
  std::string path_;
  uint64_t pos_, end_;
  uint64_t read_ = 0;
};

class BinaryReader final : public TraceReader {
 public:
  BinaryReader(std::unique_ptr<InputStream> in, std::string path,
               std::shared_ptr<NodeTable> nodes, const ReaderOptions& options)
      : TraceReader(std::move(path), std::move(nodes)),
        in_(std::move(in)),
        options_(options),
        callid_text_{std::make_unique<char[]>(kMaxTokenBytes)},
        pathid_text_{std::make_unique<char[]>(kMaxTokenBytes)} {}

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
    version_ = LoadU32(head + kBinaryMagic.size());
    if (version_ < kBinaryOldestVersion || version_ > kBinaryVersion) {
      return Status::Error(path_ + ": unsupported binary trace version " +
                           std::to_string(version_) + " (" + kVersionsRead +
                           ")");
    }
    offset_ = sizeof head;
    return ReadAheadFirstRecord();
  }

  // A version-2 reader of the blocks `plan` names, whose definitions come
  // from the index; the input starts at the first block's header.
  Status OpenRange(RangePlan plan, const BlockIndex& index) {
    version_ = 2;
    plan_ = std::move(plan);
    range_ = true;
    block_index_ = plan_.first;
    messages_ = plan_.message_base;
    offset_ =
        plan_.entries.empty() ? plan_.end_offset : plan_.entries.front().offset;
    for (const std::string& name : index.node_names) {
      file_nodes_.push_back(nodes_->Intern(name));
    }
    // As the file names them: past a node table's limit, Intern folds
    // names, and the blocks' definitions are checked against these.
    range_node_names_ = index.node_names;
    for (const std::string& name : index.op_names) {
      file_ops_.push_back(name);
    }
    return ReadAheadFirstRecord();
  }

  uint64_t raw_bytes_read() const override { return in_->raw_bytes_read(); }
  std::optional<uint32_t> raw_crc32() const override {
    if (range_) return std::nullopt;  // not the whole file's
    return in_->raw_crc32();
  }

 private:
  // A patterned id's text: the buffer holds the prefix of `slot` (so a
  // field that keeps its prefix, as most do, writes only digits).
  struct IdText {
    std::unique_ptr<char[]> buf;
    uint64_t slot = UINT64_MAX;
  };

  // One slot of a block's prefix table: the prefix (a view into the block),
  // the digit width code and the last value seen with it.
  struct Prefix {
    const char* data;
    uint32_t len;
    uint8_t width;
    uint64_t value;
  };

  static constexpr const char* kVersionsRead =
      "this bbprof reads versions 1 and 2";

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
  bool BadIndex(uint64_t at, const std::string& what) {
    return Fail(path_ + ": corrupt binary trace: block index at byte offset " +
                std::to_string(at) + ": " + what);
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

  // Checks the block just decoded against its header and, in version 2,
  // against the index: a range reader compares it with its index entry, a
  // whole-file reader adds it to the checksum of the index it expects.
  bool FinishBlock() {
    if (block_messages_ != expected_messages_) {
      return Corrupt("holds " + std::to_string(block_messages_) +
                     " messages but its header says " +
                     std::to_string(expected_messages_));
    }
    if (version_ < 2) return true;
    BinaryBlockInfo e{block_offset_, block_messages_,
                      block_messages_ == 0 ? 0 : block_min_,
                      block_messages_ == 0 ? 0 : block_max_};
    uint8_t bytes[kBinaryIndexEntryBytes];
    StoreEntry(e, bytes);
    if (range_) {
      uint8_t want[kBinaryIndexEntryBytes];
      StoreEntry(plan_.entries[block_index_ - 1 - plan_.first], want);
      if (std::memcmp(bytes, want, sizeof bytes) != 0) {
        return Corrupt("does not match its block index entry (" +
                       std::to_string(e.messages) + " messages from " +
                       FormatTimestamp(e.min_ts) + " to " +
                       FormatTimestamp(e.max_ts) + ")");
      }
    } else {
      index_crc_ = libdeflate_crc32(index_crc_, bytes, sizeof bytes);
    }
    return true;
  }

  // Loads the next block into block_. False at the end or on error.
  [[gnu::noinline]] bool LoadBlock() {  // once a block: off the hot path
    if (done_) return false;
    if (block_index_ > plan_.first && !FinishBlock()) return false;
    if (range_ && block_index_ == plan_.first + plan_.entries.size()) {
      done_ = true;
      return false;
    }
    uint8_t h[kBinaryBlockHeaderBytes];
    Result<size_t> n = ReadFully(h, sizeof h);
    if (!n.ok()) return Fail(n.status().message());
    if (*n < sizeof h) return Truncated(offset_);
    uint32_t len = LoadU32(h);
    uint32_t count = LoadU32(h + 4);
    uint32_t crc = LoadU32(h + 8);
    if (len == 0) {
      if (count != 0 || crc != 0 || range_) {
        return Fail(path_ +
                    ": corrupt binary trace: bad end marker at byte "
                    "offset " +
                    std::to_string(offset_));
      }
      done_ = true;
      if (version_ >= 2) return ReadIndex(offset_ + sizeof h);
      uint8_t extra;
      Result<size_t> m = ReadFully(&extra, 1);
      if (!m.ok()) return Fail(m.status().message());
      if (*m != 0) {
        return Fail(path_ +
                    ": corrupt binary trace: data after the end "
                    "marker at byte offset " +
                    std::to_string(offset_ + sizeof h));
      }
      return false;
    }
    if (len > kBinaryMaxBlockPayload) {
      return Fail(path_ + ": corrupt binary trace: block " +
                  std::to_string(block_index_) + " claims " +
                  std::to_string(len) + " bytes (at most " +
                  std::to_string(kBinaryMaxBlockPayload) + ")");
    }
    if (range_) {
      size_t k = block_index_ - plan_.first;
      uint64_t next = k + 1 < plan_.entries.size() ? plan_.entries[k + 1].offset
                                                   : plan_.end_offset;
      if (offset_ + sizeof h + len != next) {
        return Fail(path_ + ": corrupt binary trace: block " +
                    std::to_string(block_index_) + " at byte offset " +
                    std::to_string(offset_) + " claims " + std::to_string(len) +
                    " bytes, but its block index entry leaves " +
                    std::to_string(next - offset_ - sizeof h));
      }
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
    block_offset_ = offset_;
    offset_ += sizeof h + len;
    ++block_index_;
    p_ = block_.data();
    end_ = p_ + len;
    expected_messages_ = count;
    block_messages_ = 0;
    block_min_ = INT64_MAX;
    block_max_ = INT64_MIN;
    prev_ts_ = 0;
    prev_callid_ = 0;
    prev_pathid_ = 0;
    prefixes_.clear();
    arena_.clear();
    arena_.reserve(2 * static_cast<size_t>(len));
    callid_text_.slot = pathid_text_.slot = UINT64_MAX;
    return true;
  }

  // Version 2, read as a whole: the block index after the end marker at
  // `at` must be exactly the one this reader would write for the blocks it
  // read (their entries, then the definitions it met), with a footer that
  // points at it. It is streamed through, not held: only its checksum and
  // the footer's 32 bytes are kept.
  bool ReadIndex(uint64_t at) {
    std::vector<uint8_t> buf(kIndexChunk + kBinaryFooterBytes);
    size_t held = 0;
    uint64_t length = 0;
    uint32_t crc = 0;
    for (;;) {
      Result<size_t> n = ReadFully(buf.data() + held, kIndexChunk);
      if (!n.ok()) return Fail(n.status().message());
      held += *n;
      if (held > kBinaryFooterBytes) {
        size_t c = held - kBinaryFooterBytes;
        crc = libdeflate_crc32(crc, buf.data(), c);
        length += c;
        std::memmove(buf.data(), buf.data() + c, kBinaryFooterBytes);
        held = kBinaryFooterBytes;
      }
      if (*n < kIndexChunk) break;
    }
    const uint8_t* f = buf.data();
    if (held < kBinaryFooterBytes ||
        std::memcmp(f + 28, kBinaryFooterTag.data(), 4) != 0) {
      return Fail(path_ +
                  ": truncated binary trace (block index at byte "
                  "offset " +
                  std::to_string(at) + ")");
    }
    const uint64_t footer_at = at + length;
    if (LoadU64(f) != at) {
      return BadIndex(footer_at,
                      "the footer says the index starts at byte "
                      "offset " +
                          std::to_string(LoadU64(f)));
    }
    if (LoadU64(f + 8) != block_index_) {
      return BadIndex(
          at, "the footer counts " + std::to_string(LoadU64(f + 8)) +
                  " blocks, the file has " + std::to_string(block_index_));
    }
    if (LoadU64(f + 16) != length || LoadU32(f + 24) != crc) {
      return BadIndex(at, "checksum or length mismatch");
    }
    // The definitions as the file defined them (node_defs_crc_: a node
    // table past its limit no longer holds every name), then the ops.
    std::vector<uint8_t> node_count, ops;
    AppendVarint(node_count, file_nodes_.size());
    AppendNames(ops, file_ops_.size(),
                [this](size_t i) { return std::string_view(file_ops_[i]); });
    uint32_t want =
        libdeflate_crc32(index_crc_, node_count.data(), node_count.size());
    want = static_cast<uint32_t>(
        crc32_combine(want, node_defs_crc_,
                      static_cast<z_off_t>(node_defs_bytes_)));
    want = libdeflate_crc32(want, ops.data(), ops.size());
    if (crc != want ||
        length != block_index_ * kBinaryIndexEntryBytes + node_count.size() +
                      node_defs_bytes_ + ops.size()) {
      return BadIndex(at, "it does not describe the blocks before it");
    }
    return false;
  }

  // Decodes a callid/pathid in `encoding` into *out (a view into the block,
  // `num` or `text`).
  [[gnu::always_inline]] bool DecodeId(uint8_t encoding, uint64_t* prev,
                                       char* num, IdText* text,
                                       std::string_view* out, bool* is_number,
                                       uint64_t* number, TokenKind kind) {
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
        auto r = std::to_chars(num, num + 24, *prev);
        *out = std::string_view(num, static_cast<size_t>(r.ptr - num));
        return true;
      }
      case kIdRaw: {
        uint64_t len;
        if (!DecodeVarint(p_, &len) || p_ > end_) {
          return CorruptAt(what, " runs past the end of the block");
        }
        if (version_ >= 2 && (len & 1)) {  // packed lowercase hex
          len >>= 1;
          if (len == 0 || len > kMaxTokenBytes ||
              (len + 1) / 2 > static_cast<uint64_t>(end_ - p_)) {
            return CorruptAt("bad hex ", what);
          }
          text->slot = UINT64_MAX;  // the buffer's prefix is overwritten
          *out = std::string_view(text->buf.get(), len);
          p_ = UnpackHex(p_, len, text->buf.get());
          return true;
        }
        if (version_ >= 2) len >>= 1;
        if (len > static_cast<uint64_t>(end_ - p_)) {
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
        if (version_ < 2) return CorruptAt("bad encoding of ", what);
        return DecodePattern(text, out, kind, what);
    }
  }

  // A patterned id (version 2): varint (prefix slot << 1 | new width), the
  // prefix itself when the slot is the next free one, the width code when
  // flagged, and (unless bare) the zigzag delta of the digits' value.
  [[gnu::always_inline]] bool DecodePattern(IdText* text, std::string_view* out,
                                            TokenKind kind, const char* what) {
    uint64_t h;
    if (!DecodeVarint(p_, &h) || p_ > end_) {
      return CorruptAt("bad patterned ", what);
    }
    const uint64_t slot = h >> 1;
    if (slot >= prefixes_.size()) [[unlikely]] {
      if (slot != prefixes_.size()) {
        return CorruptAt(what, " refers to an undefined prefix");
      }
      if (!DefinePrefix(kind, what)) return false;
    }
    Prefix& px = prefixes_[slot];
    if (h & 1) {
      uint64_t w;
      if (!DecodeVarint(p_, &w) || p_ > end_ || w > kPatternBare) {
        return CorruptAt("bad digit width of ", what);
      }
      px.width = static_cast<uint8_t>(w);
    }
    if (px.width == kPatternBare) {
      if (px.len == 0 || (px.len == 1 && px.data[0] == '-')) {
        return CorruptAt("bad bare ", what);
      }
      *out = std::string_view(px.data, px.len);
      return true;
    }
    uint64_t z;
    if (!DecodeVarint(p_, &z) || p_ > end_) {
      return CorruptAt("bad patterned ", what);
    }
    px.value += static_cast<uint64_t>(UnZigZag(z));
    uint64_t v = px.value;
    size_t nd = 1;
    while (nd < 20 && v >= kPowersOf10[nd]) ++nd;
    size_t width = px.width;
    if (width == 0) {
      // A plain number is written numerically, never as a pattern.
      if (px.len == 0) return CorruptAt("non-canonical numeric ", what);
      width = nd;
    } else if (nd > width) {
      return CorruptAt(what, " has more digits than its width");
    }
    char* buf = text->buf.get();
    if (text->slot != slot) {
      std::memcpy(buf, px.data, px.len);
      text->slot = slot;
    }
    char* d = buf + px.len;
    for (size_t i = nd; i < width; ++i) *d++ = '0';
    char* q = d + nd;
    do {
      *--q = static_cast<char>('0' + v % 10);
      v /= 10;
    } while (v != 0);
    *out = std::string_view(buf, px.len + width);
    return true;
  }

  [[gnu::noinline]] bool DefinePrefix(TokenKind kind, const char* what) {
    uint64_t len;
    if (!DecodeVarint(p_, &len) || p_ > end_) {
      return CorruptAt(what, " prefix runs past the end of the block");
    }
    const bool hex = len & 1;
    len >>= 1;
    if (len > kMaxPatternPrefixBytes) {
      return CorruptAt(what, " prefix is too long");
    }
    if ((hex ? (len + 1) / 2 : len) > static_cast<uint64_t>(end_ - p_)) {
      return CorruptAt(what, " prefix runs past the end of the block");
    }
    std::string_view prefix;
    if (hex) {
      // Unpacked into the block's arena, which never reallocates within a
      // block (it has room for twice the block), so views stay valid.
      const size_t at = arena_.size();
      arena_.resize(at + len);
      p_ = UnpackHex(p_, len, arena_.data() + at);
      prefix = std::string_view(arena_.data() + at, len);
    } else {
      prefix = std::string_view(reinterpret_cast<const char*>(p_), len);
      p_ += len;
    }
    // Digits follow a prefix, so "" and "-" are prefixes even though they
    // are not tokens; anything else must be one.
    if (!prefix.empty() && prefix != "-") {
      if (std::string why = CheckToken(prefix, kind); !why.empty()) {
        return BadToken("prefix of " + why);
      }
    }
    prefixes_.push_back({prefix.data(), static_cast<uint32_t>(len), 0, 0});
    return true;
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

  // A definition of file-local id `a` named `name` among `count` known:
  // the next id in a whole-file read; in a range read, one that the index
  // defined with the same name.
  template <typename NameOf>
  bool CheckDefinition(const char* what, uint64_t a, size_t count,
                       std::string_view name, NameOf name_of) {
    if (range_) {
      if (a < count && name_of(a) == name) return true;
      return Corrupt(std::string(what) + " id " + std::to_string(a) +
                     " is not the one its block index defines");
    }
    if (a == count) return true;
    return Corrupt(std::string(what) + " id " + std::to_string(a) +
                   " defined out of order (expected " + std::to_string(count) +
                   ")");
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
        if (!CheckDefinition("node", a, file_nodes_.size(), name,
                             [this](uint64_t i) {
                               return std::string_view(range_node_names_[i]);
                             })) {
          return false;
        }
        std::string why = CheckNodeName(name);
        if (!why.empty()) return Corrupt(why);
        if (!range_) {
          file_nodes_.push_back(nodes_->Intern(name));
          scratch_.clear();
          AppendName(scratch_, name);
          node_defs_crc_ =
              libdeflate_crc32(node_defs_crc_, scratch_.data(), scratch_.size());
          node_defs_bytes_ += scratch_.size();
        }
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
          return Corrupt("operation definition runs past the end of the block");
        }
        std::string_view name(reinterpret_cast<const char*>(p_), len);
        p_ += len;
        if (!CheckDefinition("operation", a, file_ops_.size(), name,
                             [this](uint64_t i) {
                               return std::string_view(file_ops_[i]);
                             })) {
          return false;
        }
        std::string why = CheckOpToken(name);
        if (!why.empty()) return Corrupt(why);
        if (!range_) file_ops_.emplace_back(name);
        return true;
      }
      default:
        return Corrupt("unknown op byte " + Hex(op));
    }
  }

  bool Advance(Record& rec) override { return Decode(rec); }

  [[gnu::always_inline]] bool Decode(Record& rec) {
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
      if (!DecodeId((op >> 2) & 3, &prev_callid_, callid_buf_, &callid_text_,
                    &rec.callid, &rec.callid_is_number, &rec.callid_number,
                    TokenKind::kCallid) ||
          !DecodeId((op >> 4) & 3, &prev_pathid_, pathid_buf_, &pathid_text_,
                    &rec.pathid, &rec.pathid_is_number, &rec.pathid_number,
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
      ++messages_;
      // The block's time span, for its index entry. A record not earlier
      // than all before it is the block's latest so far; an earlier one
      // (only in an unsorted trace) may be its earliest.
      if (block_messages_++ == 0) block_min_ = rec.ts_ns;
      if (rec.ts_ns >= last_ts_) [[likely]] {
        last_ts_ = rec.ts_ns;
        block_max_ = rec.ts_ns;
      } else {
        if (!options_.allow_unsorted) return OutOfOrder(rec.ts_ns);
        block_min_ = std::min(block_min_, rec.ts_ns);
        if (block_messages_ == 1) block_max_ = rec.ts_ns;
        block_max_ = std::max(block_max_, rec.ts_ns);
      }
      return true;
    }
  }

  static constexpr size_t kIndexChunk = 64 * 1024;
  std::unique_ptr<InputStream> in_;
  ReaderOptions options_;
  uint32_t version_ = 0;
  bool range_ = false;
  RangePlan plan_;
  std::vector<uint8_t> block_;
  const uint8_t* p_ = nullptr;
  const uint8_t* end_ = nullptr;
  bool done_ = false;
  uint64_t block_index_ = 0;   // number of the next block to load
  uint64_t offset_ = 0;        // decompressed offset of the next block header
  uint64_t block_offset_ = 0;  // offset of the loaded block's header
  uint32_t expected_messages_ = 0;
  uint32_t block_messages_ = 0;
  TimeNs block_min_ = INT64_MAX;
  TimeNs block_max_ = INT64_MIN;
  uint32_t index_crc_ = 0;  // of the index entries of the blocks read
  // The node definitions read (varint length + name each), for the index
  // check, and in a range the names as the index defines them.
  uint32_t node_defs_crc_ = 0;
  uint64_t node_defs_bytes_ = 0;
  std::vector<uint8_t> scratch_;
  std::vector<std::string> range_node_names_;
  uint64_t messages_ = 0;
  TimeNs prev_ts_ = 0;
  uint64_t prev_callid_ = 0;
  uint64_t prev_pathid_ = 0;
  TimeNs last_ts_ = INT64_MIN;
  std::vector<NodeId> file_nodes_;  // file-local id -> NodeTable id
  // File-local operation id -> name. A deque, so that the views handed out
  // in Record::op stay valid as definitions are added.
  std::deque<std::string> file_ops_;
  std::vector<Prefix> prefixes_;  // this block's prefix table
  std::vector<char> arena_;       // its prefixes that were packed hex
  // Where decoded numeric ids are written out as text.
  char callid_buf_[24] = {};
  char pathid_buf_[24] = {};
  IdText callid_text_;  // and patterned ones
  IdText pathid_text_;
};

// The records of an inner reader with from <= timestamp < to, and its meta
// lines: what OpenBinaryTimeRange hands out. A wrapper, so that the binary
// reader's loop pays nothing for a filter it mostly does not have.
class TimeRangeFilter final : public TraceReader {
 public:
  TimeRangeFilter(std::unique_ptr<TraceReader> inner, TimeNs from_ns,
                  TimeNs to_ns, bool sorted)
      : TraceReader(inner->path(), inner->shared_nodes()),
        inner_(std::move(inner)),
        from_ns_(from_ns),
        to_ns_(to_ns),
        sorted_(sorted) {}

  Status Open() { return ReadAheadFirstRecord(); }
  uint64_t raw_bytes_read() const override { return inner_->raw_bytes_read(); }

 private:
  bool Advance(Record& rec) override {
    bool got = false;
    while (!done_ && inner_->Next(rec)) {
      if (rec.ts_ns >= to_ns_) {
        // In a trace in time order nothing after this is in the range.
        done_ = sorted_;
        continue;
      }
      if (rec.ts_ns >= from_ns_) {
        got = true;
        break;
      }
    }
    const std::vector<std::string>& meta = inner_->meta();
    meta_.insert(meta_.end(),
                 meta.begin() + static_cast<ptrdiff_t>(meta_.size()),
                 meta.end());
    if (!got) status_ = inner_->status();
    return got;
  }

  std::unique_ptr<TraceReader> inner_;
  TimeNs from_ns_, to_ns_;
  bool sorted_;
  bool done_ = false;
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
    uint32_t op_id = 0;
    if (!rec.op.empty()) {
      Result<uint32_t> id = OperationId(rec.op);
      if (!id.ok()) return id.status();
      op_id = *id;
      op |= kMessageHasOp;
    }
    // Planning changes the prefix table as the reader will: nothing may fail
    // between it and writing the record. In this order: the reader meets the
    // callid's prefix first.
    IdPlan callid, pathid;
    Plan(rec.callid, rec.callid_is_number, rec.callid_number, 0, &callid);
    Plan(rec.pathid, rec.pathid_is_number, rec.pathid_number, 1, &pathid);
    op |= static_cast<uint8_t>(callid.enc << 2 | pathid.enc << 4);
    // The record's bytes are written through a pointer, not byte by byte
    // through push_back: this is the inner loop of maketrace and capture.
    // Without id text (raw ids, new prefixes) a record takes at most 106
    // bytes: it is built on the stack and appended in one copy; text goes
    // through room made in buf_.
    const size_t text = callid.text.size() + pathid.text.size();
    uint8_t small[128];
    const size_t start = buf_.size();
    if (text > 0) buf_.resize(start + sizeof small + text);
    uint8_t* const begin = text > 0 ? buf_.data() + start : small;
    uint8_t* p = begin;
    *p++ = op;
    p = PutVarint(p, ZigZag(rec.ts_ns - prev_ts_));
    prev_ts_ = rec.ts_ns;
    p = PutVarint(p, s);
    p = PutVarint(p, r);
    p = PutId(p, callid, &prev_callid_);
    p = PutId(p, pathid, &prev_pathid_);
    if (op & kMessageHasOp) p = PutVarint(p, op_id);
    if (text > 0) {
      buf_.resize(start + static_cast<size_t>(p - begin));
    } else {
      buf_.insert(buf_.end(), small, p);
    }
    ++block_messages_;
    if (rec.ts_ns < block_min_) [[unlikely]]
      block_min_ = rec.ts_ns;
    if (rec.ts_ns > block_max_) block_max_ = rec.ts_ns;
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
    flushed_ += sizeof end;
    return WriteIndex();
  }

 private:
  // How one callid or pathid is written: absent, numeric (`value` is the
  // number), raw (`text` is the token) or patterned (`slot` in the block's
  // prefix table; `text` the prefix when this id defines it; `width` the
  // new width code when it changes, else -1; `value` the digits' value).
  // Only `enc` and `text` start set (Write reads text's size for every
  // id); the rest is set with the encoding that uses it, so the numeric
  // path stores no more than it needs.
  struct IdPlan {
    uint8_t enc = kIdAbsent;
    std::string_view text;
    uint64_t value;
    uint32_t slot;
    int width;
    bool define;
    bool bare;
    uint64_t delta;  // zigzag delta from the prefix's last value
  };

  // The writer's side of a prefix table slot.
  struct Prefix {
    std::string text;
    uint32_t slot;
    uint8_t width;
    uint64_t value;
  };

  // Chooses the encoding of an id, updating the block's prefix table as the
  // reader will when it decodes the id. A number (given as one, or written
  // in canonical decimal) is numeric; other text is split into a prefix and
  // up to 19 trailing digits (`req-0042` = `req-` + 42 in width 4) and
  // written as a pattern: repeated prefixes are sent once a block, and the
  // digits as a delta from the prefix's last value. `field` is 0 for the
  // callid, 1 for the pathid (each remembers its last slot).
  [[gnu::always_inline]] void Plan(std::string_view token, bool is_number,
                                   uint64_t number, int field, IdPlan* plan) {
    if (is_number) {
      plan->enc = kIdNumeric;
      plan->value = number;
      return;
    }
    if (token.empty()) return;
    if (ParseCanonicalUnsigned(token, &plan->value)) {
      plan->enc = kIdNumeric;
      return;
    }
    PlanText(token, field, plan);
  }

  // The text part of Plan, out of line: numeric ids (maketrace, capture)
  // never come here.
  [[gnu::noinline]] void PlanText(std::string_view token, int field,
                                  IdPlan* plan) {
    // The trailing digits and their value, in one pass from the end.
    size_t d = token.size();
    size_t nd = 0;
    uint64_t v = 0;
    while (d > 0 && nd < kMaxPatternDigits) {
      const auto c = static_cast<unsigned>(token[d - 1] - '0');
      if (c > 9) break;
      v += c * kPowersOf10[nd];
      ++nd;
      --d;
    }
    const std::string_view prefix = token.substr(0, d);
    if (prefix.size() > kMaxPatternPrefixBytes) {
      plan->enc = kIdRaw;
      plan->text = token;
      return;
    }
    plan->enc = kIdPattern;
    plan->define = false;
    plan->width = -1;
    plan->bare = false;
    plan->delta = 0;
    Prefix* px = last_prefix_[field];
    if (px == nullptr || !SameText(px->text, prefix)) {
      auto it = prefix_slots_.find(prefix);
      if (it != prefix_slots_.end()) {
        px = &prefixes_[it->second];
      } else {
        const auto slot = static_cast<uint32_t>(prefixes_.size());
        px = &prefixes_.emplace_back(Prefix{std::string(prefix), slot, 0, 0});
        prefix_slots_.emplace(px->text, slot);
        plan->define = true;
        plan->text = px->text;
      }
      last_prefix_[field] = px;
    }
    plan->slot = px->slot;
    // The width code: keep the slot's when it spells these digits.
    uint8_t width;
    if (nd == 0) {
      width = kPatternBare;
    } else if (px->width == nd) {
      width = px->width;  // zero-padded to the same width (never bare here)
    } else if (token[d] != '0' || nd == 1) {
      width = 0;
    } else {
      width = static_cast<uint8_t>(nd);
    }
    if (width != px->width) {
      plan->width = width;
      px->width = width;
    }
    if (width == kPatternBare) {
      plan->bare = true;
      return;
    }
    plan->delta = ZigZag(static_cast<int64_t>(v - px->value));
    px->value = v;
  }

  // Equal text, without a call for the short prefixes most ids have.
  static bool SameText(std::string_view a, std::string_view b) {
    if (a.size() != b.size()) return false;
    if (a.size() > 16) return std::memcmp(a.data(), b.data(), a.size()) == 0;
    for (size_t i = 0; i < a.size(); ++i) {
      if (a[i] != b[i]) return false;
    }
    return true;
  }

  // A raw id or a prefix: varint (length << 1 | packed hex), then its bytes,
  // or its digits two a byte.
  static uint8_t* PutText(uint8_t* p, std::string_view text) {
    if (IsLowerHex(text)) {
      p = PutVarint(p, uint64_t{text.size()} << 1 | 1);
      return PackHex(p, text);
    }
    p = PutVarint(p, uint64_t{text.size()} << 1);
    if (!text.empty()) std::memcpy(p, text.data(), text.size());
    return p + text.size();
  }

  // Numbers first and inline: they are what maketrace and capture write.
  [[gnu::always_inline]] static uint8_t* PutId(uint8_t* p, const IdPlan& plan,
                                               uint64_t* prev) {
    if (plan.enc == kIdNumeric) {
      p = PutVarint(p, ZigZag(static_cast<int64_t>(plan.value - *prev)));
      *prev = plan.value;
      return p;
    }
    if (plan.enc == kIdAbsent) return p;
    return PutTextId(p, plan);
  }

  [[gnu::noinline]] static uint8_t* PutTextId(uint8_t* p, const IdPlan& plan) {
    if (plan.enc == kIdRaw) return PutText(p, plan.text);
    p = PutVarint(p, uint64_t{plan.slot} << 1 | (plan.width >= 0 ? 1 : 0));
    if (plan.define) p = PutText(p, plan.text);
    if (plan.width >= 0) p = PutVarint(p, static_cast<uint64_t>(plan.width));
    if (!plan.bare) p = PutVarint(p, plan.delta);
    return p;
  }

  // The file-local id of a node, emitting its definition on first use.
  uint32_t FileId(NodeId id) {
    if (id >= file_ids_.size()) file_ids_.resize(id + 1, kUndefined);
    if (file_ids_[id] == kUndefined) {
      file_ids_[id] = static_cast<uint32_t>(file_nodes_.size());
      file_nodes_.push_back(id);
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
      id = static_cast<uint32_t>(op_names_.size());
      op_names_.emplace_back(name);
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
    blocks_.push_back({flushed_, block_messages_,
                       block_messages_ == 0 ? 0 : block_min_,
                       block_messages_ == 0 ? 0 : block_max_});
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
    // Each block starts afresh: a reader may begin at any of them.
    block_messages_ = 0;
    block_min_ = INT64_MAX;
    block_max_ = INT64_MIN;
    prev_ts_ = 0;
    prev_callid_ = 0;
    prev_pathid_ = 0;
    prefixes_.clear();
    prefix_slots_.clear();
    last_prefix_[0] = last_prefix_[1] = nullptr;
    return Status::Ok();
  }

  // The block index and footer (layout in binary_format.h). The writer holds
  // 28 bytes a block for it (a 2,000th of the file), never the records.
  Status WriteIndex() {
    std::vector<uint8_t> index(blocks_.size() * kBinaryIndexEntryBytes);
    for (size_t i = 0; i < blocks_.size(); ++i) {
      StoreEntry(blocks_[i], index.data() + i * kBinaryIndexEntryBytes);
    }
    AppendDefinitions(
        index, file_nodes_.size(),
        [this](size_t i) { return nodes_->Name(file_nodes_[i]); },
        op_names_.size(),
        [this](size_t i) { return std::string_view(op_names_[i]); });
    uint8_t f[kBinaryFooterBytes];
    StoreU64(flushed_, f);
    StoreU64(blocks_.size(), f + 8);
    StoreU64(index.size(), f + 16);
    StoreU32(libdeflate_crc32(0, index.data(), index.size()), f + 24);
    std::memcpy(f + 28, kBinaryFooterTag.data(), kBinaryFooterTag.size());
    BBPROF_RETURN_IF_ERROR(
        out_->Write(reinterpret_cast<const char*>(index.data()), index.size()));
    BBPROF_RETURN_IF_ERROR(
        out_->Write(reinterpret_cast<const char*>(f), sizeof f));
    return out_->Close();
  }

  static constexpr uint32_t kUndefined = UINT32_MAX;
  std::unique_ptr<OutputStream> out_;
  const NodeTable* nodes_;
  std::vector<uint8_t> buf_;
  std::vector<uint32_t> file_ids_;  // NodeTable id -> file id
  std::vector<NodeId> file_nodes_;  // file id -> NodeTable id
  std::unordered_map<std::string, uint32_t, StringHash, std::equal_to<>>
      op_ids_;
  std::vector<std::string> op_names_;  // file id -> operation name
  std::string last_op_;
  uint32_t last_op_id_ = 0;
  // This block's prefix table (patterned ids), and each field's last prefix.
  // A deque: the map's keys are views of its strings, which must not move.
  std::deque<Prefix> prefixes_;
  std::unordered_map<std::string_view, uint32_t> prefix_slots_;
  Prefix* last_prefix_[2] = {nullptr, nullptr};
  uint32_t block_messages_ = 0;
  TimeNs block_min_ = INT64_MAX;
  TimeNs block_max_ = INT64_MIN;
  std::vector<BinaryBlockInfo> blocks_;  // the index, one entry a block
  TimeNs prev_ts_ = 0;
  uint64_t prev_callid_ = 0;
  uint64_t prev_pathid_ = 0;
  bool header_written_ = false;
  bool closed_ = false;
  uint64_t flushed_ = 0;
};

// An uncompressed binary trace opened for seeking, with its validated index.
struct IndexedFile {
  int fd = -1;
  BlockIndex index;
};

// Reads and checks PATH's block index (see binary_format.h). Every offset,
// count and length is checked against the file's size before it is used, so
// a damaged index is an error naming the byte offset, never a crash or a
// huge allocation.
Result<IndexedFile> OpenIndexed(const std::string& path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    return Status::Error(path + ": cannot open: " + std::strerror(errno));
  }
  IndexedFile file;
  file.fd = fd;
  auto fail = [&](std::string message) -> Result<IndexedFile> {
    ::close(fd);
    return Status::Error(path + ": " + std::move(message));
  };
  auto bad = [&](uint64_t at, const std::string& what) {
    return fail("corrupt binary trace: block index at byte offset " +
                std::to_string(at) + ": " + what);
  };
  auto read_at = [&](uint64_t at, uint8_t* dst, size_t size) {
    size_t got = 0;
    while (got < size) {
      ssize_t n =
          ::pread(fd, dst + got, size - got, static_cast<off_t>(at + got));
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) return false;
      got += static_cast<size_t>(n);
    }
    return true;
  };
  struct stat st;
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    return fail("a block range needs a regular file");
  }
  const auto size = static_cast<uint64_t>(st.st_size);
  uint8_t head[kBinaryFileHeaderBytes] = {};
  if (!read_at(0, head, std::min<uint64_t>(size, sizeof head))) {
    return fail("read failed");
  }
  if ((head[0] == 0x1f && head[1] == 0x8b) ||
      LoadU32(head) == 0xfd2fb528u) {  // gzip, zstd
    return fail(
        "a compressed trace cannot be read by block range (decompress it "
        "first)");
  }
  if (size < kBinaryFileHeaderBytes ||
      std::memcmp(head, kBinaryMagic.data(), kBinaryMagic.size()) != 0) {
    return fail("not a bbprof binary trace (bad magic bytes)");
  }
  const uint32_t version = LoadU32(head + kBinaryMagic.size());
  if (version < 2 || version > kBinaryVersion) {
    return fail("binary trace version " + std::to_string(version) +
                " has no block index (rewrite it with 'bbprof convert')");
  }
  constexpr uint64_t kMin =
      kBinaryFileHeaderBytes + kBinaryBlockHeaderBytes + kBinaryFooterBytes;
  if (size < kMin) {
    return fail("truncated binary trace (block index at byte offset " +
                std::to_string(size) + ")");
  }
  const uint64_t footer_at = size - kBinaryFooterBytes;
  uint8_t f[kBinaryFooterBytes];
  if (!read_at(footer_at, f, sizeof f)) return fail("read failed");
  if (std::memcmp(f + 28, kBinaryFooterTag.data(), 4) != 0) {
    return bad(footer_at, "no footer (truncated?)");
  }
  const uint64_t at = LoadU64(f), blocks = LoadU64(f + 8),
                 length = LoadU64(f + 16);
  if (at < kBinaryFileHeaderBytes + kBinaryBlockHeaderBytes || at > footer_at ||
      length != footer_at - at) {
    return bad(footer_at, "the footer places the index at byte offset " +
                              std::to_string(at) + " with " +
                              std::to_string(length) + " bytes");
  }
  if (blocks > length / kBinaryIndexEntryBytes) {
    return bad(footer_at, "the footer counts " + std::to_string(blocks) +
                              " blocks, more than the index holds");
  }
  // Zeroed padding after the index, as in a block, for the varints.
  std::vector<uint8_t> buf(length + kPadding, 0);
  if (!read_at(at, buf.data(), length)) return fail("read failed");
  if (libdeflate_crc32(0, buf.data(), length) != LoadU32(f + 24)) {
    return bad(at, "checksum mismatch");
  }
  BlockIndex& index = file.index;
  index.end_marker_offset = at - kBinaryBlockHeaderBytes;
  index.blocks.reserve(blocks);
  uint64_t expected = kBinaryFileHeaderBytes;
  for (uint64_t i = 0; i < blocks; ++i) {
    const uint64_t entry_at = at + i * kBinaryIndexEntryBytes;
    BinaryBlockInfo e = LoadEntry(buf.data() + i * kBinaryIndexEntryBytes);
    const uint64_t next =
        i + 1 < blocks ? LoadU64(buf.data() + (i + 1) * kBinaryIndexEntryBytes)
                       : index.end_marker_offset;
    if (e.offset != expected) {
      return bad(entry_at, "block " + std::to_string(i) + " at byte offset " +
                               std::to_string(e.offset) + " (expected " +
                               std::to_string(expected) + ")");
    }
    if (next <= e.offset + kBinaryBlockHeaderBytes ||
        next - e.offset - kBinaryBlockHeaderBytes > kBinaryMaxBlockPayload ||
        next > index.end_marker_offset) {
      return bad(entry_at, "block " + std::to_string(i) +
                               " ends at byte offset " + std::to_string(next) +
                               ", outside the blocks");
    }
    if (e.messages == 0 ? (e.min_ts != 0 || e.max_ts != 0)
                        : (!InTimeRange(e.min_ts) || !InTimeRange(e.max_ts) ||
                           e.min_ts > e.max_ts)) {
      return bad(entry_at,
                 "block " + std::to_string(i) + " has a bad time span");
    }
    index.blocks.push_back(e);
    expected = next;
  }
  if (expected != index.end_marker_offset) {
    return bad(at, "the blocks end at byte offset " + std::to_string(expected) +
                       ", not at the end marker");
  }
  // The definitions, read with a bounds check per field.
  const uint8_t* p = buf.data() + blocks * kBinaryIndexEntryBytes;
  const uint8_t* const end = buf.data() + length;
  auto names = [&](std::vector<std::string>* out, auto check) -> std::string {
    uint64_t count;
    if (!DecodeVarint(p, &count) || p > end ||
        count > static_cast<uint64_t>(end - p)) {
      return "bad count of definitions";
    }
    for (uint64_t i = 0; i < count; ++i) {
      uint64_t len;
      if (!DecodeVarint(p, &len) || p > end ||
          len > static_cast<uint64_t>(end - p)) {
        return "definition " + std::to_string(i) + " runs past the index";
      }
      std::string_view name(reinterpret_cast<const char*>(p), len);
      p += len;
      if (std::string why = check(name); !why.empty()) return why;
      out->emplace_back(name);
    }
    return {};
  };
  std::string why = names(&index.node_names, CheckNodeName);
  if (why.empty()) why = names(&index.op_names, CheckOpToken);
  if (why.empty() && p != end) why = "bytes after the definitions";
  if (!why.empty()) {
    return bad(at + blocks * kBinaryIndexEntryBytes, "definitions: " + why);
  }
  return file;
}

// A reader of blocks [first, end) of the file `index` describes, read
// through `fd`, which the reader owns from here on (closed on failure too).
Result<std::unique_ptr<TraceReader>> OpenPlannedRange(
    const std::string& path, int fd, const BlockIndex& index, uint64_t first,
    uint64_t end, RangePlan plan, std::shared_ptr<NodeTable> nodes,
    const ReaderOptions& options) {
  plan.first = first;
  plan.entries.assign(index.blocks.begin() + static_cast<ptrdiff_t>(first),
                      index.blocks.begin() + static_cast<ptrdiff_t>(end));
  plan.end_offset = end < index.blocks.size() ? index.blocks[end].offset
                                              : index.end_marker_offset;
  for (uint64_t i = 0; i < first; ++i) {
    plan.message_base += index.blocks[i].messages;
  }
  const uint64_t begin =
      first < end ? index.blocks[first].offset : plan.end_offset;
  if (nodes == nullptr) nodes = std::make_shared<NodeTable>();
  auto reader = std::make_unique<BinaryReader>(
      std::make_unique<FileRangeInput>(fd, path, begin, plan.end_offset), path,
      std::move(nodes), options);
  BBPROF_RETURN_IF_ERROR(reader->OpenRange(std::move(plan), index));
  return std::unique_ptr<TraceReader>(std::move(reader));
}

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

struct BinaryTraceIndex::Impl {
  std::string path;
  IndexedFile file;
  ~Impl() { ::close(file.fd); }
};

BinaryTraceIndex::BinaryTraceIndex(std::unique_ptr<Impl> impl)
    : impl_(std::move(impl)) {}
BinaryTraceIndex::~BinaryTraceIndex() = default;

const std::string& BinaryTraceIndex::path() const { return impl_->path; }

const std::vector<BinaryBlockInfo>& BinaryTraceIndex::blocks() const {
  return impl_->file.index.blocks;
}

Result<std::unique_ptr<const BinaryTraceIndex>> OpenBinaryIndex(
    const std::string& path) {
  Result<IndexedFile> file = OpenIndexed(path);
  if (!file.ok()) return file.status();
  auto impl = std::make_unique<BinaryTraceIndex::Impl>();
  impl->path = path;
  impl->file = std::move(*file);
  return std::make_unique<const BinaryTraceIndex>(std::move(impl));
}

Result<std::vector<BinaryBlockInfo>> ReadBinaryBlockIndex(
    const std::string& path) {
  Result<IndexedFile> file = OpenIndexed(path);
  if (!file.ok()) return file.status();
  ::close(file->fd);
  return std::move(file->index.blocks);
}

uint64_t BinaryMessagesHint(const std::string& path) {
  // stat, not open: opening a FIFO could block, or take its data.
  struct stat st;
  if (::stat(path.c_str(), &st) != 0 || !S_ISREG(st.st_mode)) return 0;
  Result<std::vector<BinaryBlockInfo>> blocks = ReadBinaryBlockIndex(path);
  if (!blocks.ok()) return 0;
  uint64_t messages = 0;
  for (const BinaryBlockInfo& b : *blocks) messages += b.messages;
  return messages;
}

Result<std::unique_ptr<TraceReader>> OpenBinaryBlockRange(
    const BinaryTraceIndex& index, uint64_t first, uint64_t end,
    std::shared_ptr<NodeTable> nodes, const ReaderOptions& options) {
  const BinaryTraceIndex::Impl& impl = index.impl();
  const uint64_t n = impl.file.index.blocks.size();
  if (first > end || end > n) {
    return Status::Error(impl.path + ": block range [" + std::to_string(first) +
                         ", " + std::to_string(end) + ") is not within its " +
                         std::to_string(n) + " blocks");
  }
  // A descriptor of its own for the reader (pread keeps no shared offset),
  // on the file the index was read from, whatever the path names now.
  const int fd = ::fcntl(impl.file.fd, F_DUPFD_CLOEXEC, 0);
  if (fd < 0) {
    return Status::Error(impl.path + ": cannot open: " + std::strerror(errno));
  }
  return OpenPlannedRange(impl.path, fd, impl.file.index, first, end,
                          RangePlan{}, std::move(nodes), options);
}

Result<std::unique_ptr<TraceReader>> OpenBinaryBlockRange(
    const std::string& path, uint64_t first, uint64_t end,
    std::shared_ptr<NodeTable> nodes, const ReaderOptions& options) {
  Result<std::unique_ptr<const BinaryTraceIndex>> index = OpenBinaryIndex(path);
  if (!index.ok()) return index.status();
  return OpenBinaryBlockRange(**index, first, end, std::move(nodes), options);
}

Result<std::unique_ptr<TraceReader>> OpenBinaryTimeRange(
    const std::string& path, TimeNs from_ns, TimeNs to_ns,
    std::shared_ptr<NodeTable> nodes, const ReaderOptions& options) {
  Result<IndexedFile> file = OpenIndexed(path);
  if (!file.ok()) return file.status();
  // The first and last blocks whose span meets [from, to); in a trace in
  // time order, the blocks between them are all in it too.
  const std::vector<BinaryBlockInfo>& blocks = file->index.blocks;
  uint64_t first = blocks.size(), last = 0;
  for (uint64_t i = 0; i < blocks.size(); ++i) {
    const BinaryBlockInfo& b = blocks[i];
    if (b.messages == 0 || b.max_ts < from_ns || b.min_ts >= to_ns) continue;
    first = std::min(first, i);
    last = i;
  }
  if (first == blocks.size()) last = first - 1;  // none: an empty range
  Result<std::unique_ptr<TraceReader>> inner =
      OpenPlannedRange(path, file->fd, file->index, first, last + 1,
                       RangePlan{}, nodes, options);
  if (!inner.ok()) return inner.status();
  auto reader = std::make_unique<TimeRangeFilter>(
      std::move(*inner), from_ns, to_ns, !options.allow_unsorted);
  BBPROF_RETURN_IF_ERROR(reader->Open());
  return std::unique_ptr<TraceReader>(std::move(reader));
}

}  // namespace bbprof::trace
