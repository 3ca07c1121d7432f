// Link-layer framing: the first step of the packet core (paper section 6.2
// needs only IP payloads; every link we sniff is peeled here). Pure function
// of bytes, no libpcap: callers pass the pcap link type number.
#ifndef BBPROF_CAPTURE_LINK_H_
#define BBPROF_CAPTURE_LINK_H_

#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>

namespace bbprof::capture {

// libpcap LINKTYPE_* values (stable across platforms, unlike DLT_*).
inline constexpr uint32_t kLinkNull = 0;          // BSD loopback, host order
inline constexpr uint32_t kLinkEthernet = 1;
inline constexpr uint32_t kLinkRaw = 101;         // raw IPv4 or IPv6
inline constexpr uint32_t kLinkLoop = 108;        // OpenBSD loopback, net order
inline constexpr uint32_t kLinkLinuxSll = 113;    // Linux cooked v1
inline constexpr uint32_t kLinkIpv4 = 228;
inline constexpr uint32_t kLinkIpv6 = 229;
inline constexpr uint32_t kLinkLinuxSll2 = 276;   // Linux cooked v2
// DLT_RAW as some platforms number it in pcap files written by old tools.
inline constexpr uint32_t kLinkRawAlt12 = 12;
inline constexpr uint32_t kLinkRawAlt14 = 14;

enum class NetProto : uint8_t { kIpv4, kIpv6 };

// Result of peeling the link header. On failure `reason` names the counter
// the core increments ("truncated_link", "unsupported_link_type",
// "non_ip_ethertype"); it is a static string.
struct LinkResult {
  bool ok = false;
  NetProto proto = NetProto::kIpv4;
  std::span<const std::byte> payload;  // the IP packet
  std::string_view reason;
  uint8_t vlan_tags = 0;  // 802.1Q / QinQ tags skipped
};

LinkResult ParseLink(uint32_t link_type, std::span<const std::byte> frame);

}  // namespace bbprof::capture

#endif  // BBPROF_CAPTURE_LINK_H_
