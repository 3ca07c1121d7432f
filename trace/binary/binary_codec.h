// The pieces of the binary trace form (trace/binary/binary_format.h) that
// its reader, writer and block index share: fixed-width and varint
// encodings, the packing of hexadecimal ids, the index entries and
// definitions, and the two ways a range reader is made. Internal to
// trace/binary/; nothing outside it includes this.
#ifndef BBPROF_TRACE_BINARY_BINARY_CODEC_H_
#define BBPROF_TRACE_BINARY_BINARY_CODEC_H_

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "trace/binary/binary_format.h"
#include "trace/node_table.h"
#include "trace/reader.h"
#include "trace/timestamp.h"

namespace bbprof::trace::binary {

// Enough zeroed bytes past a block's end that any varint that starts inside
// the block can be decoded before its position is checked.
inline constexpr size_t kPadding = 32;

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

inline constexpr uint64_t kPowersOf10[20] = {1,
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
inline bool IsLowerHex(std::string_view s) {
  if (s.size() < 2) return false;
  for (char c : s) {
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return false;
  }
  return true;
}

inline uint8_t* PackHex(uint8_t* p, std::string_view s) {
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
inline const uint8_t* UnpackHex(const uint8_t* p, size_t len, char* out) {
  static const char kDigits[] = "0123456789abcdef";
  for (size_t i = 0; i < len; i += 2, ++p) {
    out[i] = kDigits[*p >> 4];
    if (i + 1 < len) out[i + 1] = kDigits[*p & 15];
  }
  return p;
}

inline std::string Hex(uint8_t b) {
  static const char kDigits[] = "0123456789abcdef";
  return std::string("0x") + kDigits[b >> 4] + kDigits[b & 15];
}

// One block's index entry in its fixed 28-byte form (the file's and the
// reader's expectation are compared in this form).
inline void StoreEntry(const BinaryBlockInfo& e, uint8_t* p) {
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

inline BinaryBlockInfo LoadEntry(const uint8_t* p) {
  return {LoadU64(p), LoadU32(p + 8), static_cast<TimeNs>(LoadU64(p + 12)),
          static_cast<TimeNs>(LoadU64(p + 20))};
}

// The definitions part of the block index: node names, then operation names,
// each a varint count and varint length + bytes per name, in file-id order.
inline void AppendName(std::vector<uint8_t>& out, std::string_view name) {
  AppendVarint(out, name.size());
  out.insert(out.end(), name.begin(), name.end());
}
template <typename Name>
inline void AppendNames(std::vector<uint8_t>& out, size_t count, Name name) {
  AppendVarint(out, count);
  for (size_t i = 0; i < count; ++i) AppendName(out, name(i));
}
template <typename NodeName, typename OpName>
inline void AppendDefinitions(std::vector<uint8_t>& out, size_t node_count,
                              NodeName node_name, size_t op_count,
                              OpName op_name) {
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

// A reader of blocks plan.first... of a version-2 file, read from `fd`
// between `begin` and plan.end_offset (binary_reader.cc). The reader owns
// `fd` from here on, and closes it on failure too.
Result<std::unique_ptr<TraceReader>> OpenRangeReader(
    int fd, const std::string& path, uint64_t begin, RangePlan plan,
    const BlockIndex& index, std::shared_ptr<NodeTable> nodes,
    const ReaderOptions& options);

// The records of `inner` with from_ns <= timestamp < to_ns, and its meta
// lines (binary_reader.cc); `sorted`: stop at the first record past the
// range.
Result<std::unique_ptr<TraceReader>> FilterTimeRange(
    std::unique_ptr<TraceReader> inner, TimeNs from_ns, TimeNs to_ns,
    bool sorted);

}  // namespace bbprof::trace::binary

#endif  // BBPROF_TRACE_BINARY_BINARY_CODEC_H_
