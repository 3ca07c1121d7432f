#include "capture/tcp_reassembly.h"

#include <gtest/gtest.h>

#include <string>
#include <string_view>

#include "base/byte_cursor.h"

namespace bbprof::capture {
namespace {

// Records the stream as text, holes as "[gap N]".
class Collect : public StreamListener {
 public:
  void OnBytes(trace::TimeNs ts, std::span<const std::byte> data) override {
    text.append(reinterpret_cast<const char*>(data.data()), data.size());
    last_ts = ts;
  }
  void OnHole(uint64_t length) override {
    text += "[gap " + std::to_string(length) + "]";
  }
  std::string text;
  trace::TimeNs last_ts = 0;
};

TEST(TcpReassemblyTest, InOrderAndOutOfOrder) {
  TcpReassembler r;
  Collect c;
  r.Start(100);
  r.Add(105, 2, AsBytes("world"), c);
  EXPECT_EQ(c.text, "");
  r.Add(100, 1, AsBytes("hello"), c);
  EXPECT_EQ(c.text, "helloworld");
  EXPECT_EQ(r.buffered(), 0u);
}

TEST(TcpReassemblyTest, RetransmissionsAndOverlapsKeepFirstCopy) {
  TcpReassembler r;
  Collect c;
  r.Start(0);
  r.Add(0, 1, AsBytes("abcd"), c);
  r.Add(2, 2, AsBytes("XXef"), c);  // overlaps delivered bytes
  r.Add(10, 3, AsBytes("klm"), c);  // out of order
  r.Add(8, 4, AsBytes("YYZZnop"), c);  // "ZZn" overlaps the buffered "klm"
  r.Add(0, 5, AsBytes("abcdef"), c);  // full retransmission
  r.Add(6, 6, AsBytes("gh"), c);
  EXPECT_EQ(c.text, "abcdefghYYklmop");
  EXPECT_EQ(r.stats().retransmitted_bytes, 2u + 3u + 6u);
}

TEST(TcpReassemblyTest, SequenceWraparound) {
  TcpReassembler r;
  Collect c;
  r.Start(0xFFFFFFFEu);
  r.Add(0x00000002u, 2, AsBytes("ef"), c);
  r.Add(0xFFFFFFFEu, 1, AsBytes("abcd"), c);
  EXPECT_EQ(c.text, "abcdef");
}

TEST(TcpReassemblyTest, GapDeclaredAtFlushAndAtCap) {
  TcpReassembler r(8);
  Collect c;
  r.Start(0);
  r.Add(0, 1, AsBytes("ab"), c);
  r.Add(5, 2, AsBytes("fgh"), c);  // 3 bytes lost: still waiting
  EXPECT_EQ(c.text, "ab");
  r.Add(20, 3, AsBytes("uvwxyz"), c);  // 9 buffered > cap 8: give up on hole
  EXPECT_EQ(c.text, "ab[gap 3]fgh");
  r.Flush(c);
  EXPECT_EQ(c.text, "ab[gap 3]fgh[gap 12]uvwxyz");
  EXPECT_EQ(r.stats().gap_bytes, 15u);
  r.Add(26, 7, AsBytes("!"), c);
  EXPECT_EQ(c.text, "ab[gap 3]fgh[gap 12]uvwxyz!");
  EXPECT_EQ(c.last_ts, 7);
}

TEST(TcpReassemblyTest, SnappedSegmentsBecomeHolesAtOnce) {
  TcpReassembler r;
  Collect c;
  r.Start(0);
  // "abcdefgh" and "ijkl" sent, each captured only in part.
  r.Add(0, 1, AsBytes("abc"), c, 5);
  EXPECT_EQ(c.text, "abc[gap 5]");
  r.Add(8, 2, AsBytes("ij"), c, 2);
  EXPECT_EQ(c.text, "abc[gap 5]ij[gap 2]");
  EXPECT_EQ(r.buffered(), 0u);
  EXPECT_EQ(r.stats().gap_bytes, 7u);
}

TEST(TcpReassemblyTest, SnappedSegmentOutOfOrderKeepsItsHole) {
  TcpReassembler r;
  Collect c;
  r.Start(0);
  r.Add(4, 2, AsBytes("ef"), c, 2);  // "efgh" captured as "ef", early
  r.Add(8, 3, AsBytes("ij"), c);
  EXPECT_EQ(c.text, "");
  EXPECT_EQ(r.oldest_pending_ts(), 2);
  r.Add(0, 1, AsBytes("abcd"), c);
  EXPECT_EQ(c.text, "abcdef[gap 2]ij");
  EXPECT_EQ(r.oldest_pending_ts(), 0);
}

TEST(TcpReassemblyTest, RetransmissionCoveringOnlyASnappedTail) {
  TcpReassembler r;
  Collect c;
  r.Start(0);
  r.Add(0, 1, AsBytes("ab"), c, 4);  // "abcdef": the hole covers "cdef"
  r.Add(0, 2, AsBytes("ab"), c, 6);  // same bytes, longer: "abcdefgh"
  EXPECT_EQ(c.text, "ab[gap 4][gap 2]");
}

}  // namespace
}  // namespace bbprof::capture
