// ONC RPC (RFC 5531) over UDP and TCP: a CALL message (msg_type 0) is a
// call, a REPLY (msg_type 1) its return; the token is the xid. Over TCP each
// record is a sequence of fragments, each behind a 4-byte record mark (high
// bit: last fragment; low 31 bits: length; RFC 5531 section 11); the message
// header sits at the start of a record's first fragment.
#include <algorithm>
#include <array>
#include <string>

#include "base/byte_cursor.h"
#include "capture/decoders/decoders.h"
#include "capture/decoders/op_names.h"
#include "capture/decoders/stream_buffer.h"

namespace bbprof::capture {
namespace {

// No sane implementation sends fragments this large (Linux caps a record at
// a few MiB); a larger length means we are not at a record mark.
constexpr uint32_t kMaxFragment = 16u << 20;
// xid, msg_type, then rpcvers (call) or reply_stat (reply).
constexpr size_t kMinHeader = 12;
// A call's header up to its procedure: xid, msg_type, rpcvers, prog, vers,
// proc (RFC 5531 section 9): what its op names.
constexpr size_t kCallHeader = 24;
// What a record's start must show while hunting (PlausibleWhenHunting).
constexpr size_t kHuntHeader = 32;

enum class MsgCheck { kOk, kTruncated, kBadType, kBadVersion };

MsgCheck CheckMessage(std::span<const std::byte> m, uint32_t* xid,
                      bool* is_reply) {
  ByteCursor c(m);
  *xid = c.U32();
  uint32_t type = c.U32();
  uint32_t third = c.U32();
  if (!c.ok()) {
    return MsgCheck::kTruncated;
  }
  if (type > 1) {
    return MsgCheck::kBadType;
  }
  *is_reply = type == 1;
  // Calls carry rpcvers == 2; replies reply_stat MSG_ACCEPTED/MSG_DENIED.
  if (!*is_reply && third != 2) {
    return MsgCheck::kBadVersion;
  }
  if (*is_reply && third > 1) {
    return MsgCheck::kBadType;
  }
  return MsgCheck::kOk;
}

// A stricter look used only while hunting for a record after a hole or
// garbage, where chance alignments are likely (an NFS call's program number
// 100003 reads as a record mark): the credential or verifier that follows
// the header must be sane too. `m` holds up to 32 bytes of the message.
bool PlausibleWhenHunting(std::span<const std::byte> m, bool reply) {
  ByteCursor c(m);
  c.Skip(8);
  uint32_t third = c.U32();
  auto known_flavor = [](uint32_t f) { return f <= 3 || f == 6; };
  if (reply) {
    uint32_t a = c.U32();
    uint32_t b = c.U32();
    if (!c.ok()) {
      return false;
    }
    if (third == 1) {
      return a <= 1 && (a != 0 || b <= 2);  // rejected
    }
    return known_flavor(a) && b <= 400 && b % 4 == 0;  // accepted: verifier
  }
  uint32_t prog = c.U32();
  c.Skip(8);  // vers, proc
  uint32_t flavor = c.U32();
  uint32_t len = c.U32();
  return c.ok() && prog != 0 && known_flavor(flavor) && len <= 400 &&
         len % 4 == 0;
}

// `m` holds the message's first bytes: a call's op needs kCallHeader of
// them (without, the call is recorded with no op).
void EmitMessage(EventSink& sink, Direction dir, trace::TimeNs ts, bool reply,
                 uint32_t xid, std::span<const std::byte> m) {
  std::string op;
  if (!reply && m.size() >= kCallHeader) {
    ByteCursor c(m.subspan(12));
    uint32_t prog = c.U32();
    uint32_t vers = c.U32();
    op = RpcOp(prog, vers, c.U32());
  }
  sink.Emit({reply ? trace::Kind::kReturn : trace::Kind::kCall, dir, ts, xid,
             true, op});
}

const char* CheckName(MsgCheck c) {
  switch (c) {
    case MsgCheck::kTruncated:
      return "rpc_truncated";
    case MsgCheck::kBadType:
      return "rpc_bad_msg_type";
    case MsgCheck::kBadVersion:
      return "rpc_bad_rpc_version";
    case MsgCheck::kOk:
      break;
  }
  return "rpc_ok";
}

class RpcDatagramDecoder final : public DatagramDecoder {
 public:
  explicit RpcDatagramDecoder(EventSink& sink) : sink_(sink) {}
  void OnDatagram(Direction dir, trace::TimeNs ts,
                  std::span<const std::byte> payload) override {
    uint32_t xid = 0;
    bool reply = false;
    MsgCheck c = CheckMessage(payload, &xid, &reply);
    if (c != MsgCheck::kOk) {
      sink_.Count(CheckName(c));
      return;
    }
    EmitMessage(sink_, dir, ts, reply, xid, payload);
  }

 private:
  EventSink& sink_;
};

class RpcStreamDecoder final : public StreamDecoder {
 public:
  explicit RpcStreamDecoder(EventSink& sink) : sink_(sink) {}

  void OnData(Direction dir, trace::TimeNs ts,
              std::span<const std::byte> data) override {
    Side& s = side(dir);
    s.buf.Append(ts, data);
    Parse(dir, s);
  }

  void OnGap(Direction dir, uint64_t length) override {
    Side& s = side(dir);
    if (s.buf.AbsorbGap(length)) {
      return;  // the hole was inside a fragment
    }
    s.resync = true;
    s.record_start = true;
    s.header_len = 0;
    s.emitted = false;
  }

 private:
  struct Side {
    StreamBuffer buf;
    bool record_start = true;  // the next fragment begins a new record
    bool resync = false;
    // The record's first kCallHeader bytes, gathered across fragments.
    std::array<std::byte, kCallHeader> header{};
    size_t header_len = 0;
    bool emitted = false;  // the record's call or return
    trace::TimeNs header_ts = 0;
  };
  Side& side(Direction d) {
    return d == Direction::kToServer ? client_ : server_;
  }

  void Parse(Direction dir, Side& s) {
    while (s.buf.size() >= 4) {
      auto d = s.buf.data();
      ByteCursor c(d);
      uint32_t mark = c.U32();
      bool last = (mark & 0x80000000u) != 0;
      uint32_t len = mark & 0x7fffffffu;
      bool first = s.record_start;
      // In sync, a record may cut its header across fragments; while
      // hunting for a record after a hole, insist on the header being in
      // the first fragment (fewer false positives). Only a record's last
      // fragment may be empty.
      bool sane = len <= kMaxFragment && (len > 0 || last) &&
                  !(first && s.resync && len < kMinHeader);
      if (!sane) {
        Bad(s, "rpc_bad_record_mark");
        continue;
      }
      size_t want = std::min<size_t>(len, kCallHeader - s.header_len);
      if (d.size() < 4 + want) {
        return;
      }
      if (first && s.resync) {
        size_t deep = std::min<size_t>(len, kHuntHeader);
        if (d.size() < 4 + deep) {
          return;
        }
        uint32_t xid = 0;
        bool reply = false;
        if (CheckMessage(d.subspan(4, kMinHeader), &xid, &reply) !=
                MsgCheck::kOk ||
            !PlausibleWhenHunting(d.subspan(4, deep), reply)) {
          s.buf.Consume(1);
          continue;
        }
      }
      if (first) {
        s.header_ts = s.buf.TsAt(0);
      }
      std::copy_n(d.begin() + 4, want,
                  s.header.begin() + static_cast<std::ptrdiff_t>(s.header_len));
      s.header_len += want;
      if (!s.emitted && s.header_len >= kMinHeader) {
        uint32_t xid = 0;
        bool reply = false;
        MsgCheck check = CheckMessage(s.header, &xid, &reply);
        if (check != MsgCheck::kOk) {
          Bad(s, s.resync ? "rpc_bad_record_mark" : CheckName(check));
          continue;
        }
        // A call waits for its procedure (up to the record's end).
        if (reply || s.header_len == kCallHeader || last) {
          s.emitted = true;
          EmitMessage(sink_, dir, s.header_ts, reply, xid,
                      std::span<const std::byte>(s.header).first(s.header_len));
        }
      }
      s.resync = false;
      s.record_start = last;
      if (last) {
        if (s.header_len < kMinHeader) {
          sink_.Count("rpc_truncated");
        }
        s.header_len = 0;
        s.emitted = false;
      }
      s.buf.Skip(4ull + len);
    }
  }

  // Not at a record mark: slide one byte at a time to the next position
  // where a record mark and a message header line up; count once per
  // episode, not per byte.
  void Bad(Side& s, const char* reason) {
    if (!s.resync) {
      sink_.Count(reason);
    }
    if (!s.resync) {
      sink_.Count("rpc_resync");
    }
    s.resync = true;
    s.record_start = true;
    s.header_len = 0;
    s.emitted = false;
    s.buf.Consume(1);
  }

  EventSink& sink_;
  Side client_;
  Side server_;
};

// A CALL with rpcvers 2 (confident), or a REPLY (less: 8 bytes of chance).
int ProbeRpcMessage(std::span<const std::byte> m) {
  uint32_t xid = 0;
  bool reply = false;
  if (CheckMessage(m, &xid, &reply) != MsgCheck::kOk) {
    return 0;
  }
  if (reply) {
    return 40;
  }
  ByteCursor c(m);
  c.Skip(12);
  uint32_t prog = c.U32();
  c.Skip(8);  // vers, proc
  uint32_t flavor = c.U32();
  if (!c.ok()) {
    return 50;
  }
  // AUTH_NONE, AUTH_SYS, AUTH_SHORT, AUTH_DH, RPCSEC_GSS.
  bool known_flavor = flavor <= 3 || flavor == 6;
  return prog != 0 && known_flavor ? 90 : 50;
}

int ProbeRpcDatagram(std::span<const std::byte> p) {
  return ProbeRpcMessage(p);
}

int ProbeRpcStream(std::span<const std::byte> p) {
  ByteCursor c(p);
  uint32_t mark = c.U32();
  if (!c.ok()) {
    return 0;
  }
  uint32_t len = mark & 0x7fffffffu;
  if (len < kMinHeader || len > kMaxFragment) {
    return 0;
  }
  return ProbeRpcMessage(
      c.rest().subspan(0, std::min<size_t>(len, c.remaining())));
}

}  // namespace

DecoderInfo RpcDecoderInfo() {
  return DecoderInfo{
      .name = "rpc",
      .tcp_ports = {111, 2049},
      .udp_ports = {111, 2049},
      .probe_stream = &ProbeRpcStream,
      .probe_datagram = &ProbeRpcDatagram,
      .make_stream = &MakeDecoder<RpcStreamDecoder, StreamDecoder>,
      .make_datagram = &MakeDecoder<RpcDatagramDecoder, DatagramDecoder>,
  };
}

}  // namespace bbprof::capture
