#include "trace/timestamp.h"

#include <gtest/gtest.h>

namespace bbprof::trace {
namespace {

TEST(TimestampTest, ParsesZeroToNineFractionDigitsExactly) {
  TimeNs ns = 0;
  ASSERT_TRUE(ParseTimestamp("1047680084", &ns));
  EXPECT_EQ(ns, 1047680084000000000);
  ASSERT_TRUE(ParseTimestamp("1047680084.482205", &ns));
  EXPECT_EQ(ns, 1047680084482205000);
  ASSERT_TRUE(ParseTimestamp("1047680084.482205001", &ns));
  EXPECT_EQ(ns, 1047680084482205001);
  ASSERT_TRUE(ParseTimestamp("0.5", &ns));
  EXPECT_EQ(ns, 500000000);
  ASSERT_TRUE(ParseTimestamp("12.", &ns));
  EXPECT_EQ(ns, 12000000000);
}

TEST(TimestampTest, RejectsWhatIsNotDecimalSeconds) {
  TimeNs ns = 0;
  for (const char* bad : {"", "-1", "+1", "1e9", "1.2.3", "1.0000000001", ".5",
                          "abc", "1,5", "99999999999"}) {
    EXPECT_FALSE(ParseTimestamp(bad, &ns)) << bad;
  }
}

TEST(TimestampTest, FormatsNineDigitsAndRoundTrips) {
  EXPECT_EQ(FormatTimestamp(1047680084482205000), "1047680084.482205000");
  EXPECT_EQ(FormatTimestamp(0), "0.000000000");
  EXPECT_EQ(FormatTimestamp(7), "0.000000007");
  EXPECT_EQ(FormatTimestamp(-1500000000), "-1.500000000");
  for (TimeNs v : {TimeNs{1}, TimeNs{999999999}, TimeNs{1000000000},
                   TimeNs{1763830000123456789}}) {
    TimeNs back = 0;
    ASSERT_TRUE(ParseTimestamp(FormatTimestamp(v), &back));
    EXPECT_EQ(back, v);
  }
}

TEST(TimestampTest, OneRangeForEveryReaderAndWriter) {
  TimeNs ns = 0;
  ASSERT_TRUE(ParseTimestamp("4611686018.427387903", &ns));
  EXPECT_EQ(ns, kMaxTimeNs);
  EXPECT_FALSE(ParseTimestamp("4611686018.427387904", &ns));
  EXPECT_FALSE(ParseTimestamp("9223372036", &ns));
  EXPECT_TRUE(InTimeRange(0));
  EXPECT_FALSE(InTimeRange(-1));
  // Checked arithmetic: overflow and leaving the range are refused, never
  // undefined behaviour.
  EXPECT_FALSE(CheckedTimeAdd(kMaxTimeNs, INT64_MAX, &ns));
  EXPECT_FALSE(CheckedTimeAdd(5, -6, &ns));
  ASSERT_TRUE(CheckedTimeAdd(kMaxTimeNs - 1, 1, &ns));
  EXPECT_EQ(ns, kMaxTimeNs);
  ASSERT_TRUE(CheckedTimeFromParts(1047680084, 482205, 1000, &ns));
  EXPECT_EQ(ns, 1047680084482205000);
  EXPECT_FALSE(CheckedTimeFromParts(INT64_MAX / 3, 0, 1, &ns));
  EXPECT_FALSE(CheckedTimeFromParts(1, INT64_MAX, 1000, &ns));
  EXPECT_FALSE(CheckedTimeFromParts(-1, 0, 1, &ns));
}

TEST(TimestampTest, SecondsFlagsAcceptScientificNotation) {
  TimeNs ns = 0;
  ASSERT_TRUE(ParseSecondsFlag("0.03", &ns));
  EXPECT_EQ(ns, 30000000);
  ASSERT_TRUE(ParseSecondsFlag("30e-3", &ns));
  EXPECT_EQ(ns, 30000000);
  EXPECT_FALSE(ParseSecondsFlag("fast", &ns));
  EXPECT_FALSE(ParseSecondsFlag("1s", &ns));
}

TEST(TimestampTest, SecondsFlagErrorsSayOutOfRangeWithTheRange) {
  TimeNs ns = 0;
  EXPECT_FALSE(ParseSecondsFlag("1e300", &ns));
  EXPECT_EQ(FlagSecondsError("1e300"),
            "is out of range (at most 4611686018.427387903 seconds either "
            "way)");
  EXPECT_EQ(FlagSecondsError("-inf"),
            "is out of range (at most 4611686018.427387903 seconds either "
            "way)");
  EXPECT_EQ(FlagSecondsError("fast"),
            "is not a number of seconds (e.g. 0.03 or 30e-3)");
}

}  // namespace
}  // namespace bbprof::trace
