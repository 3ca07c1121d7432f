// The integer clock model and the offsets file (skewer/clock_model.h).
#include "skewer/clock_model.h"

#include <gtest/gtest.h>

#include <random>

namespace bbprof::skewer {
namespace {

constexpr TimeNs kRef = 1'000'000'000LL * trace::kNsPerSecond;

TEST(ClockModelTest, OffsetShiftsEveryTimeByTheSameAmount) {
  ClockModel m{30'000'000, 0};  // 30 ms fast
  EXPECT_EQ(ToClock(m, kRef, kRef + 5), kRef + 30'000'005);
  EXPECT_EQ(FromClock(m, kRef, kRef + 30'000'005), kRef + 5);
  EXPECT_EQ(ToClock(ClockModel{-7, 0}, kRef, 100), 93);
}

TEST(ClockModelTest, DriftAccumulatesFromTheReference) {
  ClockModel m{0, 100 * kPptPerPpm};  // +100 ppm: 100 us per second
  EXPECT_EQ(Shift(m, kRef, kRef), 0);
  EXPECT_EQ(Shift(m, kRef, kRef + trace::kNsPerSecond), 100'000);
  EXPECT_EQ(Shift(m, kRef, kRef + 10 * trace::kNsPerSecond), 1'000'000);
  // Before the reference the clock was behind.
  EXPECT_EQ(Shift(m, kRef, kRef - trace::kNsPerSecond), -100'000);
  ClockModel slow{5'000'000, -250 * kPptPerPpm};
  EXPECT_EQ(Shift(slow, kRef, kRef + 4 * trace::kNsPerSecond),
            5'000'000 - 1'000'000);
}

TEST(ClockModelTest, InverseIsExactForFastClocksAtNanosecondResolution) {
  std::mt19937_64 rng(42);
  for (int i = 0; i < 20000; ++i) {
    ClockModel m{static_cast<TimeNs>(rng() % 200'000'001) - 100'000'000,
                 static_cast<int64_t>(rng() % (kMaxDriftPpt + 1))};
    const TimeNs t =
        kRef + static_cast<TimeNs>(rng() % (100'000ULL * trace::kNsPerSecond));
    ASSERT_EQ(FromClock(m, kRef, ToClock(m, kRef, t)), t)
        << m.offset_ns << " " << m.drift_ppt;
    ASSERT_FALSE(IsLostValue(m, kRef, t));
  }
}

TEST(ClockModelTest, SlowClocksLoseOnlyTheLastNanosecondOfAMicrosecond) {
  std::mt19937_64 rng(7);
  int lost = 0;
  for (int i = 0; i < 20000; ++i) {
    ClockModel m{static_cast<TimeNs>(rng() % 200'000'001) - 100'000'000,
                 -static_cast<int64_t>(rng() % (kMaxDriftPpt + 1))};
    TimeNs t =
        kRef + static_cast<TimeNs>(rng() % (100'000ULL * trace::kNsPerSecond));
    const TimeNs back = FromClock(m, kRef, ToClock(m, kRef, t));
    if (IsLostValue(m, kRef, t)) {
      ++lost;
      ASSERT_EQ((t - kRef) % 1000, 999);
      ASSERT_EQ(back, t + 1);
    } else {
      ASSERT_EQ(back, t);
    }
    // Whole microseconds always come back.
    t -= (t - kRef) % 1000;
    ASSERT_EQ(FromClock(m, kRef, ToClock(m, kRef, t)), t);
    ASSERT_LE(ToClock(m, kRef, t), ToClock(m, kRef, t + 1));  // monotone
  }
  EXPECT_LT(lost, 100);
  // A -1000 ppm clock steps back every block: its 999 ns are all lost.
  ClockModel worst{0, -kMaxDriftPpt};
  EXPECT_TRUE(IsLostValue(worst, kRef, kRef + 999));
  EXPECT_FALSE(IsLostValue(worst, kRef, kRef + 998));
}

TEST(ClockModelTest, ParsesOffsetsAndDrifts) {
  TimeNs ns;
  ASSERT_TRUE(ParseOffsetSeconds("0.030", &ns));
  EXPECT_EQ(ns, 30'000'000);
  ASSERT_TRUE(ParseOffsetSeconds("-1.000000001", &ns));
  EXPECT_EQ(ns, -1'000'000'001);
  ASSERT_TRUE(ParseOffsetSeconds("+5e-3", &ns));
  EXPECT_EQ(ns, 5'000'000);
  EXPECT_FALSE(ParseOffsetSeconds("abc", &ns));
  EXPECT_FALSE(ParseOffsetSeconds("", &ns));
  EXPECT_FALSE(ParseOffsetSeconds("1.2.3", &ns));
  int64_t ppt;
  ASSERT_TRUE(ParseDriftPpm("-12.5", &ppt));
  EXPECT_EQ(ppt, -12'500'000);
  ASSERT_TRUE(ParseDriftPpm("1000", &ppt));
  EXPECT_EQ(ppt, kMaxDriftPpt);
  EXPECT_FALSE(ParseDriftPpm("1000.000001", &ppt));
  EXPECT_FALSE(ParseDriftPpm("0.0000001", &ppt));  // 7 decimals
  EXPECT_FALSE(ParseDriftPpm("", &ppt));
  EXPECT_FALSE(ParseDriftPpm("x", &ppt));
  EXPECT_EQ(FormatOffset(-30'000'000), "-0.030000000");
  EXPECT_EQ(FormatDrift(-12'500'000), "-12.500000");
  EXPECT_EQ(FormatDrift(3), "+0.000003");
}

TEST(OffsetsFileTest, RoundTripsThroughItsTextForm) {
  SkewTable t;
  t.nodes["WS2"] = {30'000'000, 0};
  t.nodes["AUTH"] = {-5'000'000, -20'500'000};
  t.reference = kRef;
  t.has_reference = true;
  t.stamp = Stamp::kReceiver;
  t.has_stamp = true;
  const std::string text = FormatOffsetsFile(t, "a comment", {{"WS2", "note"}});
  auto back = ParseOffsetsFile("x.offsets", text);
  ASSERT_TRUE(back.ok()) << back.status().message() << "\n" << text;
  EXPECT_EQ(back->nodes, t.nodes);
  EXPECT_EQ(back->reference, kRef);
  EXPECT_EQ(back->stamp, Stamp::kReceiver);
}

TEST(OffsetsFileTest, ErrorsNameFileAndLine) {
  auto r = ParseOffsetsFile("o.txt", "# c\nA 0.01\nB zero\n");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(
      r.status().message(),
      "o.txt:3: bad offset 'zero' for B (expected seconds, e.g. -0.0125)");
  r = ParseOffsetsFile("o.txt", "A\n");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().message().rfind(
                "o.txt:1: expected 'NODE OFFSET_SECONDS [DRIFT_PPM]'", 0),
            0u);
  r = ParseOffsetsFile("o.txt", "\nA 0 1 2\n");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("o.txt:2: too many fields"),
            std::string::npos);
  r = ParseOffsetsFile("o.txt", "A 0 5000\n");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("o.txt:1: bad drift '5000' for A"),
            std::string::npos);
  r = ParseOffsetsFile("o.txt", "A 0\nA 1\n");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().message(), "o.txt:2: node 'A' listed twice");
  r = ParseOffsetsFile("o.txt", "#reference=yesterday\n");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(
      r.status().message().find("o.txt:1: bad reference time 'yesterday'"),
      std::string::npos);
  r = ParseOffsetsFile("o.txt", "A 0.5 # trailing comment\n\n  B -0.25 12\n");
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->nodes.at("A").offset_ns, 500'000'000);
  EXPECT_EQ(r->nodes.at("B").drift_ppt, 12 * kPptPerPpm);
  EXPECT_FALSE(r->has_reference);
}

}  // namespace
}  // namespace bbprof::skewer
