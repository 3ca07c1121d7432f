// Transport headers: UDP and TCP, after IP (and after fragment reassembly).
// Pure functions of bytes; state (streams, flows) lives elsewhere.
#ifndef BBPROF_CAPTURE_TRANSPORT_H_
#define BBPROF_CAPTURE_TRANSPORT_H_

#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>

namespace bbprof::capture {

inline constexpr uint8_t kTcpFin = 0x01;
inline constexpr uint8_t kTcpSyn = 0x02;
inline constexpr uint8_t kTcpRst = 0x04;
inline constexpr uint8_t kTcpPsh = 0x08;
inline constexpr uint8_t kTcpAck = 0x10;

struct UdpHeader {
  bool ok = false;
  std::string_view reason;
  uint16_t src_port = 0;
  uint16_t dst_port = 0;
  std::span<const std::byte> payload;  // cut to the UDP length
  bool truncated = false;
};

struct TcpHeader {
  bool ok = false;
  std::string_view reason;
  uint16_t src_port = 0;
  uint16_t dst_port = 0;
  uint32_t seq = 0;
  uint32_t ack = 0;
  uint8_t flags = 0;
  std::span<const std::byte> payload;
};

UdpHeader ParseUdp(std::span<const std::byte> segment);
TcpHeader ParseTcp(std::span<const std::byte> segment);

}  // namespace bbprof::capture

#endif  // BBPROF_CAPTURE_TRANSPORT_H_
