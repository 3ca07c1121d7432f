// Operation names (trace field 7, shared/spec/trace-format.md) as the
// decoders build them: protocol, verb and object joined by ':', with the
// variable parts of an object (numbers, ids, hashes in a URL) folded into a
// template so that one operation has one name whatever its arguments
// (`http:GET:/item/{n}`). Every function returns a valid op token
// (trace/op.h: percent-encoded, at most 255 bytes) or "" when there is none.
// docs/decoders.md lists what each decoder records.
#ifndef BBPROF_CAPTURE_DECODERS_OP_NAMES_H_
#define BBPROF_CAPTURE_DECODERS_OP_NAMES_H_

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>

namespace bbprof::capture {

// The route template of an HTTP request target (RFC 9112 3.2): the path of
// an origin- or absolute-form target, the query and fragment dropped, each
// segment percent-decoded and folded: decimal numbers (and dates, versions:
// digits with - . _ : separators) to {n}, UUIDs to {uuid}, hex hashes and
// tokens mixing letters and digits to {id}. "*" and an authority (CONNECT)
// stay as they are.
std::string RouteTemplate(std::string_view target);
// One path segment's fold ("{n}", "{uuid}", "{id}") or "" if it is kept.
std::string_view FoldSegment(std::string_view segment);

// `http:METHOD:/route-template`.
std::string HttpOp(std::string_view method, std::string_view target);
// `grpc:/package.Service/Method` (the path is the method: not folded).
std::string GrpcOp(std::string_view path);
// `dns:A`, `dns:AAAA`, ... and `dns:TYPE1234` for types without a mnemonic.
std::string DnsOp(uint16_t qtype);
// `nfs3:GETATTR`, `mount3:MNT`, `portmap2:GETPORT`, `nlm4:LOCK`, ... with the
// procedure names Wireshark shows; `rpc:PROG:VERS:PROC` for programs it does
// not name here.
std::string RpcOp(uint32_t program, uint32_t version, uint32_t procedure);
// `redis:GET`: the command, upper-cased (Redis commands are case-blind).
std::string RedisOp(std::string_view command);
// `memcached:get`: the command as sent (the protocol's are lower case).
std::string MemcachedOp(std::string_view command);
// `pg:SELECT:users`, `mysql:INSERT:orders`: the statement's verb, upper-
// cased, and the table it names where the statement's shape shows it
// (SELECT/DELETE ... FROM t, INSERT/REPLACE INTO t, UPDATE t, TRUNCATE t,
// CREATE/DROP/ALTER TABLE t). Leading comments and blanks are skipped.
std::string SqlOp(std::string_view protocol, std::string_view statement);
// The generic rule: `PROTO:TOKEN` where TOKEN is the first bytes' run of
// ASCII letters (1 to 16) ended by a blank, CR, LF or the end of the data
// (`generic:HELO`); "" when the data does not start that way.
std::string GenericOp(std::string_view protocol,
                      std::span<const std::byte> first);

}  // namespace bbprof::capture

#endif  // BBPROF_CAPTURE_DECODERS_OP_NAMES_H_
