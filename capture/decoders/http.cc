// HTTP/1.x (RFC 9112). The first byte of a request line is a call, the first
// byte of the final (non-1xx) response to it is its return; the token is the
// request's index on the connection. Responses pair with requests in order
// (keep-alive and pipelining). Message framing follows RFC 9112 section 6:
// Content-Length, chunked (extensions and trailers), bodiless responses (to
// HEAD, 1xx, 204, 304), bodies delimited by connection close. A 2xx to
// CONNECT or a 101 to a non-h2c Upgrade turns the connection into a tunnel
// that is no longer decoded; a 101 to `Upgrade: h2c`, or the HTTP/2 preface
// on an HTTP port, hands the connection to the HTTP/2 decoder.
#include <algorithm>
#include <charconv>
#include <string_view>

#include "base/byte_cursor.h"
#include "capture/decoders/decoders.h"
#include "capture/decoders/op_names.h"
#include "capture/decoders/small_fifo.h"
#include "capture/decoders/stream_buffer.h"
#include "capture/decoders/truth_header.h"

namespace bbprof::capture {
namespace {

constexpr size_t kMaxLine = size_t{16} * 1024;
constexpr size_t kMaxHeaderSection = size_t{64} * 1024;
constexpr size_t kMaxPending = 4096;
constexpr std::string_view kH2Preface = "PRI * HTTP/2.0";

constexpr std::string_view kKnownMethods[] = {
    "GET",        "HEAD",  "POST",      "PUT",      "DELETE",    "CONNECT",
    "OPTIONS",    "TRACE", "PATCH",     "PROPFIND", "PROPPATCH", "MKCOL",
    "COPY",       "MOVE",  "LOCK",      "UNLOCK",   "REPORT",    "SEARCH",
    "MKCALENDAR", "PURGE", "SUBSCRIBE", "NOTIFY",   "M-SEARCH"};

bool IsKnownMethod(std::string_view m) {
  return std::find(std::begin(kKnownMethods), std::end(kKnownMethods), m) !=
         std::end(kKnownMethods);
}

bool IsTchar(char c) {
  if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
      (c >= '0' && c <= '9')) {
    return true;
  }
  return std::string_view("!#$%&'*+-.^_`|~").find(c) != std::string_view::npos;
}

char Lower(char c) {
  return (c >= 'A' && c <= 'Z') ? static_cast<char>(c + 32) : c;
}

bool IEquals(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) {
    return false;
  }
  for (size_t i = 0; i < a.size(); ++i) {
    if (Lower(a[i]) != Lower(b[i])) {
      return false;
    }
  }
  return true;
}

bool IContains(std::string_view hay, std::string_view needle) {
  if (needle.size() > hay.size()) {
    return false;
  }
  for (size_t i = 0; i + needle.size() <= hay.size(); ++i) {
    if (IEquals(hay.substr(i, needle.size()), needle)) {
      return true;
    }
  }
  return false;
}

std::string_view Trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) {
    s.remove_prefix(1);
  }
  while (!s.empty() &&
         (s.back() == ' ' || s.back() == '\t' || s.back() == '\r')) {
    s.remove_suffix(1);
  }
  return s;
}

bool IsHttpVersion(std::string_view v) {
  return v.size() == 8 && v.substr(0, 7) == "HTTP/1." && v[7] >= '0' &&
         v[7] <= '9';
}

// "METHOD SP target SP HTTP/1.x"; with `strict`, only well-known methods
// (used when hunting for a message start after a hole).
bool ParseRequestLine(std::string_view line, bool strict,
                      std::string_view* method,
                      std::string_view* target = nullptr) {
  line = Trim(line);
  size_t sp1 = line.find(' ');
  if (sp1 == 0 || sp1 == std::string_view::npos || sp1 > 32) {
    return false;
  }
  std::string_view m = line.substr(0, sp1);
  for (char c : m) {
    if (!IsTchar(c)) {
      return false;
    }
  }
  if (strict && !IsKnownMethod(m)) {
    return false;
  }
  size_t sp2 = line.rfind(' ');
  if (sp2 <= sp1 + 1) {
    return false;
  }
  if (!IsHttpVersion(line.substr(sp2 + 1))) {
    return false;
  }
  *method = m;
  if (target != nullptr) *target = Trim(line.substr(sp1 + 1, sp2 - sp1 - 1));
  return true;
}

// "HTTP/1.x SP ddd [SP reason]".
bool ParseStatusLine(std::string_view line, int* status) {
  line = Trim(line);
  if (line.size() < 12 || !IsHttpVersion(line.substr(0, 8)) || line[8] != ' ') {
    return false;
  }
  int s = 0;
  for (size_t i = 9; i < 12; ++i) {
    if (line[i] < '0' || line[i] > '9') {
      return false;
    }
    s = s * 10 + (line[i] - '0');
  }
  if (line.size() > 12 && line[12] != ' ') {
    return false;
  }
  if (s < 100) {
    return false;
  }
  *status = s;
  return true;
}

class HttpDecoder final : public StreamDecoder {
 public:
  explicit HttpDecoder(EventSink& sink) : sink_(sink) {}

  void OnData(Direction dir, trace::TimeNs ts,
              std::span<const std::byte> data) override {
    if (h2_) {
      h2_->OnData(dir, ts, data);
      return;
    }
    Side& s = side(dir);
    if (s.state == State::kTunnel) {
      return;
    }
    if (dir == Direction::kToClient) response_bytes_ += data.size();
    s.buf.Append(ts, data);
    Parse(dir, s);
  }

  void OnGap(Direction dir, uint64_t length) override {
    if (h2_) {
      h2_->OnGap(dir, length);
      return;
    }
    Side& s = side(dir);
    if (s.state == State::kTunnel || s.state == State::kUntilClose) {
      return;
    }
    if (s.buf.AbsorbGap(length)) {
      return;
    }
    if (dir == Direction::kToClient) lost_response_bytes_ += length;
    StartResync(dir, s);
  }

  void OnEnd(trace::TimeNs ts) override {
    if (h2_) {
      h2_->OnEnd(ts);
      return;
    }
    EmitDeferredCall(client_);
  }

 private:
  enum class State {
    kStart,
    kHeaders,
    kChunkSize,
    kChunkCrlf,
    kTrailers,
    kUntilClose,
    kTunnel,
  };
  struct Request {
    uint32_t token = 0;
    bool head = false;
    bool connect = false;
    bool h2c = false;
    std::string pathid;  // from a truth header, for the call and its return
  };
  struct Side {
    StreamBuffer buf;
    State state = State::kStart;
    bool resync = false;
    size_t header_bytes = 0;
    // The message being parsed.
    bool chunked = false;
    bool has_length = false;
    bool bad_length = false;
    uint64_t length = 0;
    bool upgrade_h2c = false;
    bool has_upgrade = false;
    int status = 0;
    Request req;  // server side: the request this response answers
    bool matched = false;
    // Client side, with --truth-header: the call waits for the end of its
    // header section, which may carry the request id (stamped still at its
    // first byte; the core's reorder buffer puts it in time order).
    bool call_deferred = false;
    trace::TimeNs call_ts = 0;
    std::string call_op;
    TruthHeaderScan truth;
  };
  Side& side(Direction d) {
    return d == Direction::kToServer ? client_ : server_;
  }

  void StartResync(Direction dir, Side& s) {
    EmitDeferredCall(s);  // a header section cut short: no request id
    if (!s.resync) {
      sink_.Count("http_resync");
    }
    s.resync = true;
    s.state = State::kStart;
    if (dir == Direction::kToClient) {
      response_lost_ = true;
    }
  }

  // Resynchronise after garbage: drop the buffered line and hunt for the
  // next plausible request/status line.
  void Garbage(Direction dir, Side& s, const char* reason, size_t drop) {
    if (!s.resync) {
      sink_.Count(reason);
    }
    StartResync(dir, s);
    s.buf.Consume(std::max<size_t>(drop, 1));
  }

  // Returns the next line (without CR LF) and its length including the
  // terminator, or false if no complete line is buffered.
  bool NextLine(const Side& s, std::string_view* line, size_t* consumed) {
    auto d = s.buf.data();
    std::string_view text(reinterpret_cast<const char*>(d.data()), d.size());
    size_t nl = text.find('\n');
    if (nl == std::string_view::npos) {
      return false;
    }
    *consumed = nl + 1;
    *line = text.substr(0, nl);
    if (!line->empty() && line->back() == '\r') {
      line->remove_suffix(1);
    }
    return true;
  }

  void Parse(Direction dir, Side& s) {
    while (!h2_ && s.state != State::kTunnel) {
      if (s.state == State::kUntilClose) {
        s.buf.Consume(s.buf.size());
        return;
      }
      std::string_view line;
      size_t n = 0;
      if (!NextLine(s, &line, &n)) {
        if (s.buf.size() > kMaxLine) {
          Garbage(dir, s,
                  s.state == State::kHeaders ? "http_header_too_long"
                                             : "http_line_too_long",
                  s.buf.size());
        }
        return;
      }
      switch (s.state) {
        case State::kStart:
          if (line.empty()) {  // stray CRLF between messages (RFC 9112 2.2)
            s.buf.Consume(n);
            continue;
          }
          if (dir == Direction::kToServer) {
            StartRequest(s, line, n);
          } else {
            StartResponse(s, line, n);
          }
          continue;
        case State::kHeaders:
          s.header_bytes += n;
          if (s.header_bytes > kMaxHeaderSection) {
            Garbage(dir, s, "http_header_too_long", n);
            continue;
          }
          s.buf.Consume(n);
          if (!line.empty()) {
            Header(s, line);
            continue;
          }
          EndHeaders(dir, s);
          continue;
        case State::kChunkSize: {
          std::string_view hex = line.substr(0, line.find(';'));
          hex = Trim(hex);
          uint64_t size = 0;
          auto [p, ec] =
              std::from_chars(hex.data(), hex.data() + hex.size(), size, 16);
          if (hex.empty() || ec != std::errc() ||
              p != hex.data() + hex.size() || size > (uint64_t{1} << 40)) {
            Garbage(dir, s, "http_bad_chunk_size", n);
            continue;
          }
          s.buf.Consume(n);
          if (size == 0) {
            s.state = State::kTrailers;
          } else {
            s.buf.Skip(size);
            s.state = State::kChunkCrlf;
          }
          continue;
        }
        case State::kChunkCrlf:
          if (!line.empty()) {
            Garbage(dir, s, "http_bad_chunk_size", n);
            continue;
          }
          s.buf.Consume(n);
          s.state = State::kChunkSize;
          continue;
        case State::kTrailers:
          s.buf.Consume(n);
          if (line.empty()) {
            s.state = State::kStart;
          }
          continue;
        case State::kUntilClose:
        case State::kTunnel:
          return;
      }
    }
  }

  void ResetMessage(Side& s) {
    s.state = State::kHeaders;
    s.header_bytes = 0;
    s.chunked = s.has_length = s.bad_length = false;
    s.length = 0;
    s.upgrade_h2c = s.has_upgrade = false;
    s.status = 0;
    s.matched = false;
  }

  void StartRequest(Side& s, std::string_view line, size_t n) {
    if (!h2_checked_) {
      h2_checked_ = true;
      if (line.starts_with(kH2Preface)) {
        // HTTP/2 with prior knowledge on an HTTP port (RFC 9113 3.3).
        sink_.Count("http_prior_knowledge_h2");
        SwitchToHttp2(-1);
        return;
      }
    }
    std::string_view method, target;
    if (!ParseRequestLine(line, s.resync, &method, &target)) {
      if (s.resync) {
        s.buf.Consume(n);
      } else {
        Garbage(Direction::kToServer, s, "http_bad_request_line", n);
      }
      return;
    }
    s.resync = false;
    ResetMessage(s);
    Request r;
    r.token = next_token_++;
    r.head = method == "HEAD";
    r.connect = method == "CONNECT";
    s.req = r;
    const TruthHeaders* truth = sink_.truth_headers();
    if (truth != nullptr && !truth->empty()) {
      s.call_deferred = true;
      s.call_ts = s.buf.TsAt(0);
      s.call_op = HttpOp(method, target);
      s.truth.Reset(truth);
    } else {
      sink_.Emit({trace::Kind::kCall, Direction::kToServer, s.buf.TsAt(0),
                  r.token, true, HttpOp(method, target)});
    }
    s.buf.Consume(n);
  }

  void StartResponse(Side& s, std::string_view line, size_t n) {
    int status = 0;
    if (!ParseStatusLine(line, &status)) {
      if (s.resync) {
        s.buf.Consume(n);
      } else {
        Garbage(Direction::kToClient, s, "http_bad_status_line", n);
      }
      return;
    }
    s.resync = false;
    ResetMessage(s);
    s.status = status;
    trace::TimeNs ts = s.buf.TsAt(0);
    s.buf.Consume(n);
    bool interim = status < 200 && status != 101;
    if (status == 101 && !pending_.empty() && pending_.front().h2c) {
      interim = true;
    }
    if (interim) {
      // 100 Continue, 102, 103 and the 101 of an h2c upgrade: the call is
      // not answered yet; its return is the final response.
      sink_.Count("http_interim_response");
      sink_.Emit({trace::Kind::kMessage, Direction::kToClient, ts, 0, false});
      if (status == 101) {
        s.req = pending_.front();
        s.matched = true;
        pending_.pop_front();
      }
      return;
    }
    if (response_lost_ && pending_.size() > 1) {
      // A hole swallowed response(s). Responses answer requests in order
      // (RFC 9112 section 9.3.2), so the count lost decides the pairing:
      // estimate it from the hole's size over this connection's mean
      // response size (at least one; a hole of unknown size counts one).
      // On a non-pipelined connection this pairs with the latest request;
      // on a pipelined one it keeps the queue aligned (docs/decoders.md).
      uint64_t lost = 1;
      if (responses_ > 0 && lost_response_bytes_ > 0) {
        double mean = static_cast<double>(response_bytes_) /
                      static_cast<double>(responses_);
        double k = static_cast<double>(lost_response_bytes_) / mean;
        lost = std::max<uint64_t>(1, static_cast<uint64_t>(k + 0.5));
      }
      lost = std::min<uint64_t>(lost, pending_.size() - 1);
      sink_.Count("http_response_lost", lost);
      pending_.erase(pending_.begin(),
                     pending_.begin() + static_cast<std::ptrdiff_t>(lost));
    }
    response_lost_ = false;
    lost_response_bytes_ = 0;
    ++responses_;
    if (pending_.empty()) {
      sink_.Count("http_unmatched_response");
      sink_.Emit({trace::Kind::kMessage, Direction::kToClient, ts, 0, false});
      return;
    }
    s.req = pending_.front();
    s.matched = true;
    pending_.pop_front();
    sink_.Emit({trace::Kind::kReturn, Direction::kToClient, ts, s.req.token,
                true, {}, s.req.pathid});
  }

  void Header(Side& s, std::string_view line) {
    size_t colon = line.find(':');
    if (colon == std::string_view::npos || colon == 0) {
      sink_.Count("http_bad_header");
      return;
    }
    std::string_view name = line.substr(0, colon);
    std::string_view value = Trim(line.substr(colon + 1));
    if (s.call_deferred) {
      s.truth.Header(name, value);
    }
    if (IEquals(name, "content-length")) {
      uint64_t v = 0;
      auto [p, ec] =
          std::from_chars(value.data(), value.data() + value.size(), v);
      if (value.empty() || ec != std::errc() ||
          p != value.data() + value.size() || (s.has_length && v != s.length)) {
        s.bad_length = true;
      }
      s.has_length = true;
      s.length = v;
    } else if (IEquals(name, "transfer-encoding")) {
      // Chunked only if it is the final coding (RFC 9112 6.1).
      size_t comma = value.rfind(',');
      std::string_view last = Trim(
          comma == std::string_view::npos ? value : value.substr(comma + 1));
      s.chunked = IEquals(last, "chunked");
    } else if (IEquals(name, "upgrade")) {
      s.has_upgrade = true;
      if (IContains(value, "h2c")) {
        s.upgrade_h2c = true;
      }
    }
  }

  void EndHeaders(Direction dir, Side& s) {
    if (dir == Direction::kToServer) {
      s.req.h2c = s.upgrade_h2c;
      if (s.call_deferred) {
        s.req.pathid = s.truth.pathid();
        if (s.truth.id_too_long()) sink_.Count("http_request_id_too_long");
        EmitDeferredCall(s);
      }
      if (pending_.size() >= kMaxPending) {
        sink_.Count("http_too_many_pending");
        pending_.pop_front();
      }
      pending_.push_back(s.req);
      if (s.chunked) {
        s.state = State::kChunkSize;
      } else if (s.has_length) {
        if (s.bad_length) {
          Garbage(dir, s, "http_bad_content_length", 0);
          return;
        }
        s.buf.Skip(s.length);
        s.state = State::kStart;
      } else {
        s.state = State::kStart;
      }
      return;
    }
    int st = s.status;
    if (st == 101) {
      if (s.matched && s.req.h2c) {
        sink_.Count("http_h2c_upgrade");
        SwitchToHttp2(s.req.token);
      } else {
        sink_.Count("http_upgrade_tunnel");
        EnterTunnel();
      }
      return;
    }
    if (st < 200 || st == 204 || st == 304 || (s.matched && s.req.head)) {
      s.state = State::kStart;
      return;
    }
    if (s.matched && s.req.connect && st < 300) {
      sink_.Count("http_connect_tunnel");
      EnterTunnel();
      return;
    }
    if (s.chunked) {
      s.state = State::kChunkSize;
    } else if (s.has_length && !s.bad_length) {
      s.buf.Skip(s.length);
      s.state = State::kStart;
    } else {
      if (s.bad_length) {
        sink_.Count("http_bad_content_length");
      }
      s.state = State::kUntilClose;
    }
  }

  void EmitDeferredCall(Side& s) {
    if (!s.call_deferred) {
      return;
    }
    s.call_deferred = false;
    sink_.Emit({trace::Kind::kCall, Direction::kToServer, s.call_ts,
                s.req.token, true, s.call_op, s.req.pathid});
  }

  void EnterTunnel() {
    EmitDeferredCall(client_);
    for (Side* s : {&client_, &server_}) {
      s->state = State::kTunnel;
      s->buf.Clear();
    }
  }

  void SwitchToHttp2(int64_t upgraded_token) {
    EmitDeferredCall(client_);
    h2_ = MakeHttp2Decoder(sink_, upgraded_token);
    // Hand over what is buffered beyond the HTTP/1.x part, client first.
    for (Direction d : {Direction::kToServer, Direction::kToClient}) {
      Side& s = side(d);
      if (s.buf.size() > 0) {
        h2_->OnData(d, s.buf.TsAt(0), s.buf.data());
      }
      s.buf.Clear();
    }
  }

  EventSink& sink_;
  Side client_;
  Side server_;
  SmallFifo<Request> pending_;
  uint32_t next_token_ = 0;
  bool response_lost_ = false;
  // For the number of responses a hole swallowed: bytes and responses seen
  // in the server's direction, and the size of the holes since the last.
  uint64_t response_bytes_ = 0;
  uint64_t responses_ = 0;
  uint64_t lost_response_bytes_ = 0;
  bool h2_checked_ = false;
  std::unique_ptr<StreamDecoder> h2_;
};

int ProbeHttp(std::span<const std::byte> p) {
  std::string_view text(reinterpret_cast<const char*>(p.data()),
                        std::min<size_t>(p.size(), kMaxLine));
  size_t sp = text.find(' ');
  if (sp == std::string_view::npos || sp == 0 || sp > 16) {
    return 0;
  }
  if (!IsKnownMethod(text.substr(0, sp))) {
    return 0;
  }
  size_t nl = text.find('\n');
  std::string_view method;
  if (nl != std::string_view::npos &&
      ParseRequestLine(text.substr(0, nl), true, &method)) {
    return 90;
  }
  return nl == std::string_view::npos ? 60 : 0;
}

}  // namespace

DecoderInfo HttpDecoderInfo() {
  return DecoderInfo{
      .name = "http",
      .tcp_ports = {80, 8080, 8000, 3128},
      .udp_ports = {},
      .probe_stream = &ProbeHttp,
      .probe_datagram = nullptr,
      .make_stream = &MakeDecoder<HttpDecoder, StreamDecoder>,
      .make_datagram = nullptr,
  };
}

}  // namespace bbprof::capture
