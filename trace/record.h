// Record: one message of the unified trace format (shared/spec/trace-format.md),
// the currency between the capture side (capture/, maketrace/, skewer/, merge)
// and the analysis side (nesting/, convolution/).
//
// Timestamps are integer nanoseconds since the Unix epoch, never floating
// point, so a trace survives any number of read/write cycles exactly. Node
// names are interned once in a NodeTable and carried as small integer ids.
// callid and pathid are views into the reader's buffer: valid until the next
// call to TraceReader::Next(); copy them if you keep them.
#ifndef BBPROF_TRACE_RECORD_H_
#define BBPROF_TRACE_RECORD_H_

#include <cstdint>
#include <string_view>

namespace bbprof::trace {

using NodeId = uint32_t;
using TimeNs = int64_t;  // nanoseconds since the Unix epoch (or a relative origin)

enum class Kind : uint8_t {
  kCall = 0,     // "CALL" (also read: "CALL_SENT")
  kReturn = 1,   // "RET"  (also read: "RET_SENT")
  kMessage = 2,  // "MSG": free-form, neither call nor return
};

// The canonical spelling written in text traces.
constexpr std::string_view KindName(Kind k) {
  switch (k) {
    case Kind::kCall:
      return "CALL";
    case Kind::kReturn:
      return "RET";
    case Kind::kMessage:
      return "MSG";
  }
  return "?";
}

struct Record {
  TimeNs ts_ns = 0;
  NodeId sender = 0;
  NodeId receiver = 0;
  Kind kind = Kind::kMessage;
  // Empty when unknown (written "-").
  std::string_view callid;
  // Ground-truth path instance (maketrace only); empty when unknown. Analysis
  // must never look at it except in evaluation.
  std::string_view pathid;
  // The operation the call asks for (trace field 7), as its decoder names it:
  // `http:GET:/item/{n}`, `nfs3:GETATTR`, `redis:GET`; empty when unknown. A
  // RET carries its CALL's op or none. A view, valid as long as callid's.
  // Built with trace/op.h so that it is always a valid token.
  std::string_view op = {};
  // For speed: a producer whose callid (pathid) is a number may give the
  // number instead of text. When the flag is set, writers use the number
  // (the text form writes it in decimal, the binary form stores it without
  // parsing) and ignore `callid` (`pathid`), which the producer may leave
  // empty. Readers give numbers only when asked (ReaderOptions::numeric_ids).
  bool callid_is_number = false;
  bool pathid_is_number = false;
  uint64_t callid_number = 0;
  uint64_t pathid_number = 0;
};

constexpr TimeNs kNsPerSecond = 1'000'000'000;

constexpr double NsToSeconds(TimeNs ns) {
  return static_cast<double>(ns) / static_cast<double>(kNsPerSecond);
}

}  // namespace bbprof::trace

#endif  // BBPROF_TRACE_RECORD_H_
