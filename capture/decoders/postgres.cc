// PostgreSQL frontend/backend protocol 3.0 (PostgreSQL documentation,
// "Frontend/Backend Protocol", chapter 55). After the untyped startup
// messages (SSLRequest, GSSENCRequest, StartupMessage, CancelRequest: a
// length and a code), every message is a type byte and a 4-byte length that
// counts itself.
//
// One call per query. A simple query ('Q') is a call. An extended query
// (Parse 'P', Bind 'B', Describe, Execute 'E', Close ... up to Sync 'S') is
// one call from its first message to the Sync: the server answers it with
// one ReadyForQuery ('Z'), as it answers a simple query. So calls and 'Z's
// pair in order. The return is the first response message to the call
// (section 6.2: the first packet of the response); asynchronous messages
// (NoticeResponse, NotificationResponse, ParameterStatus) answer nothing.
// The token is the call's index on the connection.
//
// The op is the statement's verb and table (`pg:SELECT:users`, op_names.h):
// from a simple query's text, from a Parse's, or, for a Bind of a statement
// prepared earlier on the connection, from that Parse's. The authentication
// exchange makes no calls. A connection that turns to TLS (the server's 'S'
// to an SSLRequest) is no longer decoded (counted). One that loses bytes
// outside a message body, or shows bytes that are not a message (another
// protocol on the port), is counted and handed to the generic turn-taking
// rule for the rest of its life: a typed message has no marker to
// resynchronise on, and turns still give calls and returns.
#include <memory>
#include <string>
#include <unordered_map>

#include "base/byte_cursor.h"
#include "capture/decoders/decoders.h"
#include "capture/decoders/op_names.h"
#include "capture/decoders/small_fifo.h"
#include "capture/decoders/stream_buffer.h"

namespace bbprof::capture {
namespace {

constexpr uint32_t kProtocol3 = 196608;  // 3.0
constexpr uint32_t kSslRequest = 80877103;
constexpr uint32_t kGssRequest = 80877104;
constexpr uint32_t kCancelRequest = 80877102;
// Statement text read for the op (the rest is skipped unbuffered).
constexpr size_t kMaxStatement = 4096;
// A message longer than this is not PostgreSQL (the server's limit is 1 GB).
constexpr uint32_t kMaxMessage = 1u << 30;
constexpr size_t kMaxPending = 4096;
constexpr size_t kMaxStatements = 1024;

bool IsFrontendType(char t) {
  return std::string_view("QPBDECHSFXpdcf").find(t) != std::string_view::npos;
}

bool IsBackendType(char t) {
  return std::string_view("123ACDEGHIKNRSTVWZcdnstv").find(t) !=
         std::string_view::npos;
}

// A NUL-terminated string at the cursor (without the NUL); "" if none.
std::string_view CString(ByteCursor& c) {
  auto rest = c.rest();
  std::string_view text(reinterpret_cast<const char*>(rest.data()),
                        rest.size());
  size_t nul = text.find('\0');
  if (nul == std::string_view::npos) {
    c.Skip(rest.size());
    return text;  // cut at kMaxStatement: the statement's start is enough
  }
  c.Skip(nul + 1);
  return text.substr(0, nul);
}

// The generic rule's events after a fallback, with tokens that cannot meet
// the PostgreSQL calls' (a call index stays far below 2^31).
class FallbackSink final : public EventSink {
 public:
  explicit FallbackSink(EventSink& to) : to_(to) {}
  void Emit(const AppEvent& e) override {
    AppEvent moved = e;
    moved.token |= 0x80000000u;
    to_.Emit(moved);
  }
  void Count(std::string_view reason, uint64_t n) override {
    to_.Count(reason, n);
  }

 private:
  EventSink& to_;
};

class PostgresDecoder final : public StreamDecoder {
 public:
  explicit PostgresDecoder(EventSink& sink)
      : sink_(sink), fallback_sink_(sink) {}

  void OnData(Direction dir, trace::TimeNs ts,
              std::span<const std::byte> data) override {
    if (fallback_) {
      fallback_->OnData(dir, ts, data);
      return;
    }
    Side& s = side(dir);
    if (s.lost) return;
    s.buf.Append(ts, data);
    if (dir == Direction::kToServer) {
      ParseClient(s);
    } else {
      ParseServer(s);
    }
  }

  void OnGap(Direction dir, uint64_t length) override {
    if (fallback_) {
      fallback_->OnGap(dir, length);
      return;
    }
    Side& s = side(dir);
    if (s.lost || s.buf.AbsorbGap(length)) return;
    Lose(dir, "pg_gap");
    fallback_->OnGap(dir, length);
  }

  void OnEnd(trace::TimeNs ts) override {
    if (fallback_) fallback_->OnEnd(ts);
  }

 private:
  struct Side {
    StreamBuffer buf;
    bool lost = false;
  };
  struct Pending {
    uint32_t token;
    bool returned;
  };
  Side& side(Direction d) {
    return d == Direction::kToServer ? client_ : server_;
  }

  // Out of step: the generic rule takes the connection over, starting with
  // the bytes of `dir` not yet understood.
  void Lose(Direction dir, const char* reason) {
    sink_.Count(reason);
    fallback_ = FindDecoder("generic")->make_stream(fallback_sink_);
    Side& s = side(dir);
    if (s.buf.size() > 0) fallback_->OnData(dir, s.buf.TsAt(0), s.buf.data());
    client_.lost = server_.lost = true;
    client_.buf.Clear();
    server_.buf.Clear();
  }

  // A whole message header (type and length) is buffered; returns the
  // message length (type byte included) or 0 when more bytes are needed or
  // the side was lost. `want_body` bytes of the body must be buffered too.
  size_t Header(Side& s, bool client, size_t want_body, char* type) {
    const Direction dir = client ? Direction::kToServer : Direction::kToClient;
    auto d = s.buf.data();
    if (d.size() < 5) return 0;
    ByteCursor c(d);
    *type = static_cast<char>(c.U8());
    uint32_t len = c.U32();
    bool known = client ? IsFrontendType(*type) : IsBackendType(*type);
    if (!known || len < 4 || len > kMaxMessage) {
      Lose(dir, client ? "pg_bad_frontend_message" : "pg_bad_backend_message");
      return 0;
    }
    size_t body = len - 4;
    if (d.size() < 5 + std::min(body, want_body)) return 0;
    return 1 + len;
  }

  void ParseClient(Side& s) {
    while (!s.lost) {
      auto d = s.buf.data();
      if (startup_) {
        // Untyped: length, then the protocol version or a request code.
        if (d.size() < 8) return;
        ByteCursor c(d);
        uint32_t len = c.U32();
        uint32_t code = c.U32();
        if (len < 8 || len > 10000 ||
            (code != kProtocol3 && code != kSslRequest && code != kGssRequest &&
             code != kCancelRequest)) {
          // A capture that began after the startup: typed messages.
          startup_ = false;
          continue;
        }
        if (code == kSslRequest || code == kGssRequest) {
          encryption_asked_ = true;
        } else {
          startup_ = false;
        }
        s.buf.Skip(len);
        continue;
      }
      char type = 0;
      size_t n = Header(s, true, kMaxStatement, &type);
      if (n == 0) return;
      ByteCursor c(d.subspan(5, std::min(n - 5, d.size() - 5)));
      trace::TimeNs ts = s.buf.TsAt(0);
      switch (type) {
        case 'Q': {
          CloseGroup();
          std::string op = SqlOp("pg", CString(c));
          Call(ts, op);
          break;
        }
        case 'P': {
          std::string name(CString(c));
          std::string op = SqlOp("pg", CString(c));
          if (statements_.size() >= kMaxStatements &&
              !statements_.contains(name)) {
            statements_.clear();  // a connection preparing without end
          }
          statements_[name] = op;
          if (!in_group_) {
            in_group_ = true;
            Call(ts, op);
          }
          break;
        }
        case 'B': {
          CString(c);  // portal
          std::string name(CString(c));
          if (!in_group_) {
            in_group_ = true;
            auto it = statements_.find(name);
            Call(ts, it == statements_.end() ? std::string() : it->second);
          }
          break;
        }
        case 'D':
        case 'E':
        case 'C':
          if (!in_group_) {
            in_group_ = true;
            Call(ts, {});
          }
          break;
        case 'S':  // Sync: the group's end; the server answers with a 'Z'
          if (!in_group_) Call(ts, {});
          in_group_ = false;
          break;
        case 'F':  // FunctionCall: answered by 'V' and 'Z'
          CloseGroup();
          Call(ts, "pg:FUNCTION");
          break;
        default:  // Flush, Terminate, authentication, COPY data: no call
          break;
      }
      s.buf.Skip(n);
    }
  }

  void ParseServer(Side& s) {
    while (!s.lost) {
      auto d = s.buf.data();
      if (encryption_asked_ && !answered_encryption_) {
        // The one-byte answer to SSLRequest/GSSENCRequest.
        if (d.empty()) return;
        answered_encryption_ = true;
        char answer = static_cast<char>(d[0]);
        s.buf.Consume(1);
        if (answer == 'S' || answer == 'G') {
          sink_.Count("pg_encrypted");
          client_.lost = server_.lost = true;
          return;
        }
        encryption_asked_ = false;
        answered_encryption_ = false;
        continue;
      }
      char type = 0;
      size_t n = Header(s, false, 0, &type);
      if (n == 0) return;
      trace::TimeNs ts = s.buf.TsAt(0);
      bool async = type == 'N' || type == 'A' || type == 'S';
      bool startup = type == 'R' || type == 'K';
      if (!async && !startup && !pending_.empty()) {
        Pending& p = pending_.front();
        if (!p.returned) {
          p.returned = true;
          sink_.Emit(
              {trace::Kind::kReturn, Direction::kToClient, ts, p.token, true});
        }
        if (type == 'Z') pending_.pop_front();
      }
      s.buf.Skip(n);
    }
  }

  // A simple query or function call inside an unfinished extended group:
  // the group never got its Sync; stop waiting for it.
  void CloseGroup() { in_group_ = false; }

  void Call(trace::TimeNs ts, std::string_view op) {
    uint32_t token = next_token_++;
    if (pending_.size() >= kMaxPending) {
      sink_.Count("pg_too_many_pending");
      pending_.pop_front();
    }
    pending_.push_back({token, false});
    sink_.Emit({trace::Kind::kCall, Direction::kToServer, ts, token, true, op});
  }

  EventSink& sink_;
  Side client_;
  Side server_;
  bool startup_ = true;
  bool encryption_asked_ = false;
  bool answered_encryption_ = false;
  bool in_group_ = false;
  SmallFifo<Pending> pending_;
  std::unordered_map<std::string, std::string> statements_;  // name -> op
  uint32_t next_token_ = 0;
  FallbackSink fallback_sink_;
  std::unique_ptr<StreamDecoder> fallback_;  // the generic rule, once lost
};

// A startup packet (SSLRequest, StartupMessage 3.0), or a simple query.
int ProbePostgres(std::span<const std::byte> p) {
  ByteCursor c(p);
  uint32_t len = c.U32();
  uint32_t code = c.U32();
  if (c.ok() && len >= 8 && len <= 10000 &&
      (code == kSslRequest || code == kGssRequest ||
       (code == kProtocol3 && len > 8))) {
    return 95;
  }
  ByteCursor q(p);
  uint8_t type = q.U8();
  uint32_t qlen = q.U32();
  uint8_t first = q.U8();
  if (q.ok() && type == 'Q' && qlen >= 5 && qlen < kMaxMessage &&
      ((first >= 'A' && first <= 'Z') || (first >= 'a' && first <= 'z'))) {
    return 60;
  }
  return 0;
}

}  // namespace

DecoderInfo PostgresDecoderInfo() {
  return DecoderInfo{
      .name = "pg",
      .tcp_ports = {5432},
      .udp_ports = {},
      .probe_stream = &ProbePostgres,
      .probe_datagram = nullptr,
      .make_stream = &MakeDecoder<PostgresDecoder, StreamDecoder>,
      .make_datagram = nullptr,
  };
}

}  // namespace bbprof::capture
