// memcached text protocol (protocol.txt in the memcached sources). Each
// command line is a call, each response its return, paired in order; the
// token is the request's index on the connection. Storage commands carry a
// data block (skipped); retrieval and stats responses run over several lines
// (VALUE blocks or STAT lines) up to END. Commands sent with `noreply` get
// no response: they are messages, not calls.
#include <vector>

#include "capture/decoders/decoders.h"
#include "capture/decoders/line_util.h"
#include "capture/decoders/op_names.h"
#include "capture/decoders/small_fifo.h"
#include "capture/decoders/stream_buffer.h"

namespace bbprof::capture {
namespace {

constexpr size_t kMaxLine = size_t{8} * 1024;
constexpr int64_t kMaxData = int64_t{1} << 30;
constexpr size_t kMaxPending = 1 << 16;

std::vector<std::string_view> Words(std::string_view line) {
  std::vector<std::string_view> w;
  size_t i = 0;
  while (i < line.size()) {
    while (i < line.size() && line[i] == ' ') {
      ++i;
    }
    size_t j = i;
    while (j < line.size() && line[j] != ' ') {
      ++j;
    }
    if (j > i) {
      w.push_back(line.substr(i, j - i));
    }
    i = j;
  }
  return w;
}

bool IsStorage(std::string_view c) {
  return c == "set" || c == "add" || c == "replace" || c == "append" ||
         c == "prepend" || c == "cas";
}

bool IsKnownCommand(std::string_view c) {
  static constexpr std::string_view kOthers[] = {
      "get",      "gets",    "gat",       "gats",
      "delete",   "incr",    "decr",      "touch",
      "stats",    "version", "flush_all", "verbosity",
      "quit",     "mg",      "ms",        "md",
      "ma",       "mn",      "me",        "lru_crawler",
      "slabs",    "watch",   "shutdown",  "cache_memlimit",
      "misbehave"};
  if (IsStorage(c)) {
    return true;
  }
  for (auto k : kOthers) {
    if (c == k) {
      return true;
    }
  }
  return false;
}

class MemcachedDecoder final : public StreamDecoder {
 public:
  explicit MemcachedDecoder(EventSink& sink) : sink_(sink) {}

  void OnData(Direction dir, trace::TimeNs ts,
              std::span<const std::byte> data) override {
    Side& s = side(dir);
    s.buf.Append(ts, data);
    if (dir == Direction::kToServer) {
      ParseRequests(s);
    } else {
      ParseResponses(s);
    }
  }

  void OnGap(Direction dir, uint64_t length) override {
    Side& s = side(dir);
    if (s.buf.AbsorbGap(length)) {
      return;  // inside a data block
    }
    if (!s.resync) {
      sink_.Count("memcached_resync");
    }
    s.resync = true;
    s.in_multi = false;
    if (dir == Direction::kToClient) {
      response_lost_ = true;
    }
  }

 private:
  struct Side {
    StreamBuffer buf;
    bool resync = false;
    bool in_multi = false;  // inside VALUE/STAT lines, waiting for END
  };
  Side& side(Direction d) {
    return d == Direction::kToServer ? client_ : server_;
  }

  bool TooLong(Side& s, const char* reason) {
    if (s.buf.size() <= kMaxLine) {
      return false;
    }
    if (!s.resync) {
      sink_.Count(reason);
    }
    s.resync = true;
    s.buf.Consume(s.buf.size());
    return true;
  }

  void ParseRequests(Side& s) {
    std::string_view line;
    size_t n = 0;
    while (NextBufferedLine(s.buf, &line, &n)) {
      auto w = Words(line);
      if (w.empty()) {
        s.buf.Consume(n);
        continue;
      }
      if (!IsKnownCommand(w[0])) {
        if (!s.resync) {
          sink_.Count("memcached_bad_command");
        }
        s.resync = true;
        s.buf.Consume(n);
        continue;
      }
      s.resync = false;
      trace::TimeNs ts = s.buf.TsAt(0);
      s.buf.Consume(n);
      // Storage: "<cmd> <key> <flags> <exptime> <bytes> [<cas>] [noreply]";
      // meta set: "ms <key> <datalen> <flags>*". Then the data block.
      int64_t bytes = -1;
      if (IsStorage(w[0]) && w.size() >= 5) {
        if (!ParseInt(w[4], &bytes)) {
          bytes = -1;
        }
      } else if (w[0] == "ms" && w.size() >= 3) {
        if (!ParseInt(w[2], &bytes)) {
          bytes = -1;
        }
      }
      if ((IsStorage(w[0]) || w[0] == "ms") &&
          (bytes < 0 || bytes > kMaxData)) {
        sink_.Count("memcached_bad_length");
        s.resync = true;
        continue;
      }
      if (bytes >= 0) {
        s.buf.Skip(static_cast<uint64_t>(bytes) + 2);
      }
      if (w.back() == "noreply") {
        sink_.Emit({trace::Kind::kMessage, Direction::kToServer, ts, 0, false});
        continue;
      }
      uint32_t token = next_token_++;
      if (pending_.size() >= kMaxPending) {
        sink_.Count("memcached_too_many_pending");
        pending_.pop_front();
      }
      pending_.push_back(token);
      sink_.Emit({trace::Kind::kCall, Direction::kToServer, ts, token, true,
                  MemcachedOp(w[0])});
    }
    TooLong(s, "memcached_line_too_long");
  }

  void ParseResponses(Side& s) {
    std::string_view line;
    size_t n = 0;
    while (NextBufferedLine(s.buf, &line, &n)) {
      auto w = Words(line);
      if (w.empty()) {
        s.buf.Consume(n);
        continue;
      }
      trace::TimeNs ts = s.buf.TsAt(0);
      s.buf.Consume(n);
      bool value = w[0] == "VALUE" || w[0] == "VA";
      if (value) {
        // "VALUE <key> <flags> <bytes> [<cas>]" / "VA <size> <flags>*".
        int64_t bytes = -1;
        size_t at = w[0] == "VALUE" ? 3 : 1;
        if (w.size() <= at || !ParseInt(w[at], &bytes) || bytes < 0 ||
            bytes > kMaxData) {
          if (!s.resync) {
            sink_.Count("memcached_bad_length");
          }
          s.resync = true;
          s.in_multi = false;
          continue;
        }
        s.buf.Skip(static_cast<uint64_t>(bytes) + 2);
      }
      if (s.in_multi) {
        if (w[0] == "END") {
          s.in_multi = false;
        }
        continue;
      }
      if (s.resync) {
        // Hunting: a response line the protocol defines.
        static constexpr std::string_view kStarts[] = {
            "VALUE",   "END",       "STORED",       "NOT_STORED",
            "EXISTS",  "NOT_FOUND", "DELETED",      "TOUCHED",
            "OK",      "ERROR",     "CLIENT_ERROR", "SERVER_ERROR",
            "VERSION", "STAT",      "VA",           "HD",
            "EN",      "NF",        "NS",           "EX",
            "MN",      "ME"};
        bool known = false;
        for (auto k : kStarts) {
          known |= w[0] == k;
        }
        if (!known) {
          continue;
        }
        s.resync = false;
      }
      // VALUE (classic get) and STAT run until END; meta VA is one response.
      if (w[0] == "VALUE" || w[0] == "STAT") {
        s.in_multi = true;
      }
      Reply(ts);
    }
    TooLong(s, "memcached_line_too_long");
  }

  void Reply(trace::TimeNs ts) {
    if (response_lost_ && pending_.size() > 1) {
      sink_.Count("memcached_response_lost", pending_.size() - 1);
      pending_.erase(pending_.begin(), pending_.end() - 1);
    }
    response_lost_ = false;
    if (pending_.empty()) {
      sink_.Count("memcached_unmatched_response");
      sink_.Emit({trace::Kind::kMessage, Direction::kToClient, ts, 0, false});
      return;
    }
    uint32_t token = pending_.front();
    pending_.pop_front();
    sink_.Emit({trace::Kind::kReturn, Direction::kToClient, ts, token, true});
  }

  EventSink& sink_;
  Side client_;
  Side server_;
  SmallFifo<uint32_t> pending_;
  uint32_t next_token_ = 0;
  bool response_lost_ = false;
};

int ProbeMemcached(std::span<const std::byte> p) {
  std::string_view t(reinterpret_cast<const char*>(p.data()),
                     std::min<size_t>(p.size(), kMaxLine));
  size_t nl = t.find('\n');
  auto w = Words(t.substr(0, nl == std::string_view::npos ? t.size() : nl));
  if (w.empty() || !IsKnownCommand(w[0])) {
    return 0;
  }
  // Two-letter meta commands and "get x" are short: want a key and a CRLF.
  if (nl == std::string_view::npos || w.size() < 2) {
    return 0;
  }
  return 70;
}

}  // namespace

DecoderInfo MemcachedDecoderInfo() {
  return DecoderInfo{
      .name = "memcached",
      .tcp_ports = {11211},
      .udp_ports = {},
      .probe_stream = &ProbeMemcached,
      .probe_datagram = nullptr,
      .make_stream = &MakeDecoder<MemcachedDecoder, StreamDecoder>,
      .make_datagram = nullptr,
  };
}

}  // namespace bbprof::capture
