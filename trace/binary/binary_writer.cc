// Binary trace writer (layout: trace/binary/binary_format.h and
// docs/formats.md): messages into checksummed blocks of about 64 KiB, text
// ids split into a per-block prefix and a delta-coded digit suffix, and the
// block index after the end marker.
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
#include "trace/binary/binary_format.h"
#include "trace/op.h"
#include "trace/string_hash.h"
#include "trace/text/text_format.h"
#include "trace/timestamp.h"
#include "trace/token.h"

namespace bbprof::trace {
namespace binary {
namespace {

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

}  // namespace

}  // namespace binary

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

std::unique_ptr<TraceWriter> NewBinaryWriter(std::unique_ptr<OutputStream> out,
                                             const NodeTable* nodes) {
  return std::make_unique<binary::BinaryWriter>(std::move(out), nodes);
}

}  // namespace bbprof::trace
