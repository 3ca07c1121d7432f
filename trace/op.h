// Operation names (trace field 7, shared/spec/trace-format.md): what a call
// asks for, as its decoder names it: protocol, verb and object joined by ':'
// (`http:GET:/item/{n}`, `dns:A`, `nfs3:GETATTR`, `pg:SELECT:users`).
//
// An op is a token of the text form: no whitespace, no control bytes, none of
// "( ) , ;" (they delimit path signatures). Decoders see arbitrary bytes in
// URLs and statements, so MakeOp percent-encodes what a token cannot hold
// (and '%' itself, so the encoding is reversible; and '[' and ']', which
// delimit ops in path signatures), and bounds the length so
// that a hostile request cannot make an op the size of a packet.
#ifndef BBPROF_TRACE_OP_H_
#define BBPROF_TRACE_OP_H_

#include <initializer_list>
#include <string>
#include <string_view>

namespace bbprof::trace {

// The longest op, in bytes, that readers accept and MakeOp builds.
inline constexpr size_t kMaxOpBytes = 255;

// Checks an op token: 1 to kMaxOpBytes bytes, not "-", no whitespace or
// control bytes, none of "( ) , ;", valid UTF-8. Returns an empty string when valid, else
// what is wrong (control bytes shown as 0xNN, never raw).
std::string CheckOpToken(std::string_view op);

// Joins `parts` with ':' after percent-encoding, in each part, every byte a
// token cannot hold, every non-ASCII byte, '%', '[' and ']'. Parts beyond
// kMaxOpBytes are cut (at a whole percent escape) and the op ends in "~" so a
// cut name is never mistaken for a real one. Empty parts are skipped. Returns
// "" when no part is left.
std::string MakeOp(std::initializer_list<std::string_view> parts);

}  // namespace bbprof::trace

#endif  // BBPROF_TRACE_OP_H_
