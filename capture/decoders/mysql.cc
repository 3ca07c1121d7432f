// MySQL client/server protocol (MySQL Internals, "Client/Server Protocol"):
// packets of a 3-byte little-endian payload length and a sequence id. The
// server greets first (sequence 0); the handshake and authentication
// exchange continue the sequence. In the command phase every command starts
// a new sequence: a client packet with sequence id 0 is a call, and the
// server's first packet after it (sequence 1: OK, ERR, a result set's
// column count, ...) its return. Commands are answered in order; the token
// is the command's index on the connection. COM_QUIT, COM_STMT_CLOSE and
// COM_STMT_SEND_LONG_DATA get no response: they are messages, not calls.
//
// The op: COM_QUERY's statement verb and table (`mysql:SELECT:orders`,
// op_names.h); other commands by name (`mysql:STMT_EXECUTE`, `mysql:PING`).
// A client that asks for TLS (a 32-byte handshake response with
// CLIENT_SSL) or compression, or loses bytes outside a packet's payload, is
// no longer decoded (counted): packets carry no marker to resynchronise on.
#include <string>

#include "base/byte_cursor.h"
#include "capture/decoders/decoders.h"
#include "capture/decoders/op_names.h"
#include "capture/decoders/small_fifo.h"
#include "capture/decoders/stream_buffer.h"
#include "trace/op.h"

namespace bbprof::capture {
namespace {

constexpr size_t kMaxStatement = 4096;
constexpr size_t kMaxPending = 4096;
constexpr uint32_t kClientCompress = 0x20;
constexpr uint32_t kClientSsl = 0x800;

// Command bytes (include/my_command.h), named as the protocol does.
const char* CommandName(uint8_t c) {
  switch (c) {
    case 0x00:
      return "SLEEP";
    case 0x01:
      return "QUIT";
    case 0x02:
      return "INIT_DB";
    case 0x03:
      return "QUERY";
    case 0x04:
      return "FIELD_LIST";
    case 0x05:
      return "CREATE_DB";
    case 0x06:
      return "DROP_DB";
    case 0x07:
      return "REFRESH";
    case 0x08:
      return "SHUTDOWN";
    case 0x09:
      return "STATISTICS";
    case 0x0a:
      return "PROCESS_INFO";
    case 0x0c:
      return "PROCESS_KILL";
    case 0x0d:
      return "DEBUG";
    case 0x0e:
      return "PING";
    case 0x11:
      return "CHANGE_USER";
    case 0x12:
      return "BINLOG_DUMP";
    case 0x16:
      return "STMT_PREPARE";
    case 0x17:
      return "STMT_EXECUTE";
    case 0x18:
      return "STMT_SEND_LONG_DATA";
    case 0x19:
      return "STMT_CLOSE";
    case 0x1a:
      return "STMT_RESET";
    case 0x1b:
      return "SET_OPTION";
    case 0x1c:
      return "STMT_FETCH";
    case 0x1e:
      return "BINLOG_DUMP_GTID";
    case 0x1f:
      return "RESET_CONNECTION";
    default:
      return nullptr;
  }
}

class MysqlDecoder final : public StreamDecoder {
 public:
  explicit MysqlDecoder(EventSink& sink) : sink_(sink) {}

  void OnData(Direction dir, trace::TimeNs ts,
              std::span<const std::byte> data) override {
    Side& s = side(dir);
    if (s.lost) return;
    s.buf.Append(ts, data);
    Parse(dir, s);
  }

  void OnGap(Direction dir, uint64_t length) override {
    Side& s = side(dir);
    if (s.lost || s.buf.AbsorbGap(length)) return;
    Lose(s, "mysql_gap");
  }

 private:
  struct Side {
    StreamBuffer buf;
    bool lost = false;
    bool seen = false;  // a packet went this way
  };
  Side& side(Direction d) {
    return d == Direction::kToServer ? client_ : server_;
  }

  void Lose(Side& s, const char* reason) {
    sink_.Count(reason);
    s.lost = true;
    s.buf.Clear();
  }

  void Parse(Direction dir, Side& s) {
    const bool client = dir == Direction::kToServer;
    while (!s.lost) {
      auto d = s.buf.data();
      if (d.size() < 4) return;
      ByteCursor c(d);
      uint32_t len = c.U16Le();
      len |= uint32_t{c.U8()} << 16;
      uint8_t seq = c.U8();
      // A client's first bytes before any greeting: a capture that began in
      // the command phase. The handshake is over.
      if (!client_.seen && !server_.seen && client) handshake_done_ = true;
      const size_t want = client ? std::min<size_t>(len, kMaxStatement) : 0;
      if (d.size() < 4 + want) return;
      trace::TimeNs ts = s.buf.TsAt(0);
      auto payload = d.subspan(4, std::min<size_t>(len, d.size() - 4));
      s.seen = true;
      if (client) {
        ClientPacket(seq, len, payload, ts);
      } else {
        ServerPacket(seq, payload, ts);
      }
      s.buf.Skip(4ull + len);
    }
  }

  void ClientPacket(uint8_t seq, uint32_t len, std::span<const std::byte> p,
                    trace::TimeNs ts) {
    if (!handshake_done_) {
      // The handshake response (sequence 1): CLIENT_SSL or CLIENT_COMPRESS
      // turn the rest of the connection into bytes we cannot read.
      if (seq == 1 && p.size() >= 4) {
        ByteCursor c(p);
        uint32_t caps = c.U32Le();
        if ((caps & kClientSsl) != 0 && len == 32) {
          sink_.Count("mysql_tls");
          client_.lost = server_.lost = true;
        } else if ((caps & kClientCompress) != 0) {
          sink_.Count("mysql_compressed");
          client_.lost = server_.lost = true;
        }
      }
      return;
    }
    if (seq != 0 || p.empty()) return;  // a later packet of the command
    auto command = static_cast<uint8_t>(p[0]);
    if (command == 0x01 || command == 0x18 || command == 0x19) {
      sink_.Emit({trace::Kind::kMessage, Direction::kToServer, ts, 0, false});
      return;
    }
    std::string op;
    if (command == 0x03) {
      op = SqlOp("mysql",
                 std::string_view(reinterpret_cast<const char*>(p.data()) + 1,
                                  p.size() - 1));
    } else if (const char* name = CommandName(command)) {
      op = trace::MakeOp({"mysql", name});
    } else {
      op = trace::MakeOp({"mysql", "COM" + std::to_string(command)});
    }
    uint32_t token = next_token_++;
    if (pending_.size() >= kMaxPending) {
      sink_.Count("mysql_too_many_pending");
      pending_.pop_front();
    }
    pending_.push_back(token);
    sink_.Emit({trace::Kind::kCall, Direction::kToServer, ts, token, true, op});
  }

  void ServerPacket(uint8_t seq, std::span<const std::byte> p,
                    trace::TimeNs ts) {
    if (!handshake_done_) {
      // The server's greeting is a message; the authentication ends with
      // OK (0x00) or ERR (0xff) at a sequence id past the greeting.
      if (seq == 0) {
        sink_.Emit({trace::Kind::kMessage, Direction::kToClient, ts, 0, false});
      } else if (!p.empty() &&
                 (p[0] == std::byte{0x00} || p[0] == std::byte{0xff})) {
        handshake_done_ = true;
      }
      return;
    }
    if (seq != 1 || pending_.empty()) return;  // the rest of a response
    uint32_t token = pending_.front();
    pending_.pop_front();
    sink_.Emit({trace::Kind::kReturn, Direction::kToClient, ts, token, true});
  }

  EventSink& sink_;
  Side client_;
  Side server_;
  bool handshake_done_ = false;
  SmallFifo<uint32_t> pending_;
  uint32_t next_token_ = 0;
};

// A command packet (sequence 0) in the command phase: COM_QUERY with text,
// or a short COM_PING / COM_INIT_DB. The server's greeting comes first on a
// whole connection, so port 3306 chooses this decoder there.
int ProbeMysql(std::span<const std::byte> p) {
  ByteCursor c(p);
  uint32_t len = c.U16Le();
  len |= uint32_t{c.U8()} << 16;
  uint8_t seq = c.U8();
  uint8_t command = c.U8();
  uint8_t first = c.U8();
  if (!c.ok() || seq != 0 || len < 2 || len > (1u << 24) - 1 ||
      command != 0x03) {
    return 0;
  }
  bool letter =
      (first >= 'A' && first <= 'Z') || (first >= 'a' && first <= 'z');
  return letter ? 60 : 0;
}

}  // namespace

DecoderInfo MysqlDecoderInfo() {
  return DecoderInfo{
      .name = "mysql",
      .tcp_ports = {3306},
      .udp_ports = {},
      .probe_stream = &ProbeMysql,
      .probe_datagram = nullptr,
      .make_stream = &MakeDecoder<MysqlDecoder, StreamDecoder>,
      .make_datagram = nullptr,
  };
}

}  // namespace bbprof::capture
