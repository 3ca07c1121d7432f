#include "capture/link.h"

#include "base/byte_cursor.h"

namespace bbprof::capture {
namespace {

constexpr uint16_t kEtherIpv4 = 0x0800;
constexpr uint16_t kEtherIpv6 = 0x86DD;
constexpr uint16_t kEtherVlan = 0x8100;
constexpr uint16_t kEtherQinQ = 0x88A8;
constexpr uint16_t kEtherQinQOld = 0x9100;

LinkResult Fail(std::string_view reason) {
  LinkResult r;
  r.reason = reason;
  return r;
}

LinkResult FromEtherType(uint16_t type, ByteCursor& c, uint8_t tags) {
  LinkResult r;
  r.vlan_tags = tags;
  if (type == kEtherIpv4) {
    r.proto = NetProto::kIpv4;
  } else if (type == kEtherIpv6) {
    r.proto = NetProto::kIpv6;
  } else {
    return Fail("non_ip_ethertype");
  }
  r.ok = true;
  r.payload = c.rest();
  return r;
}

// Raw links carry no type: the IP version nibble decides.
LinkResult FromVersion(std::span<const std::byte> p) {
  if (p.empty()) return Fail("truncated_link");
  uint8_t version = static_cast<uint8_t>(p[0]) >> 4;
  LinkResult r;
  if (version == 4) {
    r.proto = NetProto::kIpv4;
  } else if (version == 6) {
    r.proto = NetProto::kIpv6;
  } else {
    return Fail("non_ip_ethertype");
  }
  r.ok = true;
  r.payload = p;
  return r;
}

// BSD loopback address families: AF_INET is 2 everywhere; AF_INET6 is 24,
// 28 or 30 depending on the BSD that wrote the file (and 10 on Linux).
LinkResult FromFamily(uint32_t family, ByteCursor& c) {
  LinkResult r;
  if (family == 2) {
    r.proto = NetProto::kIpv4;
  } else if (family == 10 || family == 24 || family == 28 || family == 30) {
    r.proto = NetProto::kIpv6;
  } else {
    return Fail("non_ip_ethertype");
  }
  r.ok = true;
  r.payload = c.rest();
  return r;
}

}  // namespace

LinkResult ParseLink(uint32_t link_type, std::span<const std::byte> frame) {
  ByteCursor c(frame);
  switch (link_type) {
    case kLinkEthernet: {
      c.Skip(12);  // destination and source MAC
      uint16_t type = c.U16();
      uint8_t tags = 0;
      while (c.ok() && (type == kEtherVlan || type == kEtherQinQ ||
                        type == kEtherQinQOld)) {
        c.Skip(2);  // TCI
        type = c.U16();
        ++tags;
      }
      if (!c.ok()) return Fail("truncated_link");
      return FromEtherType(type, c, tags);
    }
    case kLinkLinuxSll: {
      c.Skip(14);  // packet type, ARPHRD, address length, 8-byte address
      uint16_t type = c.U16();
      if (!c.ok()) return Fail("truncated_link");
      return FromEtherType(type, c, 0);
    }
    case kLinkLinuxSll2: {
      uint16_t type = c.U16();
      c.Skip(18);  // reserved, ifindex, ARPHRD, type, address len, address
      if (!c.ok()) return Fail("truncated_link");
      return FromEtherType(type, c, 0);
    }
    case kLinkNull: {
      // Host byte order of the machine that wrote the file: a family is
      // small, so whichever reading is below 256 is the right one.
      uint32_t le = c.U32Le();
      if (!c.ok()) return Fail("truncated_link");
      uint32_t family = le < 256 ? le : __builtin_bswap32(le);
      return FromFamily(family, c);
    }
    case kLinkLoop: {
      uint32_t family = c.U32();
      if (!c.ok()) return Fail("truncated_link");
      return FromFamily(family, c);
    }
    case kLinkRaw:
    case kLinkRawAlt12:
    case kLinkRawAlt14:
    case kLinkIpv4:
    case kLinkIpv6:
      return FromVersion(frame);
    default:
      return Fail("unsupported_link_type");
  }
}

}  // namespace bbprof::capture
