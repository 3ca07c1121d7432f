// The binary form of the trace format (shared/spec/trace-format.md, "Binary
// form"; byte-by-byte layout in docs/formats.md): the reader and writer
// behind OpenTraceReader/OpenTraceWriter for large traces. It round-trips the
// text form exactly (nanosecond timestamps, names, callids, pathids, meta
// lines) at about a fifth of its size and decodes an order of magnitude
// faster.
//
// Layout, in short: an 8-byte magic and a 4-byte version, then blocks of about
// 64 KiB, each with a 12-byte header (payload length, message count, CRC32 of
// the payload) so that truncation and corruption are detected and named; a
// zero-length block ends the blocks. Inside a block, each item starts with an
// op byte: a message (kind + how callid and pathid are encoded), a node-name
// definition, or a meta line. Timestamps are zigzag varint deltas from the
// previous message; numeric callids/pathids are zigzag varint deltas from the
// previous numeric value. Delta state resets at every block.
//
// Version 2 (what the writer writes; version 1 files are still read) adds:
// - patterned text ids: a callid or pathid that is not a canonical number is
//   split into a prefix and a trailing run of digits (`c415` = `c` + 415).
//   Prefixes live in a per-block table (defined inline on first use), and
//   the digits are a zigzag delta from the last value seen with that prefix,
//   with their zero-padded width kept exactly. Repeated ids (a request's
//   pathid) and counters under a fixed prefix cost two or three bytes
//   instead of their length;
// - a block index after the end marker: per block its offset, message count
//   and smallest and largest timestamp, then every node and operation
//   definition, checksummed, with a fixed-size footer at the very end. Blocks
//   owe nothing to earlier blocks except node and operation definitions,
//   which the index repeats, so a reader can seek straight to a block range
//   or a time range (OpenBinaryBlockRange, OpenBinaryTimeRange) without
//   scanning what comes before it.
#ifndef BBPROF_TRACE_BINARY_BINARY_FORMAT_H_
#define BBPROF_TRACE_BINARY_BINARY_FORMAT_H_

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "trace/byte_stream.h"
#include "trace/reader.h"
#include "trace/writer.h"

namespace bbprof::trace {

// PNG-style magic: a non-ASCII first byte (never the start of a text trace),
// then "BBT", then CR LF SUB LF to catch text-mode mangling.
inline constexpr std::string_view kBinaryMagic{
    "\x89"
    "BBT\r\n\x1a\n",
    8};
// The version the writer writes; readers read every version from 1 on.
inline constexpr uint32_t kBinaryVersion = 2;
inline constexpr uint32_t kBinaryOldestVersion = 1;
inline constexpr size_t kBinaryFileHeaderBytes = 12;   // magic + u32 version
inline constexpr size_t kBinaryBlockHeaderBytes = 12;  // len, count, crc32
// The writer closes a block once its payload reaches this size.
inline constexpr size_t kBinaryBlockTarget = 64 * 1024;
// No valid block is larger (one item after the target is at most a meta line
// or raw callid+pathid of kMaxLineBytes each); larger claims are corruption.
inline constexpr size_t kBinaryMaxBlockPayload = 1 << 20;

// Version 2's block index: after the end marker, one fixed-size entry per
// block (u64 offset of its header, u32 messages, i64 smallest and i64
// largest timestamp, 0 and 0 for a block without messages), then the node
// and operation definitions (each a varint count, then varint length + bytes
// per name, in file-id order), then the footer: u64 offset of the index, u64
// number of blocks, u64 length of the index, u32 CRC-32 of the index, and
// the tag "BBTX".
inline constexpr size_t kBinaryIndexEntryBytes = 28;
inline constexpr size_t kBinaryFooterBytes = 32;
inline constexpr std::string_view kBinaryFooterTag{"BBTX", 4};

// Op byte: bits 0-1 kind (0 CALL, 1 RET, 2 MSG) or 3 = special item, whose
// sub-op is in bits 2-7 (0 node definition, 1 meta line, 2 operation-name
// definition). For messages, bits 2-3 encode the callid and bits 4-5 the
// pathid (kIdAbsent/kIdNumeric/kIdRaw/kIdPattern); bit 6 says an operation name
// (trace field 7) follows as the varint of its file-local id; bit 7 is zero.
// Operation names are few and repeat on every call, so like node names they
// are defined once per file and referred to by number. Files without ops are
// byte-identical to those written before ops existed.
inline constexpr uint8_t kOpSpecial = 3;
inline constexpr uint8_t kOpNodeDef = kOpSpecial | (0 << 2);
inline constexpr uint8_t kOpMeta = kOpSpecial | (1 << 2);
inline constexpr uint8_t kOpOperationDef = kOpSpecial | (2 << 2);
inline constexpr uint8_t kMessageHasOp = 1 << 6;
inline constexpr uint8_t kIdAbsent = 0;
inline constexpr uint8_t kIdNumeric = 1;
inline constexpr uint8_t kIdRaw = 2;
inline constexpr uint8_t kIdPattern = 3;  // version 2 on
// A patterned id's digits: at most 19 (any such run fits in 64 bits). Its
// width code: 0 = the number's own decimal (no leading zero), 1 to 19 = that
// many digits, zero-padded, kPatternBare = no digits at all (the id is its
// prefix alone, as a repeated non-numeric id is).
inline constexpr size_t kMaxPatternDigits = 19;
inline constexpr uint8_t kPatternBare = 20;
// Prefixes longer than this are written raw, so that prefix + digits is
// always within the token limit.
inline constexpr size_t kMaxPatternPrefixBytes = 16 * 1024 - 20;

// True if the first bytes of a (decompressed) stream announce a binary trace:
// they start with the magic's first byte, which no text trace can.
inline bool LooksBinary(std::string_view head) {
  return !head.empty() && head[0] == kBinaryMagic[0];
}

// `in` must be positioned at the very start of the (decompressed) stream.
// Reads up to the first message, so meta() is complete for the meta lines
// written before it.
Result<std::unique_ptr<TraceReader>> NewBinaryReader(
    std::unique_ptr<InputStream> in, std::string path,
    std::shared_ptr<NodeTable> nodes, const ReaderOptions& options);

std::unique_ptr<TraceWriter> NewBinaryWriter(std::unique_ptr<OutputStream> out,
                                             const NodeTable* nodes);

// One block of a version-2 binary trace, as its index lists it.
struct BinaryBlockInfo {
  uint64_t offset = 0;  // of its header, from the start of the file
  uint32_t messages = 0;
  TimeNs min_ts = 0;  // smallest and largest timestamp in it (0, 0 if none)
  TimeNs max_ts = 0;
};

// The block index of PATH, an uncompressed version-2 binary trace in a
// seekable file, read from the file's end without scanning its blocks.
// Errors name the file and the byte offset of what is wrong.
Result<std::vector<BinaryBlockInfo>> ReadBinaryBlockIndex(
    const std::string& path);

// How many messages PATH holds, when it is an uncompressed version-2
// binary trace in a regular file: the sum of its block index's counts, read
// from the file's end. 0 for anything else (a text or compressed trace,
// standard input, a pipe, a file that cannot be read), without opening
// what is not a regular file. A sizing hint for a reader of the whole
// file, which reports its own errors.
uint64_t BinaryMessagesHint(const std::string& path);

// The block index of an uncompressed version-2 binary trace, read and
// checked once (OpenBinaryIndex) for opening many block ranges of it: a
// driver that reads a trace segment by segment does not re-read and
// re-check the index for each. It keeps the file open, so every range is
// read from the file the index describes, even if PATH is replaced later.
class BinaryTraceIndex {
 public:
  struct Impl;
  explicit BinaryTraceIndex(std::unique_ptr<Impl> impl);
  ~BinaryTraceIndex();
  BinaryTraceIndex(const BinaryTraceIndex&) = delete;
  BinaryTraceIndex& operator=(const BinaryTraceIndex&) = delete;

  const std::string& path() const;
  const std::vector<BinaryBlockInfo>& blocks() const;
  const Impl& impl() const { return *impl_; }

 private:
  std::unique_ptr<Impl> impl_;
};

// PATH's block index, as ReadBinaryBlockIndex checks it; the same errors.
Result<std::unique_ptr<const BinaryTraceIndex>> OpenBinaryIndex(
    const std::string& path);

// A reader of blocks [first, end) of PATH (as ReadBinaryBlockIndex numbers
// them): the records and meta lines of those blocks, in file order, reading
// from the first one's offset. Reading [0, k) then [k, n) gives exactly what
// reading the whole file gives. Messages are numbered in errors as in the
// whole file. Each block is checked against its index entry.
Result<std::unique_ptr<TraceReader>> OpenBinaryBlockRange(
    const std::string& path, uint64_t first, uint64_t end,
    std::shared_ptr<NodeTable> nodes = nullptr,
    const ReaderOptions& options = {});

// The same, from an index already opened: no re-reading of the index.
Result<std::unique_ptr<TraceReader>> OpenBinaryBlockRange(
    const BinaryTraceIndex& index, uint64_t first, uint64_t end,
    std::shared_ptr<NodeTable> nodes = nullptr,
    const ReaderOptions& options = {});

// A reader of the records of PATH with from_ns <= timestamp < to_ns: it reads
// only the blocks whose timestamps can hold such records (all of them that
// do, also in a trace that is not in time order) and hands out exactly those
// records, and the meta lines of the blocks it reads.
Result<std::unique_ptr<TraceReader>> OpenBinaryTimeRange(
    const std::string& path, TimeNs from_ns, TimeNs to_ns,
    std::shared_ptr<NodeTable> nodes = nullptr,
    const ReaderOptions& options = {});

// A callid/pathid token written as a number: a canonical unsigned decimal
// (1 to 20 digits, no leading zero unless it is "0", fits in 64 bits). Any
// other token is written as a pattern (or raw bytes), so the round trip is
// exact.
bool ParseCanonicalUnsigned(std::string_view token, uint64_t* value);

}  // namespace bbprof::trace

#endif  // BBPROF_TRACE_BINARY_BINARY_FORMAT_H_
