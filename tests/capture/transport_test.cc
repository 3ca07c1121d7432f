#include "capture/transport.h"

#include <gtest/gtest.h>

#include <vector>

namespace bbprof::capture {
namespace {

std::vector<std::byte> Bytes(std::initializer_list<int> v) {
  std::vector<std::byte> out;
  for (int b : v) out.push_back(static_cast<std::byte>(b));
  return out;
}

TEST(TransportTest, UdpCutsToLengthAndFlagsTruncation) {
  UdpHeader u = ParseUdp(Bytes({0, 53, 0x30, 0x39, 0, 10, 0, 0, 1, 2, 3}));
  ASSERT_TRUE(u.ok);
  EXPECT_EQ(u.src_port, 53);
  EXPECT_EQ(u.dst_port, 12345);
  EXPECT_EQ(u.payload.size(), 2u);
  EXPECT_FALSE(u.truncated);
  UdpHeader t = ParseUdp(Bytes({0, 53, 0, 53, 0, 100, 0, 0, 1}));
  ASSERT_TRUE(t.ok);
  EXPECT_TRUE(t.truncated);
  EXPECT_EQ(t.payload.size(), 1u);
  EXPECT_EQ(ParseUdp(Bytes({0, 53, 0})).reason, "truncated_udp");
  EXPECT_EQ(ParseUdp(Bytes({0, 53, 0, 53, 0, 4, 0, 0})).reason,
            "udp_bad_length");
}

TEST(TransportTest, TcpHeaderWithOptions) {
  auto s = Bytes({0x1F, 0x90, 0xC0, 0x00, 0, 0, 0, 5, 0, 0, 0, 9, 0x60, 0x12,
                  0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 0xEE});
  TcpHeader t = ParseTcp(s);
  ASSERT_TRUE(t.ok);
  EXPECT_EQ(t.src_port, 8080);
  EXPECT_EQ(t.seq, 5u);
  EXPECT_EQ(t.ack, 9u);
  EXPECT_EQ(t.flags, kTcpSyn | kTcpAck);
  EXPECT_EQ(t.payload.size(), 1u);
  s[12] = std::byte{0xF0};  // 60-byte header, but only 25 bytes present
  EXPECT_EQ(ParseTcp(s).reason, "truncated_tcp");
  s[12] = std::byte{0x40};
  EXPECT_EQ(ParseTcp(s).reason, "tcp_bad_header_length");
}

}  // namespace
}  // namespace bbprof::capture
