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
// zero-length block ends the stream. Inside a block, each item starts with an
// op byte: a message (kind + how callid and pathid are encoded), a node-name
// definition, or a meta line. Timestamps are zigzag varint deltas from the
// previous message; numeric callids/pathids are zigzag varint deltas from the
// previous numeric value. Delta state resets at every block.
#ifndef BBPROF_TRACE_BINARY_FORMAT_H_
#define BBPROF_TRACE_BINARY_FORMAT_H_

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

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
inline constexpr uint32_t kBinaryVersion = 1;
inline constexpr size_t kBinaryFileHeaderBytes = 12;   // magic + u32 version
inline constexpr size_t kBinaryBlockHeaderBytes = 12;  // len, count, crc32
// The writer closes a block once its payload reaches this size.
inline constexpr size_t kBinaryBlockTarget = 64 * 1024;
// No valid block is larger (one item after the target is at most a meta line
// or raw callid+pathid of kMaxLineBytes each); larger claims are corruption.
inline constexpr size_t kBinaryMaxBlockPayload = 1 << 20;

// Op byte: bits 0-1 kind (0 CALL, 1 RET, 2 MSG) or 3 = special item, whose
// sub-op is in bits 2-7 (0 node definition, 1 meta line, 2 operation-name
// definition). For messages, bits 2-3 encode the callid and bits 4-5 the
// pathid (kIdAbsent/kIdNumeric/kIdRaw); bit 6 says an operation name (trace
// field 7) follows as the varint of its file-local id; bit 7 is zero.
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

// A callid/pathid token written as a number: a canonical unsigned decimal
// (1 to 20 digits, no leading zero unless it is "0", fits in 64 bits). Any
// other token is written as raw bytes, so the round trip is exact.
bool ParseCanonicalUnsigned(std::string_view token, uint64_t* value);

}  // namespace bbprof::trace

#endif  // BBPROF_TRACE_BINARY_FORMAT_H_
