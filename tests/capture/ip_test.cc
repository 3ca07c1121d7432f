#include "capture/ip.h"

#include <gtest/gtest.h>

#include <vector>

namespace bbprof::capture {
namespace {

std::vector<std::byte> Bytes(std::initializer_list<int> v) {
  std::vector<std::byte> out;
  for (int b : v) out.push_back(static_cast<std::byte>(b));
  return out;
}

TEST(IpTest, Ipv4StripsEthernetPaddingAndReadsFragment) {
  // total length 22: 20 header + 2 payload, then 2 bytes of padding.
  auto p = Bytes({0x45, 0, 0, 22, 0x12, 0x34, 0x20, 0x01, 64, 17, 0, 0,
                  10, 0, 0, 1, 10, 0, 0, 2, 0xAA, 0xBB, 0, 0});
  IpResult r = ParseIp(NetProto::kIpv4, p);
  ASSERT_TRUE(r.ok);
  EXPECT_EQ(r.protocol, 17);
  EXPECT_EQ(r.payload.size(), 2u);
  EXPECT_FALSE(r.truncated);
  EXPECT_TRUE(r.is_fragment);
  EXPECT_TRUE(r.more_fragments);
  EXPECT_EQ(r.frag_offset, 8u);
  EXPECT_EQ(r.frag_id, 0x1234u);
  EXPECT_EQ(r.src[0], 10);
  EXPECT_EQ(r.dst[3], 2);
}

TEST(IpTest, Ipv4TruncatedCaptureIsFlagged) {
  auto p = Bytes({0x45, 0, 0, 100, 0, 0, 0, 0, 64, 6, 0, 0,
                  10, 0, 0, 1, 10, 0, 0, 2, 1, 2, 3});
  IpResult r = ParseIp(NetProto::kIpv4, p);
  ASSERT_TRUE(r.ok);
  EXPECT_TRUE(r.truncated);
  EXPECT_EQ(r.payload.size(), 3u);
  EXPECT_EQ(ParseIp(NetProto::kIpv4, Bytes({0x45, 0, 0})).reason,
            "truncated_ip");
  EXPECT_EQ(ParseIp(NetProto::kIpv4, Bytes({0x41, 0, 0, 20})).reason,
            "ip_bad_header_length");
}

TEST(IpTest, Ipv6WalksExtensionHeadersToFragment) {
  std::vector<std::byte> p = Bytes({0x60, 0, 0, 0, 0, 20, 0, 64});
  p.resize(40, std::byte{0});
  // Hop-by-hop (8 bytes) -> fragment (8 bytes) -> UDP, then 4 payload bytes.
  auto ext = Bytes({44, 0, 0, 0, 0, 0, 0, 0, 17, 0, 0x00, 0x11, 0, 0, 0, 9,
                    1, 2, 3, 4});
  p.insert(p.end(), ext.begin(), ext.end());
  IpResult r = ParseIp(NetProto::kIpv6, p);
  ASSERT_TRUE(r.ok);
  EXPECT_TRUE(r.v6);
  EXPECT_EQ(r.protocol, 17);
  EXPECT_TRUE(r.is_fragment);
  EXPECT_TRUE(r.more_fragments);
  EXPECT_EQ(r.frag_offset, 16u);
  EXPECT_EQ(r.frag_id, 9u);
  EXPECT_EQ(r.payload.size(), 4u);
}

TEST(IpTest, Ipv6TruncatedExtensionHeader) {
  std::vector<std::byte> p = Bytes({0x60, 0, 0, 0, 0, 8, 0, 64});
  p.resize(41, std::byte{0});
  EXPECT_EQ(ParseIp(NetProto::kIpv6, p).reason, "truncated_ip");
}

}  // namespace
}  // namespace bbprof::capture
