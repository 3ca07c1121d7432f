#include "capture/link.h"

#include <gtest/gtest.h>

#include <vector>

namespace bbprof::capture {
namespace {

std::vector<std::byte> Bytes(std::initializer_list<int> v) {
  std::vector<std::byte> out;
  for (int b : v) out.push_back(static_cast<std::byte>(b));
  return out;
}

TEST(LinkTest, EthernetIpv4) {
  auto f = Bytes({0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 0x08, 0x00, 0x45, 0});
  LinkResult r = ParseLink(kLinkEthernet, f);
  ASSERT_TRUE(r.ok);
  EXPECT_EQ(r.proto, NetProto::kIpv4);
  EXPECT_EQ(r.payload.size(), 2u);
  EXPECT_EQ(r.vlan_tags, 0);
}

TEST(LinkTest, EthernetQinQToIpv6) {
  auto f = Bytes({0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 0x88, 0xA8, 0, 5,
                  0x81, 0x00, 0, 7, 0x86, 0xDD, 0x60});
  LinkResult r = ParseLink(kLinkEthernet, f);
  ASSERT_TRUE(r.ok);
  EXPECT_EQ(r.proto, NetProto::kIpv6);
  EXPECT_EQ(r.vlan_tags, 2);
  EXPECT_EQ(r.payload.size(), 1u);
}

TEST(LinkTest, TruncatedVlanAndArp) {
  EXPECT_EQ(ParseLink(kLinkEthernet,
                      Bytes({0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 0x81, 0}))
                .reason,
            "truncated_link");
  EXPECT_EQ(ParseLink(kLinkEthernet,
                      Bytes({0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 0x08, 0x06}))
                .reason,
            "non_ip_ethertype");
}

TEST(LinkTest, CookedV1AndV2) {
  std::vector<std::byte> sll(14, std::byte{0});
  auto tail = Bytes({0x08, 0x00, 0x45});
  sll.insert(sll.end(), tail.begin(), tail.end());
  LinkResult r1 = ParseLink(kLinkLinuxSll, sll);
  ASSERT_TRUE(r1.ok);
  EXPECT_EQ(r1.payload.size(), 1u);

  auto sll2 = Bytes({0x86, 0xDD});
  sll2.resize(20, std::byte{0});
  sll2.push_back(std::byte{0x60});
  LinkResult r2 = ParseLink(kLinkLinuxSll2, sll2);
  ASSERT_TRUE(r2.ok);
  EXPECT_EQ(r2.proto, NetProto::kIpv6);
  EXPECT_EQ(r2.payload.size(), 1u);
}

TEST(LinkTest, NullLoopbackEitherByteOrderAndRaw) {
  LinkResult le = ParseLink(kLinkNull, Bytes({2, 0, 0, 0, 0x45}));
  ASSERT_TRUE(le.ok);
  EXPECT_EQ(le.proto, NetProto::kIpv4);
  LinkResult be = ParseLink(kLinkNull, Bytes({0, 0, 0, 30, 0x60}));
  ASSERT_TRUE(be.ok);
  EXPECT_EQ(be.proto, NetProto::kIpv6);
  LinkResult loop = ParseLink(kLinkLoop, Bytes({0, 0, 0, 2, 0x45}));
  ASSERT_TRUE(loop.ok);
  LinkResult raw = ParseLink(kLinkRaw, Bytes({0x60, 0}));
  ASSERT_TRUE(raw.ok);
  EXPECT_EQ(raw.proto, NetProto::kIpv6);
  EXPECT_EQ(ParseLink(kLinkRaw, Bytes({0x10})).reason, "non_ip_ethertype");
  EXPECT_EQ(ParseLink(9999, Bytes({0x45})).reason, "unsupported_link_type");
}

}  // namespace
}  // namespace bbprof::capture
