// Redis (RESP2 and RESP3, https://redis.io/docs/reference/protocol-spec/).
// Each top-level client value (an array of bulk strings, or an inline
// command line) is a call; each top-level server value is the return of the
// oldest unanswered call. The token is the request's index on the
// connection. Framing values one by one is what lets pipelined requests
// (redis-benchmark -P) pair exactly, which the generic turn-taking rule
// cannot do. RESP3 push values (`>`) are messages, not returns.
#include <string>
#include <vector>

#include "capture/decoders/decoders.h"
#include "capture/decoders/line_util.h"
#include "capture/decoders/op_names.h"
#include "capture/decoders/small_fifo.h"
#include "capture/decoders/stream_buffer.h"

namespace bbprof::capture {
namespace {

constexpr size_t kMaxLine = size_t{64} * 1024;
constexpr int64_t kMaxBulk = int64_t{512} << 20;  // proto-max-bulk-len
constexpr int64_t kMaxElements = int64_t{1} << 24;
constexpr size_t kMaxDepth = 64;
constexpr size_t kMaxPending = 1 << 16;

bool IsTypeByte(char c) {
  return std::string_view("+-:$*_#,(!=%~>|").find(c) != std::string_view::npos;
}

class RedisDecoder final : public StreamDecoder {
 public:
  explicit RedisDecoder(EventSink& sink) : sink_(sink) {}

  void OnData(Direction dir, trace::TimeNs ts,
              std::span<const std::byte> data) override {
    Side& s = side(dir);
    s.buf.Append(ts, data);
    Parse(dir, s);
  }

  void OnGap(Direction dir, uint64_t length) override {
    Side& s = side(dir);
    if (s.buf.AbsorbGap(length)) {
      return;  // inside a bulk payload
    }
    StartResync(dir, s);
  }

 private:
  struct Side {
    StreamBuffer buf;
    std::vector<int64_t> stack;  // elements still expected per open aggregate
    bool resync = false;
  };
  Side& side(Direction d) {
    return d == Direction::kToServer ? client_ : server_;
  }

  void StartResync(Direction dir, Side& s) {
    if (!s.resync) {
      sink_.Count("redis_resync");
    }
    s.resync = true;
    s.stack.clear();
    if (dir == Direction::kToClient) {
      response_lost_ = true;
    } else if (awaiting_command_) {
      awaiting_command_ = false;  // the request began: a call, op unknown
      Call(command_ts_, {});
    }
  }

  void Parse(Direction dir, Side& s) {
    while (true) {
      std::string_view line;
      size_t n = 0;
      if (!NextBufferedLine(s.buf, &line, &n)) {
        if (s.buf.size() > kMaxLine) {
          if (!s.resync) {
            sink_.Count("redis_line_too_long");
          }
          StartResync(dir, s);
          s.buf.Consume(s.buf.size());
        }
        return;
      }
      bool top = s.stack.empty();
      if (top && s.resync) {
        // Hunt: a client request is an array; a reply any typed value.
        bool plausible = !line.empty() &&
                         (dir == Direction::kToServer ? line[0] == '*'
                                                      : IsTypeByte(line[0])) &&
                         Element(s, line, /*dry_run=*/true);
        if (!plausible) {
          s.buf.Consume(n);
          continue;
        }
        s.resync = false;
      }
      if (top) {
        if (line.empty()) {  // blank line between inline commands
          s.buf.Consume(n);
          continue;
        }
        trace::TimeNs ts = s.buf.TsAt(0);
        if (!IsTypeByte(line[0])) {
          if (dir == Direction::kToServer) {
            // An inline command (redis-benchmark's PING_INLINE, telnet).
            std::string op = RedisOp(line.substr(0, line.find(' ')));
            s.buf.Consume(n);
            Call(ts, op);
            continue;
          }
          Bad(dir, s, n);
          continue;
        }
        if (dir == Direction::kToServer) {
          if (!Element(s, line, false)) {
            Bad(dir, s, n);
            continue;
          }
          if (s.stack.empty()) {
            Call(ts, {});
          } else {
            // The command is the array's first element: the call is
            // emitted (at this time) once it is read.
            awaiting_command_ = true;
            command_ts_ = ts;
          }
        } else {
          bool push = line[0] == '>';
          if (!Element(s, line, false)) {
            Bad(dir, s, n);
            continue;
          }
          Reply(ts, push);
        }
        s.buf.Consume(n);
        ConsumeBulk(s, line);
        continue;
      }
      if (dir == Direction::kToServer && awaiting_command_) {
        std::string op;
        int64_t len = -1;
        if (line.starts_with('$') && ParseInt(line.substr(1), &len) &&
            len > 0 && len <= 64) {
          auto d = s.buf.data();
          if (d.size() < n + static_cast<size_t>(len)) return;  // wait for it
          op = RedisOp(
              std::string_view(reinterpret_cast<const char*>(d.data()) + n,
                               static_cast<size_t>(len)));
        }
        awaiting_command_ = false;
        Call(command_ts_, op);
      }
      if (line.empty() || !IsTypeByte(line[0]) || !Element(s, line, false)) {
        Bad(dir, s, n);
        continue;
      }
      s.buf.Consume(n);
      ConsumeBulk(s, line);
    }
  }

  // Interprets one value's first line: opens an aggregate or completes a
  // scalar (updating the stack). With dry_run, only checks it.
  bool Element(Side& s, std::string_view line, bool dry_run) {
    char t = line[0];
    int64_t v = 0;
    switch (t) {
      case '$':
      case '!':
      case '=':
        if (!ParseInt(line.substr(1), &v) || v < -1 || v > kMaxBulk) {
          return false;
        }
        break;
      case '*':
      case '~':
      case '>':
      case '%':
      case '|':
        if (!ParseInt(line.substr(1), &v) || v < -1 || v > kMaxElements) {
          return false;
        }
        break;
      case ':':
        if (!ParseInt(line.substr(1), &v)) {
          return false;
        }
        break;
      default:
        break;
    }
    if (dry_run) {
      return true;
    }
    bool aggregate =
        std::string_view("*~>%|").find(t) != std::string_view::npos;
    if (aggregate && v > 0) {
      if (s.stack.size() >= kMaxDepth) {
        return false;
      }
      int64_t count = (t == '%') ? 2 * v : (t == '|') ? 2 * v + 1 : v;
      s.stack.push_back(count);
      return true;
    }
    // A scalar, an empty or null aggregate: one element of the parent done.
    // An attribute (`|`) with no pairs still precedes the real value.
    if (t == '|') {
      s.stack.push_back(1);
      return true;
    }
    while (!s.stack.empty()) {
      if (--s.stack.back() > 0) {
        break;
      }
      s.stack.pop_back();
    }
    return true;
  }

  // After a bulk header, skip its payload and CRLF (possibly still to come).
  void ConsumeBulk(Side& s, std::string_view line) {
    char t = line[0];
    if (t != '$' && t != '!' && t != '=') {
      return;
    }
    int64_t len = 0;
    ParseInt(line.substr(1), &len);
    if (len >= 0) {
      s.buf.Skip(static_cast<uint64_t>(len) + 2);
    }
  }

  void Call(trace::TimeNs ts, std::string_view op) {
    uint32_t token = next_token_++;
    if (pending_.size() >= kMaxPending) {
      sink_.Count("redis_too_many_pending");
      pending_.pop_front();
    }
    pending_.push_back(token);
    sink_.Emit({trace::Kind::kCall, Direction::kToServer, ts, token, true, op});
  }

  void Reply(trace::TimeNs ts, bool push) {
    if (push) {
      sink_.Emit({trace::Kind::kMessage, Direction::kToClient, ts, 0, false});
      return;
    }
    if (response_lost_ && pending_.size() > 1) {
      sink_.Count("redis_response_lost", pending_.size() - 1);
      pending_.erase(pending_.begin(), pending_.end() - 1);
    }
    response_lost_ = false;
    if (pending_.empty()) {
      // Pub/sub messages in RESP2, or a reply whose request we missed.
      sink_.Count("redis_unmatched_response");
      sink_.Emit({trace::Kind::kMessage, Direction::kToClient, ts, 0, false});
      return;
    }
    uint32_t token = pending_.front();
    pending_.pop_front();
    sink_.Emit({trace::Kind::kReturn, Direction::kToClient, ts, token, true});
  }

  void Bad(Direction dir, Side& s, size_t n) {
    if (!s.resync) {
      sink_.Count("redis_bad_frame");
    }
    StartResync(dir, s);
    s.buf.Consume(n);
  }

  EventSink& sink_;
  Side client_;
  Side server_;
  SmallFifo<uint32_t> pending_;
  uint32_t next_token_ = 0;
  bool response_lost_ = false;
  // A request array opened; its command (and so its op) not read yet.
  bool awaiting_command_ = false;
  trace::TimeNs command_ts_ = 0;
};

// "*<n>\r\n$<len>\r\n" opening a command array.
int ProbeRedis(std::span<const std::byte> p) {
  std::string_view t(reinterpret_cast<const char*>(p.data()),
                     std::min<size_t>(p.size(), 64));
  if (t.size() < 8 || t[0] != '*') {
    return 0;
  }
  size_t crlf = t.find("\r\n");
  int64_t n = 0;
  if (crlf == std::string_view::npos || !ParseInt(t.substr(1, crlf - 1), &n) ||
      n < 1 || n > 1024) {
    return 0;
  }
  return t.size() > crlf + 2 && t[crlf + 2] == '$' ? 80 : 0;
}

}  // namespace

DecoderInfo RedisDecoderInfo() {
  return DecoderInfo{
      .name = "redis",
      .tcp_ports = {6379},
      .udp_ports = {},
      .probe_stream = &ProbeRedis,
      .probe_datagram = nullptr,
      .make_stream = &MakeDecoder<RedisDecoder, StreamDecoder>,
      .make_datagram = nullptr,
  };
}

}  // namespace bbprof::capture
