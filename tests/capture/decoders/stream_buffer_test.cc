#include "capture/decoders/stream_buffer.h"

#include <gtest/gtest.h>

#include "tests/capture/decoders/test_sink.h"

namespace bbprof::capture {
namespace {

TEST(StreamBuffer, TimesFollowSegments) {
  StreamBuffer b;
  b.Append(10, Bytes("abc"));
  b.Append(20, Bytes("de"));
  EXPECT_EQ(b.size(), 5u);
  EXPECT_EQ(b.TsAt(0), 10);
  EXPECT_EQ(b.TsAt(2), 10);
  EXPECT_EQ(b.TsAt(3), 20);
  b.Consume(3);
  EXPECT_EQ(b.TsAt(0), 20);
}

TEST(StreamBuffer, SkipSpansFutureSegmentsAndGaps) {
  StreamBuffer b;
  b.Append(1, Bytes("ab"));
  b.Skip(6);  // "ab" and 4 bytes to come
  b.Append(2, Bytes("cd"));
  EXPECT_EQ(b.size(), 0u);
  EXPECT_TRUE(b.AbsorbGap(1));
  b.Append(3, Bytes("eXY"));
  EXPECT_EQ(b.size(), 2u);
  EXPECT_EQ(b.TsAt(0), 3);
  EXPECT_FALSE(b.AbsorbGap(1));  // buffered bytes: out of sync
  EXPECT_EQ(b.size(), 0u);
}

}  // namespace
}  // namespace bbprof::capture
