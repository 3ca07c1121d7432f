// Network layer: one IPv4 or IPv6 header (IPv6 extension headers walked) to
// the transport payload. Pure function of bytes. Fragments are reported, not
// reassembled, here; reassembly keeps state and lives beside the flow table.
#ifndef BBPROF_CAPTURE_IP_H_
#define BBPROF_CAPTURE_IP_H_

#include <array>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>

#include "capture/link.h"

namespace bbprof::capture {

struct IpResult {
  bool ok = false;
  std::string_view reason;  // counter name when !ok
  bool v6 = false;
  std::array<uint8_t, 16> src{};  // IPv4 in the first 4 bytes
  std::array<uint8_t, 16> dst{};
  uint8_t protocol = 0;  // 6 TCP, 17 UDP, ...
  // Fragment information: offset in bytes, more-fragments flag, id.
  bool is_fragment = false;
  uint32_t frag_offset = 0;
  bool more_fragments = false;
  uint32_t frag_id = 0;
  // Payload after all headers, cut to the IP total length (Ethernet padding
  // removed); `truncated` when the capture holds less than the header says.
  std::span<const std::byte> payload;
  bool truncated = false;
  // What the header declares the payload's length to be: larger than
  // payload.size() when `truncated` (TCP must then report the rest as a hole).
  uint32_t declared_payload_length = 0;
};

IpResult ParseIp(NetProto proto, std::span<const std::byte> packet);

}  // namespace bbprof::capture

#endif  // BBPROF_CAPTURE_IP_H_
