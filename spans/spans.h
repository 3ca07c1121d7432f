// spans/: recorded spans (distributed tracing) to trace records. A producer
// of traces beside capture/ and maketrace/: where capture turns packets into
// CALL and RET records, this turns the spans that Jaeger, OpenTelemetry or
// Zipkin recorded into the records a sniffer at each end of every RPC would
// have written, with the trace id as ground truth (the pathid, field 6), so
// that `bbprof eval` can score bbprof against tracing a user already has.
//
// Two steps, both pure functions of their input:
//   ParseSpans: one JSON file (Jaeger UI export, OTLP/JSON, Zipkin v2 JSON;
//     detected from content) -> a flat list of Span, spans with missing or
//     invalid fields counted by reason and left out;
//   BuildMessages: the spans -> CALL/RET messages sorted by timestamp.
#ifndef BBPROF_SPANS_SPANS_H_
#define BBPROF_SPANS_SPANS_H_

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "trace/record.h"

namespace bbprof::spans {

enum class Format { kAuto, kJaeger, kOtlp, kZipkin };

// "auto", "jaeger", "otlp", "zipkin" (for --format).
bool ParseFormat(std::string_view text, Format* out);
std::string_view FormatName(Format format);

enum class SpanKind : uint8_t {
  kInternal,
  kClient,
  kServer,
  kProducer,
  kConsumer
};

// One span, in the formats' common denominator. Identifiers are kept as the
// format spells them (hex strings in all three).
struct Span {
  std::string trace_id;
  std::string span_id;
  std::string parent_id;  // empty for a root span
  SpanKind kind = SpanKind::kInternal;
  std::string service;  // the process that recorded the span
  std::string
      remote_service;  // the peer, when the span names it (client spans)
  std::string name;    // the operation name
  trace::TimeNs start_ns = 0;  // on the recording host's clock
  trace::TimeNs end_ns = 0;
};

// Named counters (a span left out, by reason; what was built), reported by
// `bbprof import` and written to the trace's #meta import_stats line.
using Counters = std::map<std::string, uint64_t>;

// Parses one file's text: one or more top-level JSON values (a whole export,
// or JSON Lines as the OpenTelemetry collector's file exporter writes them),
// each in `format`, or detected from its keys when `format` is kAuto. `name`
// prefixes errors. Appends spans to `out` and counts the ones left out in
// `counters`. Errors: malformed JSON ("NAME: JSON error at byte N: ...") and
// a value that is none of the formats. Returns the format of the last value.
Result<Format> ParseSpans(std::string_view text, const std::string& name,
                          Format format, std::vector<Span>* out,
                          Counters* counters);

struct ImportOptions {
  // The node that calls a request's entry point (a server span without a
  // parent): the client outside the traced system.
  std::string entry_caller = "client";
  // Name it "<entry_caller>:<service>" instead, one per entry service.
  bool entry_caller_per_service = false;
};

// One record to write. Names are valid trace tokens (percent-encoded where
// the span's text could not be one).
struct Message {
  trace::TimeNs ts_ns = 0;
  trace::Kind kind = trace::Kind::kCall;
  std::string sender, receiver;
  std::string callid;  // unique per RPC: its span id
  std::string pathid;  // the trace id
  std::string op;      // the operation name (trace field 7)
  uint32_t depth = 0;  // span depth, to order equal timestamps causally
};

// Turns spans into messages, sorted by timestamp (equal timestamps: calls
// before returns, outer calls first, inner returns first):
//  - an RPC (a client span and its server child in another service; a client
//    span alone whose remote service is known; a server span alone whose
//    parent is in another service) becomes a CALL stamped when the server
//    span starts (the server host's clock) and a RET stamped when the client
//    span ends (the client host's clock), as a sniffer at each end would have
//    seen them; with one side missing, both come from the side recorded.
//    Clocks are kept as recorded: under skew a RET may precede its CALL.
//  - a server span without a parent (a request's entry point) is called by
//    options.entry_caller;
//  - spans within one process (internal spans, a server span's same-service
//    children) are walked through: a client span's caller is the service
//    that recorded it. Producer and consumer spans (queues, not RPCs) are
//    walked through and counted.
// Counts what it skips (reasons) and what it built in `counters`.
std::vector<Message> BuildMessages(const std::vector<Span>& spans,
                                   const ImportOptions& options,
                                   Counters* counters);

}  // namespace bbprof::spans

#endif  // BBPROF_SPANS_SPANS_H_
