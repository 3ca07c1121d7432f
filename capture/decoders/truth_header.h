// Ground truth from real requests (`bbprof capture --truth-header NAME`):
// when the traffic carries a request id in a header (X-Request-Id, W3C
// traceparent, Jaeger uber-trace-id, Zipkin b3), the HTTP/1.x and HTTP/2
// decoders give that id to the call and its return as their pathid (trace
// format field 6). Analysis never reads it; `bbprof eval` scores against
// it, as the paper scored against its tagged PetStore traces (section 7.1).
//
// Decoders see headers one at a time; a TruthHeaderScan collects the
// request id of one message's header section.
#ifndef BBPROF_CAPTURE_DECODERS_TRUTH_HEADER_H_
#define BBPROF_CAPTURE_DECODERS_TRUTH_HEADER_H_

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace bbprof::capture {

// The header names to read, in order of preference (the first one present
// in a message wins). Names are compared case-insensitively.
class TruthHeaders {
 public:
  TruthHeaders() = default;
  // `names` must be valid (ValidateName gives the reason otherwise).
  explicit TruthHeaders(const std::vector<std::string>& names);

  // Empty if `name` is a header field name (an RFC 9110 token), else what
  // is wrong with it.
  static std::string ValidateName(std::string_view name);

  bool empty() const { return names_.empty(); }
  const std::vector<std::string>& names() const { return names_; }
  // The preference rank of header `name` (0 = first given), or -1.
  int Rank(std::string_view name) const;

 private:
  std::vector<std::string> names_;  // lower case
};

// The request id a header value carries, by the header's convention:
// traceparent `00-TRACEID-SPANID-FLAGS`, uber-trace-id
// `TRACEID:SPANID:PARENT:FLAGS` and b3 `TRACEID-SPANID[-SAMPLED[-PARENT]]`
// give their trace id (all spans of one request share it); any other header
// (X-Request-Id, X-B3-TraceId, ...) its whole value. The id is made a
// pathid token (shared/spec/trace-format.md): surrounding blanks dropped,
// bytes that are not printable ASCII, or are one of `%( ) , ;`, written as
// %XX. Empty when the value holds no id (blank, or b3's bare `0`/`1`/`d`
// sampling flag).
std::string RequestIdFromHeader(std::string_view name, std::string_view value);

// Collects the request id of one message: feed it every header of the
// message's header section, then read pathid().
class TruthHeaderScan {
 public:
  explicit TruthHeaderScan(const TruthHeaders* headers = nullptr)
      : headers_(headers) {}
  void Reset(const TruthHeaders* headers) {
    headers_ = headers;
    rank_ = -1;
    pathid_.clear();
    too_long_ = false;
  }
  void Header(std::string_view name, std::string_view value);
  const std::string& pathid() const { return pathid_; }
  // A truth header's id was longer, as a token, than a pathid may be
  // (trace::kMaxTokenBytes) and was dropped: the decoder counts it, and the
  // call goes on without that id (another truth header may still give one).
  bool id_too_long() const { return too_long_ && pathid_.empty(); }

 private:
  const TruthHeaders* headers_;
  int rank_ = -1;  // of the header pathid_ came from
  std::string pathid_;
  bool too_long_ = false;
};

}  // namespace bbprof::capture

#endif  // BBPROF_CAPTURE_DECODERS_TRUTH_HEADER_H_
