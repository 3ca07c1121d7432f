#include "capture/ip_fragments.h"

#include <gtest/gtest.h>

#include <string>

#include "base/byte_cursor.h"

namespace bbprof::capture {
namespace {

IpResult Frag(uint32_t id, uint32_t offset, bool more, std::string_view data,
              bool v6 = false) {
  IpResult r;
  r.ok = true;
  r.v6 = v6;
  r.protocol = 17;
  r.is_fragment = true;
  r.frag_id = id;
  r.frag_offset = offset;
  r.more_fragments = more;
  r.src[0] = 10;
  r.dst[0] = 11;
  r.payload = AsBytes(data);
  return r;
}

std::string Text(const std::vector<std::byte>& v) {
  return std::string(reinterpret_cast<const char*>(v.data()), v.size());
}

TEST(IpFragmentsTest, ReassemblesOutOfOrderWithOverlap) {
  FragmentReassembler f;
  trace::TimeNs first = 0;
  EXPECT_FALSE(f.Add(Frag(7, 16, false, "qrst"), 30, &first));
  EXPECT_FALSE(f.Add(Frag(7, 0, true, "abcdefgh"), 10, &first));
  // Overlaps the first fragment by 4 bytes: the first copy wins.
  auto whole = f.Add(Frag(7, 4, true, "XXXXijklmnop"), 20, &first);
  ASSERT_TRUE(whole.has_value());
  EXPECT_EQ(Text(*whole), "abcdefghijklmnopqrst");
  EXPECT_EQ(first, 10);
  EXPECT_EQ(f.stats().reassembled, 1u);
  EXPECT_EQ(f.stats().overlapping_bytes, 4u);
}

TEST(IpFragmentsTest, CompletesAndReportsFirstTimestamp) {
  FragmentReassembler f;
  trace::TimeNs first = 0;
  EXPECT_FALSE(f.Add(Frag(1, 8, false, "ijkl", true), 50, &first));
  auto whole = f.Add(Frag(1, 0, true, "abcdefgh", true), 60, &first);
  ASSERT_TRUE(whole.has_value());
  EXPECT_EQ(Text(*whole), "abcdefghijkl");
  EXPECT_EQ(first, 50);
  EXPECT_EQ(f.pending(), 0u);
  EXPECT_EQ(f.buffered_bytes(), 0u);
}

TEST(IpFragmentsTest, TimeoutAndMemoryCap) {
  FragmentReassembler f(/*timeout=*/100, /*max_bytes=*/10);
  EXPECT_FALSE(f.Add(Frag(1, 0, true, "abcdefgh"), 0, nullptr));
  f.Expire(50);
  EXPECT_EQ(f.pending(), 1u);
  f.Expire(200);
  EXPECT_EQ(f.pending(), 0u);
  EXPECT_EQ(f.stats().timed_out, 1u);
  EXPECT_FALSE(f.Add(Frag(2, 0, true, "abcdefgh"), 300, nullptr));
  EXPECT_FALSE(f.Add(Frag(3, 0, true, "abcdefgh"), 310, nullptr));
  EXPECT_EQ(f.stats().evicted, 1u);
  EXPECT_LE(f.buffered_bytes(), 10u);
  EXPECT_FALSE(f.Add(Frag(4, 65530, false, "abcdefgh"), 320, nullptr));
  EXPECT_EQ(f.stats().oversized, 1u);
}

}  // namespace
}  // namespace bbprof::capture
