// The one token rule of the trace format (shared/spec/trace-format.md) for
// node names, callids and pathids, shared by the text reader, both writers'
// input checks and the binary reader, so that whatever one form accepts the
// other carries: valid UTF-8 (text traces are UTF-8, and the JSON results
// that echo names must be), no whitespace or control bytes, and for node
// names 1 to 255 bytes and none of "( ) , ;". A callid, pathid or op is never
// "-" (that spelling means "unknown") and at most kMaxTokenBytes long; an op
// has none of "( ) , ;" either.
//
// Messages about a bad token never echo raw control bytes or invalid UTF-8:
// EscapeForMessage writes them as \xNN.
#ifndef BBPROF_TRACE_TOKEN_H_
#define BBPROF_TRACE_TOKEN_H_

#include <cstddef>
#include <string>
#include <string_view>

namespace bbprof::trace {

inline constexpr size_t kMaxNodeNameBytes = 255;
// A callid or pathid (and the op field) must fit on one text line
// (text_format.h's kMaxLineBytes, 64 KiB) beside the other fields: three
// tokens of this size, two names and a timestamp do.
inline constexpr size_t kMaxTokenBytes = 16 * 1024;

// kOp is field 7 of the text form (the operation a call asks for): like a
// callid, but without "( ) , ;" (its decoders percent-encode those).
enum class TokenKind { kNodeName, kCallid, kPathid, kOp };

// True if `s` is well-formed UTF-8 (no overlong forms, no surrogates, at
// most U+10FFFF).
bool IsValidUtf8(std::string_view s);

// Checks `s` as a token of the given kind. Returns an empty string when
// valid, else what is wrong, starting with the kind ("callid '\x01ab'
// contains control byte 0x01"), without file or line.
std::string CheckToken(std::string_view s, TokenKind kind);

// `s` quoted for an error message: bytes below 0x20, 0x7f and bytes that are
// not part of valid UTF-8 written as \xNN, cut after `max_bytes` with "...".
std::string EscapeForMessage(std::string_view s, size_t max_bytes = 40);

}  // namespace bbprof::trace

#endif  // BBPROF_TRACE_TOKEN_H_
