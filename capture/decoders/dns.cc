// DNS (RFC 1035) over UDP and TCP: a query (QR = 0) is a call, a response
// (QR = 1) its return; the token is the 16-bit message id. Over TCP every
// message has a 2-byte length prefix (RFC 1035 section 4.2.2, RFC 7766: a
// connection may carry several messages, pipelined, split anywhere).
#include <algorithm>
#include <string>

#include "base/byte_cursor.h"
#include "capture/decoders/decoders.h"
#include "capture/decoders/op_names.h"
#include "capture/decoders/stream_buffer.h"

namespace bbprof::capture {
namespace {

constexpr size_t kHeaderSize = 12;

enum class HeaderCheck { kOk, kTruncated, kBad };

// Sanity of a DNS header: a known opcode and section counts a message of
// this size could hold (every record takes at least 11 bytes, every question
// at least 5), which rejects most non-DNS payloads.
HeaderCheck CheckHeader(std::span<const std::byte> msg, size_t declared_size,
                        bool* is_response, uint16_t* id) {
  ByteCursor c(msg);
  *id = c.U16();
  uint16_t flags = c.U16();
  uint16_t qd = c.U16();
  uint16_t an = c.U16();
  uint16_t ns = c.U16();
  uint16_t ar = c.U16();
  if (!c.ok()) {
    return HeaderCheck::kTruncated;
  }
  *is_response = (flags & 0x8000) != 0;
  unsigned opcode = (flags >> 11) & 0xF;
  if (opcode == 3 || opcode > 6) {
    return HeaderCheck::kBad;
  }
  if ((flags & 0x0040) != 0) {
    return HeaderCheck::kBad;  // Z must be zero
  }
  if (qd > 32) {
    return HeaderCheck::kBad;
  }
  if (!*is_response && (an > 0 && opcode == 0)) {
    return HeaderCheck::kBad;
  }
  uint64_t min_size = kHeaderSize + 5ull * qd + 11ull * (an + ns + ar);
  // Responses truncated by a snap length still carry their header; only
  // insist on the size when the counts are wildly larger than the message.
  if (declared_size >= 512 && min_size > declared_size) {
    return HeaderCheck::kBad;
  }
  if (min_size > 65535 + kHeaderSize) {
    return HeaderCheck::kBad;
  }
  return HeaderCheck::kOk;
}

// Whether the first question is a well-formed name (labels of 1-63 bytes,
// at most 255 in all, no compression in a question's first name) followed
// by its type (returned in `qtype`) and class.
bool FirstQuestion(std::span<const std::byte> p, uint16_t* qtype) {
  ByteCursor c(p);
  c.Skip(kHeaderSize);
  size_t total = 0;
  while (true) {
    uint8_t len = c.U8();
    if (!c.ok()) {
      return false;
    }
    if (len == 0) {
      break;
    }
    if (len > 63) {
      return false;
    }
    total += len + 1u;
    if (total > 255 || !c.Skip(len)) {
      return false;
    }
  }
  *qtype = c.U16();
  c.Skip(2);
  return c.ok();
}

bool FirstQuestionParses(std::span<const std::byte> p) {
  uint16_t qtype = 0;
  return FirstQuestion(p, &qtype);
}

// A query's op is its (first) question's type: `dns:AAAA`.
void EmitMessage(EventSink& sink, Direction dir, trace::TimeNs ts,
                 bool is_response, uint16_t id,
                 std::span<const std::byte> msg) {
  uint16_t qtype = 0;
  std::string op;
  ByteCursor c(msg);
  c.Skip(4);
  uint16_t questions = c.U16();
  if (!is_response && questions > 0 && FirstQuestion(msg, &qtype)) {
    op = DnsOp(qtype);
  }
  sink.Emit({is_response ? trace::Kind::kReturn : trace::Kind::kCall, dir, ts,
             id, true, op});
}

class DnsDatagramDecoder final : public DatagramDecoder {
 public:
  explicit DnsDatagramDecoder(EventSink& sink) : sink_(sink) {}
  void OnDatagram(Direction dir, trace::TimeNs ts,
                  std::span<const std::byte> payload) override {
    bool is_response = false;
    uint16_t id = 0;
    switch (CheckHeader(payload, payload.size(), &is_response, &id)) {
      case HeaderCheck::kTruncated:
        sink_.Count("dns_truncated");
        return;
      case HeaderCheck::kBad:
        sink_.Count("dns_bad_header");
        return;
      case HeaderCheck::kOk:
        EmitMessage(sink_, dir, ts, is_response, id, payload);
    }
  }

 private:
  EventSink& sink_;
};

class DnsStreamDecoder final : public StreamDecoder {
 public:
  explicit DnsStreamDecoder(EventSink& sink) : sink_(sink) {}

  void OnData(Direction dir, trace::TimeNs ts,
              std::span<const std::byte> data) override {
    Side& s = side(dir);
    s.buf.Append(ts, data);
    Parse(dir, s);
  }

  void OnGap(Direction dir, uint64_t length) override {
    Side& s = side(dir);
    if (!s.buf.AbsorbGap(length)) {
      s.resync = true;
    }
  }

 private:
  struct Side {
    StreamBuffer buf;
    bool resync = false;
  };
  Side& side(Direction d) {
    return d == Direction::kToServer ? client_ : server_;
  }

  void Parse(Direction dir, Side& s) {
    while (true) {
      auto d = s.buf.data();
      if (d.size() < 2 + kHeaderSize) {
        // A length prefix with a body shorter than a header is garbage.
        if (d.size() >= 2) {
          ByteCursor c(d);
          if (c.U16() < kHeaderSize) {
            BadAt(s, "dns_bad_length");
            continue;
          }
        }
        return;
      }
      ByteCursor c(d);
      uint16_t len = c.U16();
      bool is_response = false;
      uint16_t id = 0;
      if (len < kHeaderSize) {
        BadAt(s, "dns_bad_length");
        continue;
      }
      auto msg = d.subspan(2, std::min<size_t>(len, d.size() - 2));
      if (CheckHeader(msg, len, &is_response, &id) != HeaderCheck::kOk) {
        BadAt(s, "dns_bad_header");
        continue;
      }
      s.resync = false;
      EmitMessage(sink_, dir, s.buf.TsAt(0), is_response, id, msg);
      s.buf.Skip(2ull + len);
    }
  }

  // Out of sync (after a hole, or on garbage): drop one byte at a time until
  // a plausible length prefix and header line up; count once per episode.
  void BadAt(Side& s, const char* reason) {
    if (!s.resync) {
      sink_.Count(reason);
    }
    s.resync = true;
    s.buf.Consume(1);
  }

  EventSink& sink_;
  Side client_;
  Side server_;
};

int ProbeDnsDatagram(std::span<const std::byte> p) {
  bool is_response = false;
  uint16_t id = 0;
  if (p.size() < kHeaderSize + 5) {
    return 0;
  }
  if (CheckHeader(p, p.size(), &is_response, &id) != HeaderCheck::kOk) {
    return 0;
  }
  ByteCursor c(p);
  c.Skip(4);
  uint16_t qd = c.U16();
  // Almost every query carries exactly one question (an UPDATE's zone).
  if (qd != 1 || !FirstQuestionParses(p)) {
    return 0;
  }
  return is_response ? 40 : 70;
}

int ProbeDnsStream(std::span<const std::byte> p) {
  if (p.size() < 2 + kHeaderSize + 5) {
    return 0;
  }
  ByteCursor c(p);
  uint16_t len = c.U16();
  if (len < kHeaderSize + 5) {
    return 0;
  }
  return ProbeDnsDatagram(p.subspan(2, std::min<size_t>(len, p.size() - 2)));
}

}  // namespace

DecoderInfo DnsDecoderInfo() {
  return DecoderInfo{
      .name = "dns",
      .tcp_ports = {53},
      .udp_ports = {53},
      .probe_stream = &ProbeDnsStream,
      .probe_datagram = &ProbeDnsDatagram,
      .make_stream = &MakeDecoder<DnsStreamDecoder, StreamDecoder>,
      .make_datagram = &MakeDecoder<DnsDatagramDecoder, DatagramDecoder>,
  };
}

}  // namespace bbprof::capture
