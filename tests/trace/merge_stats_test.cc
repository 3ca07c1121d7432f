#include <gtest/gtest.h>

#include "tests/util/temp_dir.h"
#include "trace/merge.h"
#include "trace/reader.h"
#include "trace/stats.h"

namespace bbprof::trace {
namespace {

using bbprof::testing::ReadFile;
using bbprof::testing::TempDir;

TEST(MergeTest, TwoOverlappingCapturesBecomeOneTraceWithoutDuplicates) {
  TempDir dir;
  // Host A sniffs its own traffic, host B its own: the A<->B call and return
  // appear in both, stamped 0.2 ms apart; B's call to C only in B's.
  std::string a = dir.Write("a.trace",
                            "#meta capture_host=A\n"
                            "1.000000 CALL A B 7\n"
                            "1.005000 RET B A 7\n"
                            "1.005000 MSG A X -\n");
  std::string b = dir.Write("b.trace",
                            "#meta capture_host=B\n"
                            "1.000200 CALL A B 7\n"
                            "1.001000 CALL B C 1\n"
                            "1.002000 RET C B 1\n"
                            "1.004800 RET B A 7\n"
                            "1.004900 RET B A 7\n");
  MergeOptions opts;
  opts.dedup_window = 1'000'000;  // 1 ms
  opts.rename = {{"X", "logger"}};
  auto s = MergeTraces({a, b}, dir.File("m.trace"), opts);
  ASSERT_TRUE(s.ok()) << s.status().message();
  EXPECT_EQ(s->read, 8u);
  EXPECT_EQ(s->duplicates, 2u);  // B's copy of the CALL, A's copy of the RET
  EXPECT_EQ(s->written, 6u);
  EXPECT_EQ(ReadFile(dir.File("m.trace")),
            "#bbprof-trace 1\n"
            "#meta merged=2 dedup_window_ns=1000000\n"
            "#meta input=" + a + " capture_host=A\n"
            "#meta input=" + b + " capture_host=B\n"
            "1.000000000\tCALL\tA\tB\t7\n"
            "1.001000000\tCALL\tB\tC\t1\n"
            "1.002000000\tRET\tC\tB\t1\n"
            "1.004800000\tRET\tB\tA\t7\n"
            // B's own repeat of the return is a retransmission, kept.
            "1.004900000\tRET\tB\tA\t7\n"
            "1.005000000\tMSG\tA\tlogger\t-\n");
}

TEST(MergeTest, SortOrdersAnUnsortedTrace) {
  TempDir dir;
  std::string u = dir.Write("u.trace", "2 CALL A B 1\n1 MSG A B -\n3 RET B A 1\n");
  MergeOptions opts;
  opts.sort_inputs = true;
  auto s = MergeTraces({u}, dir.File("s.trace"), opts);
  ASSERT_TRUE(s.ok()) << s.status().message();
  EXPECT_EQ(ReadFile(dir.File("s.trace")),
            "#bbprof-trace 1\n#meta merged=1 dedup_window_ns=1000000\n"
            "1.000000000\tMSG\tA\tB\t-\n2.000000000\tCALL\tA\tB\t1\n"
            "3.000000000\tRET\tB\tA\t1\n");
  // An empty input beside it changes nothing.
  std::string e = dir.Write("e.trace", "#bbprof-trace 1\n");
  auto with_empty = MergeTraces({u, e}, dir.File("s2.trace"), opts);
  ASSERT_TRUE(with_empty.ok()) << with_empty.status().message();
  EXPECT_EQ(with_empty->written, 3u);
  // Without --sort the same input is an error naming the line.
  auto bad = MergeTraces({u}, dir.File("x.trace"), MergeOptions{});
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find(u + ":2: timestamp"), std::string::npos);
}

TEST(MergeTest, RenameMapErrorsNameTheLine) {
  TempDir dir;
  std::string m = dir.Write("names", "# map\n10.0.0.1 web\n10.0.0.2\n");
  auto r = LoadRenameMap(m);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().message(), m + ":3: expected two names, 'OLD NEW'");
  std::string bad = dir.Write("bad", "10.0.0.1 we(b\n");
  EXPECT_EQ(LoadRenameMap(bad).status().message(),
            bad + ":1: node name 'we(b' contains reserved character '('");
}

TEST(StatsTest, CountsKindsUnmatchedAndLatency) {
  TempDir dir;
  std::string p = dir.Write("s.trace",
                            "0 CALL A B 1\n1 CALL A B 2\n2 RET B A 1\n4 RET B A 2\n"
                            "5 RET B A 9\n6 CALL A C 3\n10 MSG C D -\n");
  auto r = OpenTraceReader(p);
  ASSERT_TRUE(r.ok());
  auto s = ComputeStats(**r);
  ASSERT_TRUE(s.ok());
  EXPECT_EQ(s->messages, 7u);
  EXPECT_EQ(s->calls, 3u);
  EXPECT_EQ(s->returns, 3u);
  EXPECT_EQ(s->free_messages, 1u);
  EXPECT_EQ(s->calls_without_return, 1u);
  EXPECT_EQ(s->returns_without_call, 1u);
  EXPECT_DOUBLE_EQ(s->duration_s(), 10.0);
  const EdgeStats& ab = s->edges.at({"A", "B"});
  EXPECT_EQ(ab.calls, 2u);
  EXPECT_EQ(ab.matched, 2u);
  EXPECT_DOUBLE_EQ(ab.latency_sum_s, 5.0);  // 2 s + 3 s
  // Little's law: 5 s of calls in progress over 10 s.
  EXPECT_DOUBLE_EQ(s->mean_outstanding_calls(), 0.5);
  EXPECT_EQ(s->nodes.at("B").received, 2u);
}

// Issue 16, defect 6: a string that is not UTF-8 (here a meta line and a
// name that bypassed the readers) must not make the JSON writer throw
// type_error.316 after the whole analysis: JsonText replaces the bytes.
TEST(StatsTest, JsonOfInvalidUtf8IsWrittenNotThrown) {
  TraceStats s;
  s.meta.push_back("note=caf\xe9");
  s.nodes["n\xff"].sent = 1;
  std::string j;
  ASSERT_NO_THROW(j = StatsToJson(s));
  EXPECT_NE(j.find("caf\xef\xbf\xbd"), std::string::npos) << j;
  EXPECT_NE(j.find("n\xef\xbf\xbd"), std::string::npos) << j;
}

}  // namespace
}  // namespace bbprof::trace
