#include "capture/transport.h"

#include "base/byte_cursor.h"

namespace bbprof::capture {

UdpHeader ParseUdp(std::span<const std::byte> segment) {
  UdpHeader h;
  ByteCursor c(segment);
  h.src_port = c.U16();
  h.dst_port = c.U16();
  uint16_t length = c.U16();
  c.Skip(2);
  if (!c.ok()) {
    h.reason = "truncated_udp";
    return h;
  }
  // Length 0 is legal for jumbograms (RFC 2675): take what IP gave us.
  size_t body = segment.size() - 8;
  if (length != 0) {
    if (length < 8) {
      h.reason = "udp_bad_length";
      return h;
    }
    size_t declared = static_cast<size_t>(length) - 8;
    if (declared > body) {
      h.truncated = true;
    } else {
      body = declared;
    }
  }
  h.ok = true;
  h.payload = segment.subspan(8, body);
  return h;
}

TcpHeader ParseTcp(std::span<const std::byte> segment) {
  TcpHeader h;
  ByteCursor c(segment);
  h.src_port = c.U16();
  h.dst_port = c.U16();
  h.seq = c.U32();
  h.ack = c.U32();
  uint8_t offset = c.U8();
  h.flags = c.U8();
  if (!c.ok()) {
    h.reason = "truncated_tcp";
    return h;
  }
  size_t header = static_cast<size_t>(offset >> 4) * 4;
  if (header < 20) {
    h.reason = "tcp_bad_header_length";
    return h;
  }
  if (header > segment.size()) {
    h.reason = "truncated_tcp";
    return h;
  }
  h.ok = true;
  h.payload = segment.subspan(header);
  return h;
}

}  // namespace bbprof::capture
