// Every inferred request, exportable: after the nesting algorithm (section
// 5.1) has chosen a parent for every call, each root call with the tree of
// calls it caused is one request (the paper's path instance). This writes
// them, one at a time as their trees are walked, in formats that existing
// trace viewers and tools read:
//
//   jaeger  Jaeger UI JSON ({"data":[trace...]}, the UI's "JSON File" upload)
//   otlp    OTLP/JSON traces, one TracesData per line (the OpenTelemetry
//           collector's file exporter and otlpjsonfile receiver format)
//   chrome  Chrome / Perfetto trace event JSON ({"traceEvents":[...]})
//   csv/tsv one row per request: start, pattern, latency, the node that
//           adds the most time
//
// Ids are derived from the calls (a hash of the root call's time, nodes and
// callid for the trace, of the call and its place in the tree for a span),
// so two runs write identical files. docs/formats.md shows each format.
#ifndef BBPROF_NESTING_REQUESTS_REQUEST_EXPORT_H_
#define BBPROF_NESTING_REQUESTS_REQUEST_EXPORT_H_

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "nesting/nesting.h"

namespace bbprof::nesting {

enum class RequestFormat { kJaeger, kOtlp, kChrome, kCsv, kTsv };

// "jaeger", "otlp", "chrome" (also "perfetto"), "csv", "tsv".
std::optional<RequestFormat> RequestFormatFromName(std::string_view name);
std::string_view RequestFormatName(RequestFormat format);
// From the file name: .jaeger.json, .otlp.json, .chrome.json,
// .perfetto.json, .csv, .tsv, each optionally followed by .gz or .zst.
std::optional<RequestFormat> RequestFormatForPath(std::string_view path);

struct ExportStats {
  uint64_t requests = 0;
  uint64_t calls = 0;
};

// Writes the requests of the patterns in `reported` (a pattern is known by
// its signature; requests of patterns cut by --top or --min-count are left
// out, so the export matches the report), in root call order, to `path`
// ("-" = standard output; written atomically, compressed for .gz/.zst).
// `detail` must have been run with DetailOptions::call_labels.
Result<ExportStats> ExportRequests(const DetailedResult& detail,
                                   const std::vector<Pattern>& reported,
                                   RequestFormat format,
                                   const std::string& path);

// The requests of a run nested in segments (the stream driver):
// memory bounded by the segment, not by the trace, for the export too. Each
// segment, once nested, writes the requests it owns (their calls, times,
// nodes, callids and ops, and the shape of their pattern) to one unlinked
// file in $TMPDIR (else /tmp); once every segment's patterns are added up
// and ranked, Export reads them back segment by segment, in root call
// order, through the same writers as ExportRequests. A trace of one segment
// so gives ExportRequests' bytes; over several, every request is written
// once, by the segment that owns it, with its rank in the merged result.
// The file holds about what the export writes (some 60 bytes a call plus
// its callid); it is gone when the spool is.
class RequestSpool {
 public:
  RequestSpool();
  ~RequestSpool();
  RequestSpool(const RequestSpool&) = delete;
  RequestSpool& operator=(const RequestSpool&) = delete;

  Status Create();
  // Segment k's requests: the complete roots of `d` with a pattern
  // (d.calls[i].root_pattern, an index into `shapes`: each pattern's
  // Pattern::shape). `d` needs its callids (DetailOptions::call_labels).
  // Segments may be added from several threads at once, in any order.
  Status AddSegment(uint64_t k, const DetailedResult& d,
                    const std::vector<std::string>& shapes);
  // Every pattern's signature, known by its shape: call once with the
  // merged result's patterns, before --top or --min-count cut them.
  void SetSignatures(const std::vector<Pattern>& all);
  // The requests of the `reported` patterns, as ExportRequests writes them.
  Result<ExportStats> Export(const std::vector<Pattern>& reported,
                             RequestFormat format, const std::string& path);

  // Another process's spool added to this one (the MPI driver: every rank
  // spools its own segments, rank 0 writes them all). SendTo hands this
  // spool, as messages, to `send`: first its names, ops and segments'
  // shapes, then each chunk; ReceiveFrom takes the messages another
  // spool's SendTo gave, from `receive`, and adds its segments to this
  // one, names and ops mapped to this spool's ids. A failure while sending
  // is sent on as its own message, so the receiver stops with it.
  using Message = std::string;
  Status SendTo(const std::function<Status(const Message&)>& send) const;
  Status ReceiveFrom(const std::function<Result<Message>()>& receive);

 private:
  struct State;
  std::unique_ptr<State> state_;
};

// The ids the exports use, for tests and for readers that match them.
struct TraceId {
  uint64_t hi = 0, lo = 0;
};
std::string HexId(uint64_t v);         // 16 lowercase hex digits
std::string HexId(const TraceId& id);  // 32 lowercase hex digits
// UTC ISO 8601 with nanoseconds: 2026-11-24T07:46:10.123456789Z.
std::string IsoTime(trace::TimeNs ns);

}  // namespace bbprof::nesting

#endif  // BBPROF_NESTING_REQUESTS_REQUEST_EXPORT_H_
