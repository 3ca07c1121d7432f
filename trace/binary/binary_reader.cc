// Binary trace reader (layout: trace/binary/binary_format.h and
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

#include "trace/binary/binary_codec.h"
#include "trace/op.h"
#include "trace/string_hash.h"
#include "trace/text/text_format.h"
#include "trace/timestamp.h"
#include "trace/token.h"

namespace bbprof::trace {
namespace binary {
namespace {

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

}  // namespace

Result<std::unique_ptr<TraceReader>> OpenRangeReader(
    int fd, const std::string& path, uint64_t begin, RangePlan plan,
    const BlockIndex& index, std::shared_ptr<NodeTable> nodes,
    const ReaderOptions& options) {
  auto reader = std::make_unique<BinaryReader>(
      std::make_unique<FileRangeInput>(fd, path, begin, plan.end_offset), path,
      std::move(nodes), options);
  BBPROF_RETURN_IF_ERROR(reader->OpenRange(std::move(plan), index));
  return std::unique_ptr<TraceReader>(std::move(reader));
}

Result<std::unique_ptr<TraceReader>> FilterTimeRange(
    std::unique_ptr<TraceReader> inner, TimeNs from_ns, TimeNs to_ns,
    bool sorted) {
  auto reader = std::make_unique<TimeRangeFilter>(std::move(inner), from_ns,
                                                  to_ns, sorted);
  BBPROF_RETURN_IF_ERROR(reader->Open());
  return std::unique_ptr<TraceReader>(std::move(reader));
}

}  // namespace binary

Result<std::unique_ptr<TraceReader>> NewBinaryReader(
    std::unique_ptr<InputStream> in, std::string path,
    std::shared_ptr<NodeTable> nodes, const ReaderOptions& options) {
  auto reader = std::make_unique<binary::BinaryReader>(
      std::move(in), std::move(path), std::move(nodes), options);
  BBPROF_RETURN_IF_ERROR(reader->Open());
  return std::unique_ptr<TraceReader>(std::move(reader));
}

}  // namespace bbprof::trace
