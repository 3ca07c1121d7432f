#include "base/duration.h"

#include <gtest/gtest.h>

namespace bbprof {
namespace {

TEST(FormatDurationTest, ThreeSignificantDigits) {
  EXPECT_EQ(FormatDuration(0), "0 s");
  EXPECT_EQ(FormatDuration(812.4), "812 s");
  EXPECT_EQ(FormatDuration(0.156), "156 ms");
  EXPECT_EQ(FormatDuration(0.0123), "12.3 ms");
  EXPECT_EQ(FormatDuration(2.5e-6), "2.50 \xC2\xB5s");
  EXPECT_EQ(FormatDuration(4e-9), "4.00 ns");
}

TEST(FormatSecondsTest, FixedDecimalsPerUnit) {
  EXPECT_EQ(FormatSeconds(1.5), "1.500 s");
  EXPECT_EQ(FormatSeconds(0.0123456), "12.346 ms");
  EXPECT_EQ(FormatSeconds(0.000456), "456.0 us");
  EXPECT_EQ(FormatSeconds(-0.002), "-2.000 ms");
  EXPECT_EQ(FormatSeconds(0), "0.0 us");
}

TEST(FormatSecondsTest, ChangesAreSignedAndZeroCanBeMilliseconds) {
  constexpr SecondsFormat kChange{.sign = true, .zero_in_ms = true};
  EXPECT_EQ(FormatSeconds(0.2, kChange), "+200.000 ms");
  EXPECT_EQ(FormatSeconds(-2e-5, kChange), "-20.0 us");
  EXPECT_EQ(FormatSeconds(0, kChange), "+0.000 ms");
  EXPECT_EQ(FormatSeconds(0, {.zero_in_ms = true}), "0.000 ms");
}

}  // namespace
}  // namespace bbprof
