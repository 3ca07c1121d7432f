#include "capture/ip.h"

#include "base/byte_cursor.h"

namespace bbprof::capture {
namespace {

IpResult Fail(std::string_view reason) {
  IpResult r;
  r.reason = reason;
  return r;
}

// Cuts the captured bytes to what the header declares; a shorter capture
// (snap length) keeps what there is and is flagged.
void SetPayload(IpResult& r, std::span<const std::byte> packet, size_t start,
                size_t declared_end) {
  size_t end = declared_end;
  r.declared_payload_length =
      declared_end > start ? static_cast<uint32_t>(declared_end - start) : 0;
  if (end > packet.size()) {
    end = packet.size();
    r.truncated = true;
  }
  r.payload = start <= end ? packet.subspan(start, end - start)
                           : std::span<const std::byte>();
}

IpResult ParseV4(std::span<const std::byte> packet) {
  ByteCursor c(packet);
  uint8_t vihl = c.U8();
  if (!c.ok()) return Fail("truncated_ip");
  if ((vihl >> 4) != 4) return Fail("ip_bad_version");
  size_t ihl = static_cast<size_t>(vihl & 0x0F) * 4;
  if (ihl < 20) return Fail("ip_bad_header_length");
  c.Skip(1);
  uint16_t total = c.U16();
  uint16_t id = c.U16();
  uint16_t frag = c.U16();
  c.Skip(1);
  uint8_t protocol = c.U8();
  c.Skip(2);
  auto src = c.Bytes(4);
  auto dst = c.Bytes(4);
  if (!c.ok() || packet.size() < ihl) return Fail("truncated_ip");
  if (total < ihl) return Fail("ip_bad_total_length");
  IpResult r;
  r.ok = true;
  r.protocol = protocol;
  for (size_t i = 0; i < 4; ++i) {
    r.src[i] = static_cast<uint8_t>(src[i]);
    r.dst[i] = static_cast<uint8_t>(dst[i]);
  }
  r.frag_offset = static_cast<uint32_t>(frag & 0x1FFF) * 8;
  r.more_fragments = (frag & 0x2000) != 0;
  r.is_fragment = r.more_fragments || r.frag_offset != 0;
  r.frag_id = id;
  SetPayload(r, packet, ihl, total);
  return r;
}

IpResult ParseV6(std::span<const std::byte> packet) {
  ByteCursor c(packet);
  uint32_t first = c.U32();
  uint16_t payload_len = c.U16();
  uint8_t next = c.U8();
  c.Skip(1);
  auto src = c.Bytes(16);
  auto dst = c.Bytes(16);
  if (!c.ok()) return Fail("truncated_ip");
  if ((first >> 28) != 6) return Fail("ip_bad_version");
  IpResult r;
  r.v6 = true;
  for (size_t i = 0; i < 16; ++i) {
    r.src[i] = static_cast<uint8_t>(src[i]);
    r.dst[i] = static_cast<uint8_t>(dst[i]);
  }
  // Walk extension headers: hop-by-hop (0), routing (43), fragment (44),
  // destination options (60), AH (51). Bounded by the packet length.
  for (;;) {
    if (next == 0 || next == 43 || next == 60) {
      uint8_t n = c.U8();
      uint8_t len = c.U8();
      c.Skip(6 + static_cast<size_t>(len) * 8);
      next = n;
    } else if (next == 51) {
      uint8_t n = c.U8();
      uint8_t len = c.U8();
      c.Skip(static_cast<size_t>(len + 2) * 4 - 2);
      next = n;
    } else if (next == 44) {
      uint8_t n = c.U8();
      c.Skip(1);
      uint16_t off = c.U16();
      uint32_t id = c.U32();
      r.frag_offset = static_cast<uint32_t>(off & 0xFFF8);
      r.more_fragments = (off & 1) != 0;
      r.is_fragment = r.more_fragments || r.frag_offset != 0;
      r.frag_id = id;
      next = n;
    } else {
      break;
    }
    if (!c.ok()) return Fail("truncated_ip");
  }
  r.ok = true;
  r.protocol = next;
  SetPayload(r, packet, c.position(), 40 + static_cast<size_t>(payload_len));
  return r;
}

}  // namespace

IpResult ParseIp(NetProto proto, std::span<const std::byte> packet) {
  return proto == NetProto::kIpv4 ? ParseV4(packet) : ParseV6(packet);
}

}  // namespace bbprof::capture
