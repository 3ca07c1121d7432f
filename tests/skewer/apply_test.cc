// Adding and removing skew on whole traces (skewer/apply.h): exact round
// trips, re-sorting, stamping conventions.
#include "skewer/apply.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <sstream>

#include "tests/util/temp_dir.h"
#include "trace/timestamp.h"

namespace bbprof::skewer {
namespace {

using testing::ReadFile;
using testing::RecordLines;
using testing::TempDir;

// A random trace in canonical text form: `n` messages among six nodes, time
// increasing by 1 to 2 ms/resolution steps of `resolution_ns` a line. (Equal
// timestamps of differently skewed nodes may legitimately swap; see
// MixedTiesAreCounted.)
std::string RandomTrace(uint64_t seed, int n, TimeNs resolution_ns) {
  std::mt19937_64 rng(seed);
  std::ostringstream out;
  out << "#bbprof-trace 1\n#meta source=test seed=" << seed << "\n";
  TimeNs t = 1'700'000'000LL * trace::kNsPerSecond + 123'456'789;
  t -= t % resolution_ns;
  const char* kinds[] = {"CALL", "RET", "MSG"};
  for (int i = 0; i < n; ++i) {
    t += (1 + static_cast<TimeNs>(rng() % 2'000'000) / resolution_ns) *
         resolution_ns;
    const int s = static_cast<int>(rng() % 6);
    const int r = static_cast<int>((s + 1 + rng() % 5) % 6);
    out << trace::FormatTimestamp(t) << "\t" << kinds[rng() % 3] << "\tN" << s
        << "\tN" << r << "\t" << (rng() % 1000) << "\t" << i << "\n";
  }
  return out.str();
}


TimeNs Ts(const std::string& line) {
  TimeNs t = 0;
  EXPECT_TRUE(trace::ParseTimestamp(line.substr(0, line.find('\t')), &t));
  return t;
}

SkewTable RandomTable(std::mt19937_64& rng, bool allow_slow) {
  SkewTable t;
  for (int n = 0; n < 6; ++n) {
    if (n == 3) continue;  // one node keeps true time
    ClockModel m;
    m.offset_ns = static_cast<TimeNs>(rng() % 200'000'001) - 100'000'000;
    m.drift_ppt = static_cast<int64_t>(rng() % 200'000'001);  // up to 200 ppm
    if (allow_slow && rng() % 2) m.drift_ppt = -m.drift_ppt;
    t.nodes["N" + std::to_string(n)] = m;
  }
  return t;
}

void ExpectRoundTrip(uint64_t seed, TimeNs resolution, bool allow_slow,
                     Stamp stamp) {
  TempDir dir;
  const std::string original = RandomTrace(seed, 5000, resolution);
  const std::string in = dir.Write("in.trace", original);
  std::mt19937_64 rng(seed * 31 + 1);
  ApplyOptions add;
  add.table = RandomTable(rng, allow_slow);
  add.table.stamp = stamp;
  auto s = ApplySkew(in, dir.File("skewed.trace"), add);
  ASSERT_TRUE(s.ok()) << s.status().message();
  ASSERT_TRUE(s->written);
  EXPECT_EQ(s->records, 5000u);
  EXPECT_EQ(s->lost_values, 0u);
  EXPECT_GT(s->shifted, 4000u);
  const std::string skewed = ReadFile(dir.File("skewed.trace"));
  ASSERT_NE(skewed, original);
  // Sorted output, same multiset of messages modulo time.
  auto recs = RecordLines(skewed);
  ASSERT_EQ(recs.size(), 5000u);
  for (size_t i = 1; i < recs.size(); ++i)
    ASSERT_LE(Ts(recs[i - 1]), Ts(recs[i])) << i;
  ApplyOptions remove;
  remove.direction = Direction::kRemove;
  remove.table = add.table;
  remove.table.reference = s->reference;
  remove.table.has_reference = true;
  auto r = ApplySkew(dir.File("skewed.trace"), dir.File("back.trace"), remove);
  ASSERT_TRUE(r.ok()) << r.status().message();
  // Byte for byte, meta lines included (the add line is cancelled).
  EXPECT_EQ(ReadFile(dir.File("back.trace")), original);
}

TEST(ApplySkewTest, RoundTripIsExactAtNanosecondResolutionForFastClocks) {
  for (uint64_t seed = 1; seed <= 4; ++seed)
    ExpectRoundTrip(seed, 1, false, Stamp::kSender);
}

TEST(ApplySkewTest, RoundTripIsExactAtMicrosecondResolutionForAnyDrift) {
  for (uint64_t seed = 11; seed <= 14; ++seed)
    ExpectRoundTrip(seed, 1000, true, Stamp::kSender);
}

TEST(ApplySkewTest, RoundTripIsExactWithReceiverStamps) {
  ExpectRoundTrip(21, 1000, true, Stamp::kReceiver);
}

TEST(ApplySkewTest, OffsetMovesOnlyTheStampingNodesRecordsAndResorts) {
  TempDir dir;
  const std::string in = dir.Write("in.trace",
                                   "1.000 CALL A B 1\n"
                                   "1.010 CALL B C 2\n"
                                   "1.020 RET C B 2\n"
                                   "1.030 RET B A 1\n");
  ApplyOptions o;
  o.table.nodes["B"] = {-25'000'000, 0};  // B's clock 25 ms slow
  auto s = ApplySkew(in, dir.File("out.trace"), o);
  ASSERT_TRUE(s.ok()) << s.status().message();
  EXPECT_EQ(s->shifted, 2u);
  EXPECT_EQ(ReadFile(dir.File("out.trace")),
            "#bbprof-trace 1\n"
            "#meta skewer op=add stamp=sender reference=1.000000000 offset "
            "B=-0.025000000\n"
            "0.985000000\tCALL\tB\tC\t2\n"
            "1.000000000\tCALL\tA\tB\t1\n"
            "1.005000000\tRET\tB\tA\t1\n"
            "1.020000000\tRET\tC\tB\t2\n");
  o.table.stamp = Stamp::kReceiver;
  s = ApplySkew(in, dir.File("recv.trace"), o);
  ASSERT_TRUE(s.ok()) << s.status().message();
  EXPECT_EQ(ReadFile(dir.File("recv.trace")),
            "#bbprof-trace 1\n"
            "#meta skewer op=add stamp=receiver reference=1.000000000 offset "
            "B=-0.025000000\n"
            "0.975000000\tCALL\tA\tB\t1\n"
            "0.995000000\tRET\tC\tB\t2\n"
            "1.010000000\tCALL\tB\tC\t2\n"
            "1.030000000\tRET\tB\tA\t1\n");
}

TEST(ApplySkewTest, DriftGrowsWithTime) {
  TempDir dir;
  const std::string in =
      dir.Write("in.trace", "10.5 MSG A B -\n20.5 MSG A B -\n");
  ApplyOptions o;
  o.table.nodes["A"] = {
      0, 100 * kPptPerPpm};  // reference = 10 (first ts, whole second)
  auto s = ApplySkew(in, dir.File("out.trace"), o);
  ASSERT_TRUE(s.ok()) << s.status().message();
  EXPECT_EQ(s->reference, 10 * trace::kNsPerSecond);
  auto recs = RecordLines(ReadFile(dir.File("out.trace")));
  ASSERT_EQ(recs.size(), 2u);
  EXPECT_EQ(Ts(recs[0]), 10'500'050'000);  // +100 ppm of 0.5 s
  EXPECT_EQ(Ts(recs[1]), 20'501'050'000);  // +100 ppm of 10.5 s
}

TEST(ApplySkewTest, HostStampMovesEveryLineOfAPerHostTrace) {
  TempDir dir;
  const std::string in = dir.Write("in.trace",
                                   "#meta capture_host=B\n"
                                   "1.000 CALL A B 1\n"
                                   "1.030 RET B A 1\n");
  ApplyOptions o;
  o.table.stamp = Stamp::kHost;
  o.table.nodes["B"] = {2'000'000, 0};
  auto s = ApplySkew(in, dir.File("out.trace"), o);
  ASSERT_TRUE(s.ok()) << s.status().message();
  EXPECT_EQ(s->capture_host, "B");
  EXPECT_EQ(s->shifted, 2u);
  o.table.nodes["A"] = {1, 0};  // A stamps nothing in B's capture
  s = ApplySkew(in, dir.File("out2.trace"), o);
  ASSERT_TRUE(s.ok());
  EXPECT_FALSE(s->written);
  EXPECT_EQ(s->unused_nodes, std::vector<std::string>{"A"});
}

TEST(ApplySkewTest, MixedTiesAreCountedAndSameClockTiesKeepTheirOrder) {
  TempDir dir;
  const std::string original =
      "#bbprof-trace 1\n"
      "1.000000000\tMSG\tA\tC\t1\n"
      "1.000000000\tMSG\tA\tC\t2\n"
      "1.000000000\tMSG\tB\tC\t3\n"
      "2.000000000\tMSG\tA\tC\t4\n";
  const std::string in = dir.Write("in.trace", original);
  ApplyOptions o;
  o.table.nodes["A"] = {5'000, 0};
  o.table.has_reference = true;
  o.table.reference = 0;
  auto s = ApplySkew(in, dir.File("s.trace"), o);
  ASSERT_TRUE(s.ok());
  EXPECT_EQ(s->mixed_ties, 1u);  // B's message at A's timestamp
  o.direction = Direction::kRemove;
  s = ApplySkew(dir.File("s.trace"), dir.File("back.trace"), o);
  ASSERT_TRUE(s.ok());
  // B's message now sorts first: the skew decided the order of the tie.
  EXPECT_EQ(RecordLines(ReadFile(dir.File("back.trace")))[0],
            "1.000000000\tMSG\tB\tC\t3");
  EXPECT_EQ(RecordLines(ReadFile(dir.File("back.trace")))[1],
            "1.000000000\tMSG\tA\tC\t1");
}

TEST(ApplySkewTest, UnknownNodeWritesNothing) {
  TempDir dir;
  const std::string in = dir.Write("in.trace", "1 MSG A B -\n");
  ApplyOptions o;
  o.table.nodes["Z"] = {5, 0};
  auto s = ApplySkew(in, dir.File("out.trace"), o);
  ASSERT_TRUE(s.ok());
  EXPECT_FALSE(s->written);
  EXPECT_EQ(s->unknown_nodes, std::vector<std::string>{"Z"});
  EXPECT_EQ(ReadFile(dir.File("out.trace")), "");
}

TEST(ApplySkewTest, ReorderBufferHoldsOnlyTheShiftSpread) {
  TempDir dir;
  // 20000 messages 0.5 ms apart (10 s) and a 10 ms spread of shifts: the
  // buffer needs about 20 messages, not the trace.
  std::ostringstream t;
  for (int i = 0; i < 20000; ++i) {
    t << trace::FormatTimestamp(1'000'000'000LL + i * 500'000LL) << "\tMSG\t"
      << (i % 2 ? "A" : "B") << "\tC\t-\n";
  }
  const std::string in = dir.Write("in.trace", t.str());
  ApplyOptions o;
  o.table.nodes["A"] = {10'000'000, 0};
  auto s = ApplySkew(in, dir.File("out.trace"), o);
  ASSERT_TRUE(s.ok()) << s.status().message();
  EXPECT_LE(s->max_buffered, 25u);
  EXPECT_GE(s->max_buffered, 10u);
}

}  // namespace
}  // namespace bbprof::skewer
