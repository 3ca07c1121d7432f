#include "nesting/nesting.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <mutex>
#include <numeric>
#include <random>
#include <set>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "base/workers.h"
#include "nesting/bins.h"
#include "nesting/skew/skew.h"
#include "nesting/skew/skew_estimation.h"
#include "nesting/steps/call_pairs.h"
#include "nesting/steps/candidates.h"
#include "nesting/steps/parent_choice.h"
#include "nesting/steps/scoreboards.h"
#include "results/eval/evaluation.h"
#include "results/writer.h"
#include "tests/util/temp_dir.h"
#include "trace/reader.h"

namespace bbprof::nesting {
namespace {

using bbprof::testing::TempDir;

// The paper's tests name their root callers (A, client): keep them apart
// unless a test asks for folding.
Params KeepClients() {
  Params p;
  p.clients.mode = ClientFolding::Mode::kKeep;
  return p;
}

Result<NestingResult> NestText(const std::string& text,
                               Params params = KeepClients()) {
  static TempDir dir;
  static int n = 0;
  std::string path = dir.Write("t" + std::to_string(n++) + ".trace", text);
  auto reader = trace::OpenTraceReader(path);
  if (!reader.ok()) return reader.status();
  return RunNesting(**reader, params);
}

const Pattern* Find(const NestingResult& r, const std::string& sig) {
  for (const auto& p : r.patterns) {
    if (p.signature == sig) return &p;
  }
  return nullptr;
}

// Trace lines added out of order, each at its time (seconds), written in
// time order (ties in the order added) with the time in front.
class TimedLines {
 public:
  void Add(double t, const std::string& text) { lines_.push_back({t, text}); }
  std::string Text() {
    std::stable_sort(lines_.begin(), lines_.end(),
                     [](const Line& a, const Line& b) { return a.t < b.t; });
    std::string text;
    char at[32];
    for (const Line& l : lines_) {
      std::snprintf(at, sizeof at, "%.6f ", l.t);
      text += at + l.text + "\n";
    }
    return text;
  }

 private:
  struct Line {
    double t;
    std::string text;
  };
  std::vector<Line> lines_;
};

// Figure 3 (section 5.1.1): A calls B (messages 1 and 11), B calls C (3, 5)
// and D (7, 9); message numbers are the timestamps.
TEST(NestingTest, Figure3GivesOnePathABCD) {
  auto r = NestText(
      "1 CALL A B 1\n3 CALL B C 2\n5 RET C B 2\n7 CALL B D 3\n9 RET D B 3\n"
      "11 RET B A 1\n");
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->input.call_pairs, 3u);
  ASSERT_EQ(r->patterns.size(), 1u);
  const Pattern& p = r->patterns[0];
  EXPECT_EQ(p.signature, "A->B(C,D)");
  EXPECT_EQ(p.count, 1u);
  EXPECT_DOUBLE_EQ(p.root.latency.mean_s(), 10.0);
  ASSERT_EQ(p.root.children.size(), 2u);
  EXPECT_EQ(p.root.children[0].node, "C");
  EXPECT_DOUBLE_EQ(p.root.children[0].call_delay.mean_s(), 2.0);
  EXPECT_DOUBLE_EQ(p.root.children[0].latency.mean_s(), 2.0);
  EXPECT_EQ(p.root.children[1].node, "D");
  EXPECT_DOUBLE_EQ(p.root.children[1].call_delay.mean_s(), 6.0);
  // B's own time: 10 s minus the 2 s in C and 2 s in D.
  EXPECT_DOUBLE_EQ(OwnTimeSeconds(p.root), 6.0);
}

// Figure 5 (section 5.1.1.2): two B->C calls each nested in two A->B calls.
// The medium delay (t3 - t1 = t4 - t2) scores twice as high as the long and
// short ones, so each child goes to a different parent.
TEST(NestingTest, Figure5AssignsEachChildToADifferentParent) {
  auto r = NestText(
      "0.000 CALL A B p1\n0.010 CALL A B p2\n0.030 CALL B C c1\n"
      "0.040 CALL B C c2\n0.050 RET C B c1\n0.060 RET C B c2\n"
      "0.080 RET B A p1\n0.090 RET B A p2\n");
  ASSERT_TRUE(r.ok()) << r.status().message();
  ASSERT_EQ(r->patterns.size(), 1u);
  EXPECT_EQ(r->patterns[0].signature, "A->B(C)");
  EXPECT_EQ(r->patterns[0].count, 2u);
  // Both children at the medium delay of 30 ms.
  EXPECT_NEAR(r->patterns[0].root.children[0].call_delay.mean_s(), 0.030, 1e-12);
  EXPECT_NEAR(r->input.mean_parallelism, 2.0, 1e-12);
}

TEST(NestingTest, MissingCallidsMatchFirstInFirstOut) {
  auto r = NestText(
      "1 CALL A B -\n2 CALL A B -\n3 RET B A -\n4 RET B A -\n5 RET B A -\n");
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->input.call_pairs, 2u);
  EXPECT_EQ(r->input.unmatched_returns, 1u);
  ASSERT_EQ(r->patterns.size(), 1u);
  // FIFO: (1,3) and (2,4), both 2 s long.
  EXPECT_DOUBLE_EQ(r->patterns[0].root.latency.mean_s(), 2.0);
  EXPECT_DOUBLE_EQ(r->patterns[0].root.latency.Summarize().max, 2.0);
}

TEST(NestingTest, UnmatchedCallsAreCountedAndNeverParents) {
  // The first A->B call never returns: B->C must not be nested in it.
  auto r = NestText("1 CALL A B x\n2 CALL B C y\n3 RET C B y\n4 MSG A B -\n");
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->input.unmatched_calls, 1u);
  EXPECT_EQ(r->input.free_messages, 1u);
  ASSERT_EQ(r->patterns.size(), 1u);
  EXPECT_EQ(r->patterns[0].signature, "B->C");
}

// Issue 16: calls that are never answered must not grow the pairing table
// without bound. Past Params::max_pending_calls the oldest pending call is
// evicted: counted, left unmatched (never a parent), and the calls after it
// still pair and nest as without the limit.
TEST(NestingTest, PendingCallsPastTheLimitAreEvictedAsUnmatched) {
  std::string text;
  for (int i = 0; i < 500; ++i) {
    text += "0." + std::to_string(100 + i) + " CALL A X lost" +
            std::to_string(i) + "\n";
  }
  text += "1 CALL A B r1\n1.1 CALL B C r2\n1.2 RET C B r2\n1.3 RET B A r1\n";
  text += "1.4 RET X A lost0\n";  // too late: its call was evicted
  Params p = KeepClients();
  p.max_pending_calls = 4;
  auto r = NestText(text, p);
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->input.pending_calls_evicted, 498u);
  EXPECT_EQ(r->input.unmatched_calls, 500u);
  EXPECT_EQ(r->input.unmatched_returns, 1u);
  EXPECT_EQ(r->input.call_pairs, 2u);
  ASSERT_EQ(r->patterns.size(), 1u);
  EXPECT_EQ(r->patterns[0].signature, "A->B(C)");
  // Without the limit: the same pairs and patterns, nothing evicted (and
  // lost0 pairs with its return).
  auto unlimited = NestText(text, KeepClients());
  ASSERT_TRUE(unlimited.ok());
  EXPECT_EQ(unlimited->input.pending_calls_evicted, 0u);
  EXPECT_EQ(unlimited->input.unmatched_calls, 499u);
  ASSERT_EQ(unlimited->patterns.size(), 2u);
}

// Returns stamped before their calls wait for them under a skew window;
// a crafted trace of returns at one instant must not grow that table past
// the limit either. The survivors still pair with their calls.
TEST(NestingTest, EarlyReturnsPastTheLimitAreDroppedAsUnmatched) {
  std::string text;
  for (int i = 0; i < 300; ++i)
    text += "1 RET B A early" + std::to_string(i) + "\n";
  text += "1.001 CALL A B early299\n1.002 CALL A B early0\n";
  Params p = KeepClients();
  p.skew_auto = false;
  p.skew_window = 5'000'000;  // 5 ms
  p.max_pending_calls = 10;
  auto r = NestText(text, p);
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->input.call_pairs, 1u);  // early299 was kept, early0 dropped
  EXPECT_EQ(r->input.unmatched_returns, 299u);  // 290 dropped, 9 never claimed
  EXPECT_EQ(r->input.unmatched_calls, 1u);
}

TEST(NestingTest, OverlapPenaltySpreadsTiedChildrenOverParents) {
  // Two parents start together; two overlapping children have identical
  // delays to both. Without a penalty both go to the earliest parent; with
  // x = 2 the second child prefers the parent without an overlapping child.
  const std::string t =
      "0.000 CALL A B p1\n0.000 CALL A B p2\n0.010 CALL B C c1\n"
      "0.010 CALL B C c2\n0.020 RET C B c1\n0.020 RET C B c2\n"
      "0.030 RET B A p1\n0.030 RET B A p2\n";
  Params none = KeepClients();
  none.penalty_overlap = 0;
  auto r0 = NestText(t, none);
  ASSERT_TRUE(r0.ok());
  ASSERT_NE(Find(*r0, "A->B(C,C)"), nullptr);
  EXPECT_NE(Find(*r0, "A->B"), nullptr);
  auto r2 = NestText(t);
  ASSERT_TRUE(r2.ok());
  ASSERT_EQ(r2->patterns.size(), 1u);
  EXPECT_EQ(r2->patterns[0].signature, "A->B(C)");
  EXPECT_EQ(r2->patterns[0].count, 2u);
}

TEST(NestingTest, SkewWindowAdmitsAParentStampedAfterItsChild) {
  // B's clock is fast: its call to C appears 1 ms before A's call to B.
  const std::string t =
      "1.000 CALL B C c\n1.001 CALL A B p\n1.010 RET C B c\n1.020 RET B A p\n";
  auto strict = NestText(t);
  ASSERT_TRUE(strict.ok());
  EXPECT_EQ(strict->patterns.size(), 2u);  // two separate roots
  Params p = KeepClients();
  p.skew_auto = false;
  p.skew_window = 5'000'000;  // 5 ms
  auto loose = NestText(t, p);
  ASSERT_TRUE(loose.ok());
  ASSERT_EQ(loose->patterns.size(), 1u);
  EXPECT_EQ(loose->patterns[0].signature, "A->B(C)");
  EXPECT_NEAR(loose->patterns[0].root.children[0].call_delay.mean_s(), -0.001, 1e-9);
}

TEST(NestingTest, SkewWindowPairsAReturnStampedBeforeItsCall) {
  // B's clock is 8 ms fast and B stamps what it sends: its call to C looks
  // 8 ms late, so C's 2 ms return comes before it.
  const std::string t =
      "1.000 CALL A B p\n1.003 RET C B c\n1.009 CALL B C c\n"
      "1.020 RET B A p\n";
  Params no_window = KeepClients();
  no_window.skew_auto = false;
  auto strict = NestText(t, no_window);
  ASSERT_TRUE(strict.ok());
  EXPECT_EQ(strict->input.unmatched_returns, 1u);
  EXPECT_EQ(strict->input.unmatched_calls, 1u);
  ASSERT_EQ(strict->patterns.size(), 1u);
  EXPECT_EQ(strict->patterns[0].signature, "A->B");
  Params p = KeepClients();
  p.skew_auto = false;
  p.skew_window = 10'000'000;  // 10 ms
  auto loose = NestText(t, p);
  ASSERT_TRUE(loose.ok());
  EXPECT_EQ(loose->input.unmatched_returns, 0u);
  EXPECT_EQ(loose->input.unmatched_calls, 0u);
  ASSERT_EQ(loose->patterns.size(), 1u);
  EXPECT_EQ(loose->patterns[0].signature, "A->B(C)");
  // The observed latency is kept: it shows the skew.
  EXPECT_NEAR(loose->patterns[0].root.children[0].latency.mean_s(), -0.006, 1e-9);
  // A return whose call comes later than twice the window stays unmatched.
  auto late = NestText(
      "1.000 CALL A B p\n1.003 RET C B c\n1.030 CALL B C c\n1.040 RET C B c\n"
      "1.050 RET B A p\n",
      p);
  ASSERT_TRUE(late.ok());
  EXPECT_EQ(late->input.unmatched_returns, 1u);
  EXPECT_EQ(late->input.unmatched_calls, 0u);
}

// The default works the skew out from the trace. A's clock is 1 ms fast,
// so each of 50 calls B->C seems to start 0.8 ms before the call A->B that
// caused it: every child misses its parent at the start, by 0.8 ms. A
// window alone would be twice that wide; instead the first assignment
// bounds A's clock against B's (children start after their parent: at
// most -0.8 ms) and A's timestamps are moved back by 0.8 ms, which leaves
// no skew to window.
TEST(NestingTest, AutomaticSkewNestsChildrenStampedBeforeTheirParents) {
  std::string t;
  char line[128];
  for (int i = 0; i < 50; ++i) {
    const double t0 = 1.0 + 0.1 * i;
    std::snprintf(line, sizeof line,
                  "%.6f CALL B C c%d\n%.6f CALL A B p%d\n%.6f RET C B "
                  "c%d\n%.6f RET B A p%d\n",
                  t0 + 0.0002, i, t0 + 0.001, i, t0 + 0.0012, i, t0 + 0.002, i);
    t += line;
  }
  Params fixed;
  fixed.skew_auto = false;
  auto strict = NestText(t, fixed);
  ASSERT_TRUE(strict.ok());
  EXPECT_EQ(strict->patterns.size(), 2u);  // A->B and B->C as separate roots
  auto r = NestText(t);
  ASSERT_TRUE(r.ok());
  ASSERT_EQ(r->patterns.size(), 1u);
  EXPECT_EQ(r->patterns[0].signature, "A->B(C)");
  EXPECT_EQ(r->patterns[0].count, 50u);
  ASSERT_EQ(r->clock_offsets.size(), 1u);
  EXPECT_EQ(r->clock_offsets[0].node, "A");
  EXPECT_EQ(r->clock_offsets[0].reference, "B");  // the first node named
  EXPECT_NEAR(r->clock_offsets[0].offset_s, 0.0008, 1e-9);
  EXPECT_EQ(r->clock_offsets[0].drift_ppm, 0.0);
  // Corrected, each child starts with its parent (a tie, which the order
  // of the records breaks the other way): at most a window of nanoseconds.
  EXPECT_LT(trace::NsToSeconds(r->params.skew_window), 1e-6);
  // The observed delays are reported, not the corrected ones.
  EXPECT_NEAR(r->patterns[0].root.children[0].call_delay.mean_s(), -0.0008,
              1e-9);
  // A clean trace gets no window: the automatic mode changes nothing there.
  auto clean = NestText(
      "0.000 CALL A B p1\n0.001 CALL B C c1\n0.002 RET C B c1\n0.003 RET B A "
      "p1\n");
  ASSERT_TRUE(clean.ok());
  EXPECT_TRUE(clean->skew.empty());
  EXPECT_TRUE(clean->clock_offsets.empty());
  EXPECT_EQ(clean->params.skew_window, 0);
}

// Edge X->Y: its calls' children start 1.5 ms or more after them and it
// returns 1.3 ms or more before its parents, so Y's clock is 1.3 to 1.5 ms
// ahead of X's: the midpoint, 1.4 ms. Edge Y->Z bounds Z's clock against
// Y's to -0.1 .. +0.05 ms, which holds 0: no skew there, Z keeps Y's
// clock. A list with fewer than 10 samples bounds nothing.
TEST(NestingTest, ClockOffsetsAreTheMidpointsOfTheEdgesBounds) {
  std::vector<EdgeClockEvidence> edges(2);
  edges[0].caller = 0;
  edges[0].callee = 1;
  edges[1].caller = 1;
  edges[1].callee = 2;
  for (int k = 0; k < 100; ++k) {
    edges[0].child_starts.push_back({0, 1'500'000 + k * 1000});
    edges[0].parent_ends.push_back({0, -1'300'000 + k * 1000});
    edges[0].latencies.push_back({0, 3'000'000 + k * 1000});
    edges[1].latencies.push_back({0, 50'000 + k * 1000});
    edges[1].parent_ends.push_back({0, 100'000 + k * 1000});
  }
  ClockCorrection c = SolveClockOffsets(edges, 3, 0, 0);
  ASSERT_TRUE(c.any());
  // The 1st percentile of 100 samples is the second smallest.
  EXPECT_EQ(c.offset[0], 0);
  EXPECT_EQ(c.offset[1], 1'400'000);
  EXPECT_EQ(c.offset[2], 1'400'000);
  EXPECT_EQ(c.drift[1], 0.0);
  // An unskewed trace: every interval holds 0, nothing moves.
  std::vector<EdgeClockEvidence> clean(1);
  clean[0].caller = 0;
  clean[0].callee = 1;
  for (int k = 0; k < 100; ++k) {
    clean[0].child_starts.push_back({k * 1'000'000, 20'000 + k});
    clean[0].parent_ends.push_back({k * 1'000'000, 30'000 + k});
    clean[0].latencies.push_back({k * 1'000'000, 500'000 + k});
  }
  EXPECT_FALSE(SolveClockOffsets(clean, 2, 0, 99'000'000).any());
  // Y's clock gains 20 ppm on X's: the bounds slide with time; the drift is
  // read off their lower envelopes and taken out before they are read.
  std::vector<EdgeClockEvidence> drifting(1);
  drifting[0].caller = 0;
  drifting[0].callee = 1;
  for (int k = 0; k <= 800; ++k) {
    const trace::TimeNs t = trace::TimeNs{k} * 10'000'000;  // 0 .. 8 s
    const trace::TimeNs d = 2'000'000 + t / 50'000;         // 2 ms + 20 ppm
    drifting[0].child_starts.push_back({t, d + 100'000 + (k % 7) * 1000});
    drifting[0].parent_ends.push_back({t, -d + 100'000 + (k % 5) * 1000});
    drifting[0].latencies.push_back({t, d + 500'000 + (k % 3) * 1000});
  }
  c = SolveClockOffsets(drifting, 2, 0, 8'000'000'000);
  EXPECT_NEAR(c.drift[1], 20e-6, 1e-7);
  EXPECT_NEAR(static_cast<double>(c.Offset(1, 4'000'000'000)), 2'080'000,
              5'000);
}

// At high load the first assignment, made with windows, has many wrong
// parents, and each tightens a bound: here 30 of 100 children were given a
// parent that started 0.5 ms after their true one, which drags the 1st
// percentile of the child starts (1.001 ms) below the lower bound (1.299
// ms). Twenty children had one candidate only, so their parent is right:
// the upper bound is read off them (1.5 ms), and Y's clock is the midpoint
// of 1.299 and 1.5 ms, as if no parent were wrong.
TEST(NestingTest, ClockBoundsComeFromChildrenWithOneCandidate) {
  std::vector<EdgeClockEvidence> edges(1);
  edges[0].caller = 0;
  edges[0].callee = 1;
  for (int k = 0; k < 100; ++k) {
    const trace::TimeNs start =
        k < 30 ? 1'000'000 + k * 1000 : 1'500'000 + k * 1000;
    edges[0].child_starts.push_back({0, start});
    if (k < 20) edges[0].sure_child_starts.push_back({0, 1'500'000 + k * 1000});
    edges[0].parent_ends.push_back({0, -1'300'000 + k * 1000});
    edges[0].latencies.push_back({0, 3'000'000 + k * 1000});
  }
  ClockCorrection c = SolveClockOffsets(edges, 2, 0, 0);
  EXPECT_EQ(c.offset[1], 1'399'500);
  // Fewer than 10 such children say too little: all of them are used.
  edges[0].sure_child_starts.resize(9);
  c = SolveClockOffsets(edges, 2, 0, 0);
  EXPECT_NE(c.offset[1], 1'399'500);
}

// An external client's calls have no parent, so their edge has two lists
// only: latencies and child starts. Here the clocks agree, the children
// start 66 us or more after their parent, and the latencies shrink by
// 400 us per second over the run (a load that eases): the mean of the two
// slopes, -200 ppm, read as drift, would pull the child bound 800 us below
// 0 at the ends of the trace and move the client's clock by that much. The
// slope nearer 0, the one both lists support, leaves the clocks alone.
TEST(NestingTest, ClockDriftNeedsBothListsOfATwoListEdge) {
  std::vector<EdgeClockEvidence> edges(1);
  edges[0].caller = 0;
  edges[0].callee = 1;
  for (int k = 0; k <= 800; ++k) {
    const trace::TimeNs t = trace::TimeNs{k} * 10'000'000;  // 0 .. 8 s
    edges[0].child_starts.push_back({t, 66'000 + (k % 7) * 1000});
    edges[0].latencies.push_back(
        {t, 3'700'000 - t / 2500 + (k % 3) * 1000});  // -400 ppm
  }
  const ClockCorrection c = SolveClockOffsets(edges, 2, 0, 8'000'000'000);
  EXPECT_FALSE(c.any());
}

// Three lists whose lower envelopes slope by 20 ppm (the trend of the
// gaps: a load that grows over the run) read as drift, and taken out they
// move the parent ends' bound to +75 us and the children's to +100 us: an
// offset of 87.5 us. As stamped the bounds hold 0 (-5 .. +20 us): the
// clocks agree, and an edge whose bounds as stamped hold 0 is left alone.
TEST(NestingTest, ADriftDoesNotMoveBoundsThatHoldZeroAsStamped) {
  std::vector<EdgeClockEvidence> edges(1);
  edges[0].caller = 0;
  edges[0].callee = 1;
  for (int k = 0; k <= 800; ++k) {
    const trace::TimeNs t = trace::TimeNs{k} * 10'000'000;  // 0 .. 8 s
    edges[0].child_starts.push_back({t, 20'000 + t / 50'000 + (k % 7) * 10});
    edges[0].latencies.push_back({t, 400'000 + t / 50'000 + (k % 3) * 10});
    edges[0].parent_ends.push_back({t, 5'000 + (k % 5) * 10});
  }
  const ClockCorrection c = SolveClockOffsets(edges, 2, 0, 8'000'000'000);
  EXPECT_FALSE(c.any());
}

// The edges solved side by side (SolveClockOffsets on threads, once the
// samples are many) give one thread's clocks to the bit: each edge's
// estimate in edge order. Six nodes in a cycle of edges whose bounds
// disagree, most one-sided (no parent ends: equal widths, so which edges
// make the spanning tree depends on their order), two with drift, and an
// edge with too little evidence; 6,000 samples a list, so the threads are
// used.
TEST(NestingTest, ClockOffsetsOnThreadsAreOneThreads) {
  std::vector<EdgeClockEvidence> edges;
  const trace::TimeNs end = 600'000'000'000;
  auto add_edge = [&](trace::NodeId a, trace::NodeId b, trace::TimeNs d,
                      double drift, bool two_sided, int samples) {
    EdgeClockEvidence e;
    e.caller = a;
    e.callee = b;
    for (int k = 0; k < samples; ++k) {
      const trace::TimeNs t = end / samples * k;
      const auto skew = d + static_cast<trace::TimeNs>(
                                drift * static_cast<double>(t - end / 2));
      const trace::TimeNs gap = 20'000 + (k * 7919) % 900'000;
      e.latencies.push_back({t, skew + 1'000'000 + gap});
      e.child_starts.push_back({t, skew + gap});
      if (two_sided) e.parent_ends.push_back({t, -skew + gap});
    }
    edges.push_back(std::move(e));
  };
  add_edge(0, 1, 700'000, 0, true, 6000);
  add_edge(1, 2, -400'000, 0, false, 6000);
  add_edge(2, 3, 250'000, 3e-6, false, 6000);
  add_edge(3, 4, 900'000, 0, false, 6000);
  add_edge(4, 5, -150'000, -2e-6, true, 6000);
  add_edge(5, 0, 333'000, 0, false, 6000);
  add_edge(1, 4, 1'200'000, 0, false, 6000);
  add_edge(2, 5, -600'000, 0, false, 6000);
  add_edge(0, 3, 50'000, 0, false, 5);  // too little: no estimate
  std::vector<EdgeClockEvidence> copy = edges;
  const ClockCorrection one = SolveClockOffsets(copy, 6, 0, end, 6000, 1);
  ASSERT_TRUE(one.any());
  for (int threads : {2, 3, 8}) {
    copy = edges;
    const ClockCorrection many =
        SolveClockOffsets(copy, 6, 0, end, 6000, threads);
    EXPECT_EQ(many.offset, one.offset) << threads;
    EXPECT_EQ(many.drift, one.drift) << threads;
    EXPECT_EQ(many.root, one.root) << threads;
    EXPECT_EQ(many.t0, one.t0) << threads;
  }
}

// A drift left over by a first round: 0.5 ppm over a 400-second trace,
// 100 us either way at its ends. The gaps spread wide (exponential, mean
// 1.5 ms), so the 1st percentile of the whole trace's children sits near
// a higher percentile of its ends': as stamped the bounds cross (+22 us
// over -21 us), and once the drift is taken out they hold 0, so a short
// trace is left as it is (d = 0, no drift). Read in stretches of 100 s,
// the ends' bounds do not hold 0 (the last about +70 .. +100 us): the
// drift is a clock's, and on a trace with enough calls it stays.
TEST(NestingTest, ADriftLeftOverShowsAtALongTracesEnds) {
  std::vector<EdgeClockEvidence> edges(1);
  edges[0].caller = 0;
  edges[0].callee = 1;
  const trace::TimeNs mid = 200'000'000'000;
  auto gap = [](int k, double shift) {
    // Deterministic uniforms (a golden-ratio sequence), then exponential.
    const double u = std::fmod((k + shift) * 0.6180339887498949, 1.0);
    return static_cast<trace::TimeNs>(-1'500'000 * std::log(1 - u));
  };
  for (int k = 0; k < 40'000; ++k) {
    const trace::TimeNs t = trace::TimeNs{k} * 10'000'000;  // 0 .. 400 s
    const trace::TimeNs d = (t - mid) / 2'000'000;          // 0.5 ppm
    edges[0].child_starts.push_back({t, d + gap(k, 0.1)});
    edges[0].parent_ends.push_back({t, -d + gap(k, 0.4)});
    edges[0].latencies.push_back({t, d + 2'000'000 + gap(k, 0.7)});
  }
  const trace::TimeNs end = 400'000'000'000;
  std::vector<EdgeClockEvidence> copy = edges;
  EXPECT_FALSE(SolveClockOffsets(copy, 2, 0, end).any());
  copy = edges;
  EXPECT_FALSE(SolveClockOffsets(copy, 2, 0, end, 150'000).any())
      << "too few calls for a minute's stretches";
  const ClockCorrection c = SolveClockOffsets(edges, 2, 0, end, 400'000);
  ASSERT_TRUE(c.any());
  EXPECT_NEAR(c.drift[1], 0.5e-6, 0.1e-6);
  EXPECT_NEAR(static_cast<double>(c.Offset(1, 0)), -100'000, 30'000);
  EXPECT_NEAR(static_cast<double>(c.Offset(1, end)), 100'000, 30'000);
}

// A drift read across a lull: one call at 0, then none until 46.4 s, then
// traffic to 186 s (a capture that caught a stray call, then waited; or a
// stream segment given a call from far back). Of the eight slices of time
// the drift's slope is read from, the second holds only the first 0.1 s
// of traffic: placed at the slice's middle, 11.6 s before its samples, it
// bent the slope of a 15 ppm drift (on the real capture this came from,
// to 0). Each slice's percentile is placed at its samples' mean time.
TEST(NestingTest, ADriftIsReadWhereItsSamplesAreNotWhereTheSliceIs) {
  std::vector<EdgeClockEvidence> edges(1);
  edges[0].caller = 0;
  edges[0].callee = 1;
  const trace::TimeNs from = 46'400'000'000, end = 186'000'000'000;
  const trace::TimeNs mid = end / 2;
  auto gap = [](int k, double shift) {
    const double u = std::fmod((k + shift) * 0.6180339887498949, 1.0);
    return static_cast<trace::TimeNs>(-300'000 * std::log(1 - u));
  };
  int k = 0;
  for (trace::TimeNs t = from; t <= end; t += 5'000'000, ++k) {
    const trace::TimeNs d = (t - mid) * 15 / 1'000'000;  // 15 ppm
    edges[0].child_starts.push_back({t, d + gap(k, 0.1)});
    edges[0].parent_ends.push_back({t, -d + gap(k, 0.4)});
    edges[0].latencies.push_back({t, d + 2'000'000 + gap(k, 0.7)});
  }
  const ClockCorrection c = SolveClockOffsets(edges, 2, 0, end);
  ASSERT_TRUE(c.any());
  EXPECT_NEAR(c.drift[1], 15e-6, 0.5e-6);
}

// A small skew hidden by long calls. The front F serves fast requests,
// each a call to B that F answers 20-40 us after B does, and slow ones that
// hold F 40 ms without calling anything, eight of them in flight at any
// time. B's clock is 150 us ahead, so every fast request's call to B seems
// to return after its parent, and some slow call encloses it instead: no
// call misses every call into F, and no window is needed. Without the
// probe every call to B went to a slow request. The probe's windows let
// the true parents be chosen, the bounds put B ahead, and the fast
// requests nest.
// `fast` requests, a slow one every fifth.
std::string HiddenSkewTrace(int fast) {
  TimedLines lines;
  char line[64];
  std::mt19937 rng(7);
  std::uniform_int_distribution<int> jitter(0, 40);
  auto add = [&](double at, const char* fmt, int id) {
    std::snprintf(line, sizeof line, fmt, id);
    lines.Add(at, line);
  };
  const double skew = 150e-6;
  for (int i = 0; i < fast; ++i) {
    const double t0 = 1.0 + 0.001 * i;  // a fast request every ms
    const double to_b = t0 + (20 + jitter(rng)) * 1e-6;
    const double b_ret = to_b + (100 + 2 * jitter(rng)) * 1e-6;
    const double f_ret = b_ret + (20 + jitter(rng) / 2) * 1e-6;
    add(t0, "CALL client F f%d", i);
    add(to_b, "CALL F B b%d", i);
    add(b_ret + skew, "RET B F b%d", i);
    add(f_ret, "RET F client f%d", i);
    if (i % 5 == 0) {  // a slow request every 5 ms, 40 ms long
      const double s0 = t0 + 0.0003;
      add(s0, "CALL client F s%d", i);
      add(s0 + 0.04, "RET F client s%d", i);
    }
  }
  return lines.Text();
}

void ExpectHiddenSkewFound(int fast) {
  auto r = NestText(HiddenSkewTrace(fast));
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_TRUE(r->skew.empty());  // no window: every call to B is enclosed
  ASSERT_EQ(r->clock_offsets.size(), 1u);
  EXPECT_EQ(r->clock_offsets[0].node, "B");
  // B's bounds: latencies of 250 us or more above, parents returning
  // 130 us or more before it below; the midpoint is B's offset, ahead.
  EXPECT_GT(r->clock_offsets[0].offset_s, 100e-6);
  EXPECT_LT(r->clock_offsets[0].offset_s, 300e-6);
  const Pattern* p = Find(*r, "client->F(B)");
  ASSERT_NE(p, nullptr);
  // The first request or two may lack a parent that encloses it once
  // corrected; every other fast request nests.
  EXPECT_GE(p->count, static_cast<uint64_t>(fast - 20));
}

// Two time ranges of one trace (stream segments), each solved relative to
// its own first node and stated at its own middle: A, B, C with B = +1 ms
// and +10 ppm, C = -2 ms and -5 ppm against A at t = 100 s; the first range
// (t = 50 s) is relative to A, the second (t = 150 s) to B. A separate
// part X-Y is seen by the second range only. Merged at 100 s: A's clock is
// the reference (equal weight, first by name) and each clock is exact.
// Averaging the ranges' offsets as given would put B at -0.5 ms.
TEST(NestingTest, RangesClocksAreMergedOnOneReferenceAtOneTime) {
  const trace::TimeNs at = 100'000'000'000;
  auto b_of_a = [](double t) { return 1e-3 + 10e-6 * (t - 100); };
  auto c_of_a = [](double t) { return -2e-3 - 5e-6 * (t - 100); };
  RangeClocks first{{{"B", b_of_a(50), 10, "A"}, {"C", c_of_a(50), -5, "A"}},
                    50'000'000'000, 3};
  RangeClocks second{{{"A", -b_of_a(150), -10, "B"},
                      {"C", c_of_a(150) - b_of_a(150), -15, "B"},
                      {"Y", 0.3e-3, 2, "X"}},
                     150'000'000'000, 3};
  const std::vector<NodeClockOffset> merged =
      MergeRangeClocks({first, second}, at);
  ASSERT_EQ(merged.size(), 3u);
  EXPECT_EQ(merged[0].node, "B");
  EXPECT_EQ(merged[0].reference, "A");
  EXPECT_NEAR(merged[0].offset_s, 1e-3, 1e-12);
  EXPECT_NEAR(merged[0].drift_ppm, 10, 1e-9);
  EXPECT_EQ(merged[1].node, "C");
  EXPECT_EQ(merged[1].reference, "A");
  EXPECT_NEAR(merged[1].offset_s, -2e-3, 1e-12);
  EXPECT_NEAR(merged[1].drift_ppm, -5, 1e-9);
  EXPECT_EQ(merged[2].node, "Y");
  EXPECT_EQ(merged[2].reference, "X");
  EXPECT_NEAR(merged[2].offset_s, 0.3e-3 + 2e-6 * -50, 1e-12);
  EXPECT_NEAR(merged[2].drift_ppm, 2, 1e-9);
  // Ranges that disagree (noise) meet at their weighted mean: B read 1.2 ms
  // at 100 s by a range of weight 3, 0.8 ms by one of weight 1, both
  // relative to A.
  const std::vector<NodeClockOffset> mean = MergeRangeClocks(
      {{{{"B", 1.2e-3, 0, "A"}}, at, 3}, {{{"B", 0.8e-3, 0, "A"}}, at, 1}}, at);
  ASSERT_EQ(mean.size(), 1u);
  EXPECT_NEAR(mean[0].offset_s, 1.1e-3, 1e-12);
}

TEST(NestingTest, ASmallSkewHiddenByLongCallsIsFound) {
  ExpectHiddenSkewFound(2000);
}

// Past kProbeCalls calls the probe bounds the clocks from the first ones
// and corrects the whole trace with them.
TEST(NestingTest, ASmallSkewHiddenByLongCallsIsFoundOnALongTrace) {
  const int fast = 100'000;  // 220,000 calls
  static_assert(2 * 100'000 > kProbeCalls);
  ExpectHiddenSkewFound(fast);
}

TEST(NestingTest, SkewWindowIsReadAtTheUpperEdgeOfTheMisses) {
  std::vector<trace::TimeNs> few = {1000, 2000, 3000, 4000};
  EXPECT_EQ(ChooseSkewWindow(few, 10), 0);  // fewer than 5 misses: lost calls
  std::vector<trace::TimeNs> rare(5, 1000);
  EXPECT_EQ(ChooseSkewWindow(rare, 10000), 0);  // under 0.5% of the children
  std::vector<trace::TimeNs> spread;
  for (int i = 1; i <= 100; ++i) spread.push_back(i * 10'000);  // 10 us .. 1 ms
  spread.push_back(9'000'000);  // one lost parent, far away
  // The 99th percentile of 101 misses is the 100th value, 1 ms; twice it.
  EXPECT_EQ(ChooseSkewWindow(spread, 1000), 2'000'000);
  std::vector<trace::TimeNs> huge(10, 50'000'000);
  EXPECT_EQ(ChooseSkewWindow(huge, 10), kAutoSkewCap);
}

// The first-come-first-served baseline: each call goes to the oldest call
// into its node that is still open, whatever the scoreboards say.
TEST(NestingTest, FcfsGivesEachCallTheOldestOpenCallIntoItsNode) {
  const std::string t =
      "0.000 CALL A B p1\n0.001 CALL A B p2\n0.002 CALL B C c1\n0.003 CALL B C "
      "c2\n"
      "0.004 RET C B c1\n0.005 RET C B c2\n0.010 RET B A p1\n0.012 CALL B C "
      "c3\n"
      "0.013 RET C B c3\n0.020 RET B A p2\n";
  static TempDir dir;
  const std::string path = dir.Write("fcfs.trace", t);
  Params p;
  p.assign = Assign::kFcfs;
  auto reader = trace::OpenTraceReader(path);
  ASSERT_TRUE(reader.ok());
  auto d = RunNestingDetailed(**reader, p);
  ASSERT_TRUE(d.ok());
  ASSERT_EQ(d->calls.size(), 5u);  // p1, p2, c1, c2, c3 in call order
  EXPECT_EQ(d->calls[0].parent, kNoParent);
  EXPECT_EQ(d->calls[1].parent, kNoParent);
  EXPECT_EQ(d->calls[2].parent, 0u);  // c1: p1 is the oldest open
  EXPECT_EQ(d->calls[3].parent, 0u);  // c2: p1 still
  EXPECT_EQ(d->calls[4].parent, 1u);  // c3: p1 has returned, p2 is open
  // A window also admits p1 after it returned; a call open when c was made
  // still comes first.
  const std::string path2 =
      dir.Write("fcfs2.trace",
                "0.000 CALL A B p1\n0.004 RET B A p1\n0.005 CALL A B p2\n0.006 "
                "CALL B C c\n"
                "0.007 RET C B c\n0.010 RET B A p2\n");
  p.skew_auto = false;
  p.skew_window = 3'000'000;
  auto reader3 = trace::OpenTraceReader(path2);
  ASSERT_TRUE(reader3.ok());
  auto w = RunNestingDetailed(**reader3, p);
  ASSERT_TRUE(w.ok());
  ASSERT_EQ(w->calls.size(), 3u);
  EXPECT_EQ(w->calls[2].parent, 1u);  // p2, not the earlier but returned p1
  // The model spreads c1 and c2 over p1 and p2 (the overlap penalty).
  auto reader2 = trace::OpenTraceReader(path);
  ASSERT_TRUE(reader2.ok());
  auto m = RunNestingDetailed(**reader2, Params{});
  ASSERT_TRUE(m.ok());
  EXPECT_NE(m->calls[2].parent, m->calls[3].parent);
}

// A call whose return was lost keeps its children: it stays a candidate
// parent until its edge's 99th-percentile latency has passed. As a root it
// is an incomplete instance, counted apart and left out of the patterns.
// Without that rule, its child is pinned on the concurrent call y.
TEST(NestingTest, CallWithALostReturnKeepsItsChildren) {
  std::string t;
  char line[160];
  for (int i = 0; i < 20; ++i) {
    std::snprintf(line, sizeof line,
                  "%d.000 CALL A B p%d\n%d.001 CALL B C c%d\n%d.003 RET C B c%d\n"
                  "%d.010 RET B A p%d\n",
                  i, i, i, i, i, i, i, i);
    t += line;
  }
  t += "30.0000 CALL A B x\n30.0005 CALL A B y\n30.0010 CALL B C cx\n"
       "30.0030 RET C B cx\n30.0105 RET B A y\n";
  auto r = NestText(t);
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->input.unmatched_calls, 1u);
  const Pattern* with_child = Find(*r, "A->B(C)");
  const Pattern* alone = Find(*r, "A->B");
  ASSERT_NE(with_child, nullptr);
  ASSERT_NE(alone, nullptr);
  EXPECT_EQ(with_child->count, 20u);  // the clean instances; x is unfinished
  EXPECT_EQ(alone->count, 1u);        // y, which called nothing
  EXPECT_EQ(r->input.unfinished_roots, 1u);
  EXPECT_NEAR(with_child->root.latency.mean_s(), 0.010, 1e-4);
  EXPECT_NEAR(with_child->total_latency_s(), 20 * 0.010, 1e-9);
  Params paper = KeepClients();
  paper.impute_lost_returns = false;
  auto p = NestText(t, paper);
  ASSERT_TRUE(p.ok());
  ASSERT_NE(Find(*p, "A->B(C)"), nullptr);
  EXPECT_EQ(Find(*p, "A->B(C)")->count, 21u);  // 20 and y, wrongly
  EXPECT_EQ(Find(*p, "A->B"), nullptr);
}

// A pattern is named by its shape's text, and two different trees can
// spell the same text: node names may hold "->" (the trace format forbids
// only "( ) , ;" and whitespace), and a node named `x[op]` spells what node
// `x` with op `op` does. Such trees are one pattern, on any threads (step
// 5 numbers shapes per thread, and joins them by their text).
TEST(NestingTest, TreesThatSpellOneShapeAreOnePattern) {
  const std::string text =
      "0 CALL c->x y 1\n1 RET y c->x 1\n"
      "2 CALL c x->y 2\n3 RET x->y c 2\n"
      "4 CALL c s 3\n5 CALL s q[get] 4\n6 RET q[get] s 4\n7 RET s c 3\n"
      "8 CALL c s 5\n9 CALL s q 6 - get\n10 RET q s 6\n11 RET s c 5\n";
  for (int threads : {1, 2}) {
    Params params = KeepClients();
    params.threads = threads;
    auto r = NestText(text, params);
    ASSERT_TRUE(r.ok()) << r.status().message();
    ASSERT_EQ(r->patterns.size(), 2u) << threads;
    const Pattern* arrow = Find(*r, "c->x->y");
    ASSERT_NE(arrow, nullptr);
    EXPECT_EQ(arrow->count, 2u);
    const Pattern* op = Find(*r, "c->s(q[get])");
    ASSERT_NE(op, nullptr);
    EXPECT_EQ(op->count, 2u);
  }
}

// The signature orders children by mean call delay (for display, per the
// result spec); the shape orders them canonically, so that one tree shape
// has one identity whatever the delays (what evaluation compares).
TEST(NestingTest, SignatureOrdersChildrenByMeanCallDelayThenName) {
  auto r = NestText(
      "0 CALL A B 1\n1 CALL B Z 2\n2 RET Z B 2\n3 CALL B Y 3\n4 RET Y B 3\n"
      "5 RET B A 1\n");
  ASSERT_TRUE(r.ok());
  ASSERT_EQ(r->patterns.size(), 1u);
  EXPECT_EQ(r->patterns[0].signature, "A->B(Z,Y)");
  EXPECT_EQ(r->patterns[0].shape, "A->B(Y,Z)");
}

TEST(NestingTest, SmoothingKeepsTheAnswerOnACleanTrace) {
  Params p = KeepClients();
  p.smooth_bins = 2;
  auto r = NestText(
      "0.000 CALL A B p1\n0.010 CALL A B p2\n0.030 CALL B C c1\n"
      "0.040 CALL B C c2\n0.050 RET C B c1\n0.060 RET C B c2\n"
      "0.080 RET B A p1\n0.090 RET B A p2\n",
      p);
  ASSERT_TRUE(r.ok());
  ASSERT_EQ(r->patterns.size(), 1u);
  EXPECT_EQ(r->patterns[0].count, 2u);
}

TEST(NestingTest, JsonFollowsTheResultSpec) {
  auto r = NestText(
      "1 CALL A B 1\n3 CALL B C 2\n5 RET C B 2\n11 RET B A 1\n");
  ASSERT_TRUE(r.ok());
  auto j = ResultToJson(*r);
  EXPECT_EQ(j["tool"], "bbprof nest");
  EXPECT_EQ(j["input"]["messages"], 4);
  EXPECT_EQ(j["input"]["call_pairs"], 2);
  EXPECT_DOUBLE_EQ(j["params"]["penalty_overlap"].get<double>(), 2.0);
  EXPECT_DOUBLE_EQ(j["params"]["bin_base"].get<double>(), 1.05);
  ASSERT_EQ(j["patterns"].size(), 1u);
  const auto& p = j["patterns"][0];
  EXPECT_EQ(p["rank"], 1);
  EXPECT_EQ(p["signature"], "A->B(C)");
  EXPECT_EQ(p["count"], 1);
  EXPECT_DOUBLE_EQ(p["total_latency_s"].get<double>(), 10.0);
  EXPECT_EQ(p["root"]["node"], "B");
  EXPECT_EQ(p["root"]["caller"], "A");
  for (const char* k : {"mean", "p50", "p90", "p99", "min", "max"}) {
    EXPECT_TRUE(p["root"]["latency_s"].contains(k)) << k;
    EXPECT_TRUE(p["root"]["call_delay_s"].contains(k)) << k;
  }
  EXPECT_DOUBLE_EQ(p["root"]["children"][0]["call_delay_s"]["mean"].get<double>(), 2.0);
}

// The report's fields (docs/formats.md): histograms per node, the median
// and slowest request, and the timeline. Three instances of A->B(C) of 10,
// 20 and 40 s at 0, 100 and 1000 s; C takes 4 s each time.
TEST(NestingTest, JsonHasHistogramsExamplesAndTimeline) {
  auto r = NestText(
      "0 CALL A B 1\n1 CALL B C 2\n5 RET C B 2\n10 RET B A 1\n"
      "100 CALL A B 3\n102 CALL B C 4\n106 RET C B 4\n120 RET B A 3\n"
      "1000 CALL A B 5\n1010 CALL B C 6\n1014 RET C B 6\n1040 RET B A 5\n");
  ASSERT_TRUE(r.ok()) << r.status().message();
  auto j = ResultToJson(*r);
  ASSERT_EQ(j["patterns"].size(), 1u);
  const auto& p = j["patterns"][0];
  const auto& root = p["root"];
  auto sum = [](const nlohmann::ordered_json& a) {
    int64_t n = 0;
    for (const auto& v : a) n += v.get<int64_t>();
    return n;
  };
  for (const char* h : {"latency_hist", "own_time_hist"}) {
    const auto& hist = root[h];
    ASSERT_EQ(hist["edges_s"].size(), hist["counts"].size() + 1) << h;
    EXPECT_EQ(sum(hist["counts"]), 3) << h;
    for (size_t i = 1; i < hist["edges_s"].size(); ++i)
      EXPECT_LE(hist["edges_s"][i - 1], hist["edges_s"][i]) << h;
  }
  EXPECT_DOUBLE_EQ(root["latency_hist"]["edges_s"].front().get<double>(), 10.0);
  EXPECT_DOUBLE_EQ(root["latency_hist"]["edges_s"].back().get<double>(), 40.0);
  // B's own time per instance: 10 - 4, 20 - 4, 40 - 4.
  EXPECT_DOUBLE_EQ(root["own_time_hist"]["edges_s"].front().get<double>(), 6.0);
  EXPECT_DOUBLE_EQ(root["own_time_hist"]["edges_s"].back().get<double>(), 36.0);
  const auto& c = root["children"][0];
  EXPECT_EQ(sum(c["latency_hist"]["counts"]), 3);
  // Median: the 20 s instance at 100 s; slowest: the 40 s one at 1000 s.
  const auto& med = p["examples"]["median"];
  EXPECT_DOUBLE_EQ(med["at_s"].get<double>(), 100.0);
  EXPECT_EQ(med["tree"]["node"], "B");
  EXPECT_EQ(med["tree"]["caller"], "A");
  EXPECT_DOUBLE_EQ(med["tree"]["start_s"].get<double>(), 0.0);
  EXPECT_DOUBLE_EQ(med["tree"]["latency_s"].get<double>(), 20.0);
  ASSERT_EQ(med["tree"]["children"].size(), 1u);
  EXPECT_EQ(med["tree"]["children"][0]["node"], "C");
  EXPECT_EQ(med["tree"]["children"][0]["caller"], "B");
  EXPECT_DOUBLE_EQ(med["tree"]["children"][0]["start_s"].get<double>(), 2.0);
  EXPECT_DOUBLE_EQ(med["tree"]["children"][0]["latency_s"].get<double>(), 4.0);
  EXPECT_FALSE(med["tree"].contains("op"));  // the trace names none
  const auto& slow = p["examples"]["slowest"];
  EXPECT_DOUBLE_EQ(slow["at_s"].get<double>(), 1000.0);
  EXPECT_DOUBLE_EQ(slow["tree"]["latency_s"].get<double>(), 40.0);
  EXPECT_DOUBLE_EQ(slow["tree"]["children"][0]["start_s"].get<double>(), 10.0);
  // 1000 s in at most 500 buckets: 5 s ones (2 s would need 502).
  const auto& t = p["timeline"];
  EXPECT_DOUBLE_EQ(t["bucket_s"].get<double>(), 5.0);
  EXPECT_DOUBLE_EQ(t["start_s"].get<double>(), 0.0);
  ASSERT_EQ(t["counts"].size(), 201u);
  ASSERT_EQ(t["latency_sum_s"].size(), 201u);
  EXPECT_EQ(t["counts"][0], 1);
  EXPECT_EQ(t["counts"][20], 1);
  EXPECT_EQ(t["counts"][200], 1);
  EXPECT_EQ(sum(t["counts"]), 3);
  EXPECT_DOUBLE_EQ(t["latency_sum_s"][20].get<double>(), 20.0);
}

TEST(NestingTest, HistogramRebinsIntoFewBinsAndKeepsNegatives) {
  LogHistogram h;
  EXPECT_TRUE(h.Rebin(40).counts.empty());
  EXPECT_TRUE(h.Rebin(40).edges_s.empty());
  // Latencies over three decades: log-spaced, at most 40 bins.
  for (int i = 1; i <= 1000; ++i) h.Add(i * 1'000'000LL);
  BinnedCounts b = h.Rebin(40);
  ASSERT_EQ(b.counts.size(), 40u);
  ASSERT_EQ(b.edges_s.size(), 41u);
  EXPECT_DOUBLE_EQ(b.edges_s.front(), 0.001);
  EXPECT_DOUBLE_EQ(b.edges_s.back(), 1.0);
  // Log spacing: the middle edge is near the geometric mean, 31.6 ms.
  EXPECT_NEAR(b.edges_s[20], 0.0316, 0.001);
  uint64_t n = 0;
  for (auto c : b.counts) n += c;
  EXPECT_EQ(n, 1000u);
  // Own time under skew: negative values, evenly spaced bins.
  LogHistogram s;
  for (int v : {-5000, -5000, 0, 5000}) s.Add(v);
  b = s.Rebin(40);
  ASSERT_EQ(b.counts.size(), 3u);  // three distinct values
  EXPECT_DOUBLE_EQ(b.edges_s.front(), -5e-6);
  EXPECT_DOUBLE_EQ(b.edges_s.back(), 5e-6);
  EXPECT_EQ(b.counts.front(), 2u);
  EXPECT_EQ(b.counts.back(), 1u);
  EXPECT_NEAR(s.Quantile(0.25), -5e-6, 5e-8);  // negatives keep their sign
  // One value: one bin that starts at it.
  LogHistogram one;
  one.Add(1000);
  b = one.Rebin(40);
  ASSERT_EQ(b.counts.size(), 1u);
  EXPECT_DOUBLE_EQ(b.edges_s[0], 1e-6);
  EXPECT_GT(b.edges_s[1], b.edges_s[0]);
}

TEST(NestingTest, RankingKeys) {
  auto r = NestText(
      "0 CALL A B 1\n1 RET B A 1\n2 CALL A B 2\n3 RET B A 2\n"
      "4 CALL A C 3\n14 RET C A 3\n");
  ASSERT_TRUE(r.ok());
  ASSERT_EQ(r->patterns.size(), 2u);
  // The default: total latency, 10 s (A->C once) beats 2 s (A->B twice).
  EXPECT_EQ(r->sort, SortKey::kTotalLatency);
  EXPECT_EQ(r->patterns[0].signature, "A->C");
  SortPatterns(r->patterns, SortKey::kCount);
  EXPECT_EQ(r->patterns[0].signature, "A->B");  // count 2 beats count 1
  EXPECT_EQ(SortKeyFromName("count"), SortKey::kCount);
  EXPECT_EQ(SortKeyFromName("total-latency"), SortKey::kTotalLatency);
  EXPECT_FALSE(SortKeyFromName("p99").has_value());
  SortPatterns(r->patterns, SortKey::kMeanLatency);
  EXPECT_EQ(r->patterns[0].signature, "A->C");
}

TEST(NestingTest, HistogramQuantilesAreWithinOnePercent) {
  LogHistogram h;
  for (int i = 1; i <= 1000; ++i) h.Add(i * 1'000'000LL);  // 1..1000 ms
  Summary s = h.Summarize();
  EXPECT_DOUBLE_EQ(s.min, 0.001);
  EXPECT_DOUBLE_EQ(s.max, 1.0);
  EXPECT_NEAR(s.mean, 0.5005, 1e-9);
  EXPECT_NEAR(s.p50, 0.500, 0.500 * 0.011);
  EXPECT_NEAR(s.p90, 0.900, 0.900 * 0.011);
  EXPECT_NEAR(s.p99, 0.990, 0.990 * 0.011);
}

// A value's bin is found from tables, not a log (histogram.cc, FastBins):
// it must be the log's bin to the nanosecond, at every bin's edge (the
// integers around 1.01^k, for every k below 2^46 ns), for values drawn
// over every decade, negative, and past the tables.
TEST(NestingTest, HistogramBinIsTheLogsBinToTheNanosecond) {
  const double step = std::log(1.01);
  auto by_log = [&](trace::TimeNs v) {
    return 1 + static_cast<int>(std::log(static_cast<double>(v)) / step);
  };
  EXPECT_EQ(LogHistogram::BinOf(0), 0);
  int edges = 0;
  for (int k = 0;; ++k) {
    const double edge = std::exp(k * step);
    if (edge >= std::ldexp(1.0, 47)) break;
    const auto at = static_cast<trace::TimeNs>(edge);
    for (trace::TimeNs v = std::max<trace::TimeNs>(1, at - 3); v <= at + 3;
         ++v) {
      ASSERT_EQ(LogHistogram::BinOf(v), by_log(v)) << v;
      ASSERT_EQ(LogHistogram::BinOf(-v), -by_log(v)) << -v;
    }
    ++edges;
  }
  EXPECT_GT(edges, 3000);
  std::mt19937_64 rng(11);
  for (int i = 0; i < 1000000; ++i) {
    const auto v = static_cast<trace::TimeNs>(
        std::exp(std::uniform_real_distribution<double>(0, 43)(rng)));
    ASSERT_EQ(LogHistogram::BinOf(v), by_log(v)) << v;
  }
  for (int i = 1; i <= 20000; ++i) {
    ASSERT_EQ(LogHistogram::BinOf(i), by_log(i)) << i;
  }
}

// The bins are a sorted array filled in any order (Add searches and
// inserts) and merged by the stream driver: the order values come in, and
// how they are split among histograms merged afterwards, change nothing.
TEST(NestingTest, HistogramBinsDoNotDependOnOrderOrMerging) {
  std::mt19937_64 rng(7);
  std::vector<trace::TimeNs> values;
  for (int i = 0; i < 20000; ++i) {
    // Latencies over six decades, some repeated, some negative (own time
    // under skew), some zero.
    auto v = static_cast<trace::TimeNs>(
        std::exp(std::uniform_real_distribution<double>(0, 14)(rng)));
    if (i % 7 == 0) v = -v;
    if (i % 11 == 0) v = 0;
    if (i % 3 == 0 && !values.empty()) v = values.back();
    values.push_back(v);
  }
  std::vector<trace::TimeNs> sorted = values;
  std::sort(sorted.begin(), sorted.end());
  LogHistogram in_order, shuffled, first_half, second_half;
  for (auto v : sorted) in_order.Add(v);
  for (auto v : values) shuffled.Add(v);
  for (size_t i = 0; i < values.size(); ++i)
    (i % 3 == 0 ? first_half : second_half).Add(values[i]);
  LogHistogram merged;
  merged.Merge(first_half);
  merged.Merge(second_half);
  LogHistogram::State a = in_order.state();
  ASSERT_EQ(a.count, values.size());
  uint64_t total = 0;
  for (const auto& [bin, n] : a.bins) total += n;
  EXPECT_EQ(total, values.size());
  EXPECT_GT(a.bins.size(), 1000u);
  for (const LogHistogram* h : {&shuffled, &merged}) {
    LogHistogram::State b = h->state();
    EXPECT_EQ(b.bins, a.bins);
    EXPECT_EQ(b.min, a.min);
    EXPECT_EQ(b.max, a.max);
    for (double q : {0.01, 0.25, 0.5, 0.9, 0.99})
      EXPECT_EQ(h->Quantile(q), in_order.Quantile(q)) << q;
  }
  // And back from its state, exactly.
  LogHistogram back = LogHistogram::FromState(shuffled.state());
  EXPECT_EQ(back.state().bins, a.bins);
  back.Add(sorted.front());
  EXPECT_EQ(back.count(), values.size() + 1);
}

// BinScale::Bin puts every delay in the bin whose bounds hold it, as the
// definition reads: bin k >= 1 holds magnitudes in [1 us * base^(k-1),
// 1 us * base^k), the last bin everything from its lower bound up, bin 0
// everything under 1 us. Checked at every bound (a few ns either side),
// between them, at random and at the extremes, for bases from 1.003 (more
// than one bound in a table cell) to 2, and for negative delays.
TEST(NestingTest, BinsHoldTheMagnitudesTheirBoundsSay) {
  std::mt19937_64 rng(11);
  for (const double base : {1.003, 1.01, 1.05, 1.3, 2.0}) {
    const BinScale scale(base);
    const int positive = (scale.size() - 1) / 2;
    // The bounds as the scale computes them.
    const double inv_log_base = 1.0 / std::log(base);
    std::vector<double> lower(static_cast<size_t>(positive) + 2);
    for (int k = 1; k <= positive + 1; ++k) {
      lower[k] = 1e3 * std::exp((k - 1) / inv_log_base);
    }
    auto expected = [&](int64_t mag) {
      if (mag < 1000) return 0;
      const double x = static_cast<double>(mag);
      int k = 1;
      while (k < positive && x >= lower[k + 1]) ++k;
      return k;
    };
    auto check = [&](int64_t mag) {
      ASSERT_EQ(scale.Bin(mag), positive + expected(mag))
          << "base " << base << " delay " << mag;
      ASSERT_EQ(scale.Bin(-mag), positive - expected(mag))
          << "base " << base << " delay " << -mag;
    };
    for (int64_t mag = 0; mag < 3000; ++mag) check(mag);
    for (int k = 1; k <= positive + 1; ++k) {
      const auto at = static_cast<int64_t>(lower[k]);
      for (int64_t d = -3; d <= 3; ++d) check(at + d);
      if (k >= 2) check(static_cast<int64_t>((lower[k - 1] + lower[k]) / 2));
    }
    for (int i = 0; i < 20000; ++i) {
      // Log-uniform over 1 ns to about 2^50 ns.
      const int bits = static_cast<int>(rng() % 50);
      check(static_cast<int64_t>(rng() >> (63 - bits)));
    }
    for (const int64_t mag :
         {int64_t{1} << 43, (int64_t{1} << 44) - 1, int64_t{1} << 44,
          int64_t{1} << 53, std::numeric_limits<int64_t>::max()}) {
      check(mag);
    }
  }
}

// KeyIndex numbers keys in the order they first come, finds every one
// after growing many times (zero and keys that share their low bits
// included), and finds none it was not given.
TEST(NestingTest, KeyIndexNumbersKeysInInsertionOrder) {
  KeyIndex index;
  EXPECT_EQ(index.Find(0), KeyIndex::kMissing);
  std::vector<uint64_t> keys;
  for (uint64_t i = 0; i < 5000; ++i) keys.push_back(i << 40);  // low bits 0
  for (uint64_t i = 1; i < 5000; ++i) keys.push_back(i * 0x9E3779B97F4A7C15ULL);
  for (size_t i = 0; i < keys.size(); ++i) {
    const auto [k, inserted] = index.Insert(keys[i]);
    ASSERT_TRUE(inserted) << i;
    ASSERT_EQ(k, i);
  }
  ASSERT_EQ(index.size(), keys.size());
  for (size_t i = 0; i < keys.size(); ++i) {
    ASSERT_EQ(index.Find(keys[i]), i);
    ASSERT_EQ(index.key(static_cast<uint32_t>(i)), keys[i]);
    const auto [k, inserted] = index.Insert(keys[i]);
    ASSERT_FALSE(inserted);
    ASSERT_EQ(k, i);
  }
  EXPECT_EQ(index.size(), keys.size());
  for (uint64_t i = 1; i < 1000; ++i) {
    EXPECT_EQ(index.Find((i << 40) + 1), KeyIndex::kMissing);
  }
}

// SortByReturn sorts only what breaks the order (what follows the sorted
// prefix and does not keep the running maximum) and merges: the same
// order, ties included, as a stable sort of the whole, whether the rest is
// shuffled or only a few returns are listed late.
TEST(NestingTest, SortByReturnIsAStableSortOfTheWhole) {
  std::mt19937_64 rng(5);
  for (int round = 0; round < 50; ++round) {
    CallTable table;
    const int most = round % 5 == 0 ? 300000 : 2000;
    const int n = 1 + static_cast<int>(rng() % most);
    for (int i = 0; i < n; ++i) {
      Pair p;
      p.ret = static_cast<trace::TimeNs>(rng() % (n / 4 + 2));  // many ties
      table.pairs.push_back(p);
    }
    for (uint32_t i = 0; i < static_cast<uint32_t>(n); ++i) {
      table.ret_order.push_back(i);
    }
    // A sorted prefix of some length, then the rest shuffled (as imputed
    // returns appended at the end, or out of order everywhere).
    const size_t prefix = static_cast<size_t>(rng() % (n + 1));
    std::vector<uint32_t>& order = table.ret_order;
    auto by_return = [&](uint32_t a, uint32_t b) {
      return table.pairs[a].ret < table.pairs[b].ret;
    };
    std::stable_sort(order.begin(), order.begin() + prefix, by_return);
    if (round % 2 == 0) {
      std::shuffle(order.begin() + prefix, order.end(), rng);
    } else {
      // Or sorted, but for a few returns each listed later than its place
      // (returns paired after later ones: stamped before their call by a
      // clock behind, or imputed).
      std::stable_sort(order.begin(), order.end(), by_return);
      for (int k = 0; k < n / 100 + 1; ++k) {
        const size_t from = static_cast<size_t>(rng() % n);
        const size_t to = std::min<size_t>(n - 1, from + rng() % 50);
        std::rotate(order.begin() + from, order.begin() + from + 1,
                    order.begin() + to + 1);
      }
    }
    std::vector<uint32_t> expected = order;
    std::stable_sort(expected.begin(), expected.end(), by_return);
    // Up to 300,000 calls: the prefix is sought in ranges on up to three
    // threads (one range per 65,536 calls), with the first out-of-order
    // call in any of them.
    const std::vector<uint32_t> given = order;
    for (int threads : {1, 2, 3}) {
      order = given;
      SortByReturn(&table, threads);
      ASSERT_EQ(order, expected)
          << "round " << round << ", " << threads << " threads";
    }
  }
}

// A random call table for the sweep: calls stamped in index order (or,
// with `corrected`, in a call order of their own as after clock
// correction), returns in a sorted ret_order with ties, returns lost (not
// in ret_order), a few returned calls left out of ret_order (the probe's
// first calls keep such), and calls stamped more than the window after
// their own return (negative durations once clocks are corrected).
CallTable SweepTable(std::mt19937_64& rng, int n, bool corrected) {
  CallTable table;
  const int nodes = 2 + static_cast<int>(rng() % 5);
  for (int i = 0; i < nodes; ++i) table.names.push_back("n" + std::to_string(i));
  trace::TimeNs t = 0;
  for (int i = 0; i < n; ++i) {
    Pair p;
    t += static_cast<trace::TimeNs>(rng() % 40);
    p.call = t;
    p.caller = static_cast<trace::NodeId>(rng() % nodes);
    p.callee = static_cast<trace::NodeId>(rng() % nodes);
    const uint64_t kind = rng() % 1000;
    if (kind < 50) {
      p.ret = -1;  // lost
    } else if (kind < 80) {
      p.ret = std::max<trace::TimeNs>(0, t - 200 - static_cast<trace::TimeNs>(rng() % 300));
    } else if (kind < 82) {
      p.ret = t + 100000;  // long: in flight across many parts
    } else {
      p.ret = t + static_cast<trace::TimeNs>(rng() % 400);
    }
    table.pairs.push_back(p);
  }
  if (corrected) {
    // Calls moved by up to 60 and sorted again, as ApplyClocks does.
    for (Pair& p : table.pairs) p.call += static_cast<trace::TimeNs>(rng() % 61) - 30;
    table.call_order.resize(table.pairs.size());
    std::iota(table.call_order.begin(), table.call_order.end(), 0u);
    std::stable_sort(table.call_order.begin(), table.call_order.end(),
                     [&](uint32_t a, uint32_t b) {
                       return table.pairs[a].call < table.pairs[b].call;
                     });
  }
  for (uint32_t i = 0; i < static_cast<uint32_t>(n); ++i) {
    if (table.pairs[i].ret >= 0 && rng() % 200 != 0) table.ret_order.push_back(i);
  }
  std::stable_sort(table.ret_order.begin(), table.ret_order.end(),
                   [&](uint32_t a, uint32_t b) {
                     return table.pairs[a].ret < table.pairs[b].ret;
                   });
  return table;
}

using SweepVisits = std::vector<std::pair<uint32_t, std::vector<uint32_t>>>;

SweepVisits OneSweep(const CallTable& table, trace::TimeNs w) {
  SweepVisits visits;
  SweepEnclosing(table, w, [&](uint32_t child, const std::vector<uint32_t>& calls) {
    visits.emplace_back(child, calls);
  });
  return visits;
}

SweepVisits SweepInParts(const CallTable& table, trace::TimeNs w, int parts,
                         size_t* parts_used) {
  SweepParts<SweepVisits> out = SweepEnclosingInParts<SweepVisits>(
      table, w, parts,
      [](SweepVisits& v, int, uint32_t child, const std::vector<uint32_t>& calls) {
        v.emplace_back(child, calls);
      });
  *parts_used = out.states.size();
  EXPECT_EQ(out.bounds.size(), out.states.size() + 1);
  SweepVisits all;
  for (size_t p = 0; p < out.states.size(); ++p) {
    EXPECT_EQ(out.states[p].size(), out.bounds[p + 1] - out.bounds[p]);
    all.insert(all.end(), out.states[p].begin(), out.states[p].end());
  }
  return all;
}

// Each part of the split sweep rebuilds the calls in flight at its first
// return (docs/nesting.md, "Passes and their state"): every child
// must see the calls, in the order, that one sweep gives it, whatever the
// window, the number of parts, lost returns, calls in flight over many
// parts, calls stamped after their own return, or a call order of its own.
TEST(NestingTest, SweepInPartsVisitsAsOneSweep) {
  std::mt19937_64 rng(17);
  for (int round = 0; round < 6; ++round) {
    const bool corrected = round % 2 == 1;
    const CallTable table = SweepTable(rng, 20000 + static_cast<int>(rng() % 9000), corrected);
    for (trace::TimeNs w : {trace::TimeNs{0}, trace::TimeNs{30}, trace::TimeNs{250}}) {
      const SweepVisits one = OneSweep(table, w);
      ASSERT_EQ(one.size(), table.ret_order.size());
      for (int parts : {2, 3 + round % 2}) {
        size_t used = 0;
        const SweepVisits split = SweepInParts(table, w, parts, &used);
        EXPECT_EQ(used, static_cast<size_t>(parts)) << "round " << round;
        ASSERT_EQ(split.size(), one.size());
        for (size_t i = 0; i < one.size(); ++i) {
          ASSERT_EQ(split[i], one[i]) << "round " << round << " w " << w
                                      << " parts " << parts << " visit " << i;
        }
      }
    }
  }
}

// RunPartsOn: every part runs exactly once, on no more threads than asked
// (nor than there are parts), however the counts compare.
TEST(NestingTest, RunPartsOnRunsEveryPartOnceOnAtMostThatManyThreads) {
  for (const auto& [threads, parts] : std::vector<std::pair<int, int>>{
           {1, 5}, {2, 8}, {3, 7}, {4, 2}, {2, 1}, {8, 64}, {2, 0}}) {
    std::vector<std::atomic<int>> runs(static_cast<size_t>(parts));
    std::mutex mu;
    std::set<std::thread::id> ids;
    RunPartsOn(threads, parts, [&](int p) {
      ++runs[static_cast<size_t>(p)];
      std::lock_guard lock(mu);
      ids.insert(std::this_thread::get_id());
    });
    for (int p = 0; p < parts; ++p) {
      EXPECT_EQ(runs[static_cast<size_t>(p)].load(), 1)
          << threads << " threads, " << parts << " parts: part " << p;
    }
    const int most = std::max(1, std::min(threads, parts));
    EXPECT_LE(ids.size(), static_cast<size_t>(most))
        << threads << " threads, " << parts << " parts";
  }
}

// WalkInChunksConsumeInOrder (the grandchild counts' learning): every item
// walked once, in chunks of at most the size asked, on no more threads than
// asked; every chunk consumed on the calling thread, in order, so the
// items come out as one walk gives them; and no more than two stretches'
// chunks walked and not yet consumed. Sizes that leave a short last chunk
// and a short last stretch, a single item a chunk, a chunk longer than
// the walk, and nothing to walk.
TEST(NestingTest, WalkInChunksConsumesEveryChunkInOrderOnTheCallingThread) {
  struct Case {
    int threads;
    size_t n, chunk, chunks;
  };
  for (const Case& k : std::vector<Case>{{1, 1000, 7, 3},
                                         {2, 10007, 16, 3},
                                         {3, 5000, 1, 4},
                                         {2, 100, 1000, 8},
                                         {4, 12345, 10, 1},
                                         {2, 0, 8, 2}}) {
    const std::string what = std::to_string(k.threads) + " threads, " +
                             std::to_string(k.n) + " items, chunks of " +
                             std::to_string(k.chunk);
    const std::thread::id caller = std::this_thread::get_id();
    std::mutex mu;
    std::set<std::thread::id> ids;
    std::atomic<size_t> walked{0}, consumed{0}, most_held{0};
    std::vector<size_t> seen;
    bool consumed_elsewhere = false;
    WalkInChunksConsumeInOrder<std::vector<size_t>>(
        k.threads, k.n, k.chunk, k.chunks,
        [&](size_t begin, size_t end, std::vector<size_t>& out) {
          {
            std::lock_guard lock(mu);
            ids.insert(std::this_thread::get_id());
          }
          EXPECT_LT(begin, end) << what;
          EXPECT_LE(end - begin, k.chunk) << what;
          out.clear();
          for (size_t i = begin; i < end; ++i) out.push_back(i);
          const size_t held = ++walked - consumed.load();
          size_t most = most_held.load();
          while (held > most && !most_held.compare_exchange_weak(most, held)) {
          }
        },
        [&](const std::vector<size_t>& out) {
          if (std::this_thread::get_id() != caller) consumed_elsewhere = true;
          ++consumed;
          seen.insert(seen.end(), out.begin(), out.end());
        });
    std::vector<size_t> all(k.n);
    std::iota(all.begin(), all.end(), size_t{0});
    EXPECT_EQ(seen, all) << what;
    EXPECT_EQ(walked.load(), consumed.load()) << what;
    EXPECT_FALSE(consumed_elsewhere) << what;
    EXPECT_LE(ids.size(), static_cast<size_t>(k.threads)) << what;
    EXPECT_LE(most_held.load(), 2 * k.chunks * static_cast<size_t>(k.threads))
        << what;
  }
}

// WalkSplittingRanges (the pattern table, the timeline counts): the states
// come back in the order of their ranges, which are contiguous, cover every
// item once and are walked in order within each; no range split off is
// shorter than asked; and a thread that runs out takes on part of a slow
// thread's range. In the slow cases thread 0, after its first claim, waits
// (10 s at most) until another thread walks an item of its range, which
// only a split gives it. Also one thread, more threads than items, and no
// items.
TEST(NestingTest, WalkSplittingRangesCoversEveryItemOnceInOrder) {
  struct Seen {
    std::vector<uint32_t> items;
    std::set<int> threads;
  };
  struct Case {
    int threads;
    uint32_t n, least, grain;
    bool slow_first;
  };
  for (const Case& k : std::vector<Case>{{2, 20000, 500, 64, true},
                                         {3, 30011, 100, 7, true},
                                         {1, 5000, 10, 16, false},
                                         {4, 3, 1, 1, false},
                                         {2, 0, 8, 8, false}}) {
    const std::string what = std::to_string(k.threads) + " threads, " +
                             std::to_string(k.n) + " items";
    const uint32_t first_end = k.n / static_cast<uint32_t>(k.threads);
    std::atomic<bool> taken_from_first{false};
    std::vector<Seen> states = WalkSplittingRanges<Seen>(
        k.threads, k.n, k.least,
        [&](Seen& seen, SplitRange& items, int thread) {
          seen.threads.insert(thread);
          for (uint32_t begin, end; items.Claim(k.grain, &begin, &end);) {
            EXPECT_LE(end - begin, k.grain) << what;
            for (uint32_t i = begin; i < end; ++i) seen.items.push_back(i);
            if (thread != 0 && begin < first_end) taken_from_first = true;
            if (!k.slow_first || thread != 0 ||
                seen.items.size() > end - begin) {
              continue;
            }
            const auto give_up =
                std::chrono::steady_clock::now() + std::chrono::seconds(10);
            while (!taken_from_first &&
                   std::chrono::steady_clock::now() < give_up) {
              std::this_thread::sleep_for(std::chrono::microseconds(100));
            }
          }
        });
    std::vector<uint32_t> all;
    size_t splits = 0;
    for (size_t r = 0; r < states.size(); ++r) {
      const Seen& seen = states[r];
      EXPECT_EQ(seen.threads.size(), 1u) << what << ": range " << r;
      for (size_t j = 1; j < seen.items.size(); ++j) {
        EXPECT_EQ(seen.items[j], seen.items[j - 1] + 1) << what;
      }
      // A range split off starts inside one of the first ranges, never
      // at the start of one.
      bool first = seen.items.empty();
      for (int t = 0; t < k.threads; ++t) {
        first |= !seen.items.empty() &&
                 seen.items[0] == uint64_t{k.n} * t / k.threads;
      }
      if (!first) {
        ++splits;
        EXPECT_GE(seen.items.size(), k.least) << what << ": range " << r;
      }
      all.insert(all.end(), seen.items.begin(), seen.items.end());
    }
    std::vector<uint32_t> expected(k.n);
    std::iota(expected.begin(), expected.end(), 0u);
    EXPECT_EQ(all, expected) << what;
    EXPECT_EQ(states.size(), static_cast<size_t>(k.threads) + splits) << what;
    if (k.slow_first) {
      EXPECT_GT(splits, 0u) << what;
    }
  }
}

// The scoreboards built in parts of the return order and merged (the
// threads driver's step 3) are one walk's to the bit, wherever the parts
// are cut, and whatever order a part walks its children in: the weights
// add up as integers. (As doubles, the sums of 1/n over a board's children
// differ in their last bits with the order.) A child's weights still add
// up to 1, to 2^-31 each.
TEST(NestingTest, ScoreboardsInPartsAreOneWalks) {
  std::mt19937_64 rng(41);
  const BinScale scale(1.05);
  auto one_walk = [&](const Params& params, const CallTable& table) {
    std::vector<Scoreboards::Part> parts;
    parts.push_back(
        Scoreboards::ScorePart(scale, table, 0, table.ret_order.size()));
    return Scoreboards(params, scale, std::move(parts));
  };
  for (int round = 0; round < 4; ++round) {
    CallTable table = SweepTable(rng, 20000, round % 2 == 1);
    // Delays of microseconds to milliseconds, over many bins.
    for (Pair& p : table.pairs) {
      p.call *= 1000;
      if (p.ret >= 0) p.ret *= 1000;
    }
    Params params;
    params.skew_auto = false;
    params.skew_window = 30'000;
    params.smooth_bins = round >= 2 ? 1.5 : 0.0;
    InputStats stats;
    FindCandidates(params, {}, &table, &stats);
    ASSERT_GT(stats.mean_parallelism, 2.0);
    const Scoreboards one = one_walk(params, table);
    const size_t n = table.ret_order.size();
    auto all_scores = [&](const Scoreboards& boards) {
      std::vector<double> scores;
      for (uint32_t child : table.ret_order) {
        const Pair& c = table.pairs[child];
        for (uint32_t k = c.cand_begin; k < c.cand_end; ++k) {
          scores.push_back(boards.Score(table, table.cands[k], child));
        }
      }
      return scores;
    };
    const std::vector<double> expected = all_scores(one);
    for (const std::vector<size_t>& cuts : std::vector<std::vector<size_t>>{
             {0, n / 2, n}, {0, 1, 7, n / 3, n / 3, n}, {0, n - 1, n}}) {
      std::vector<Scoreboards::Part> parts;
      for (size_t i = 0; i + 1 < cuts.size(); ++i) {
        parts.push_back(
            Scoreboards::ScorePart(scale, table, cuts[i], cuts[i + 1]));
      }
      const Scoreboards merged(params, scale, std::move(parts));
      EXPECT_EQ(merged.size(), one.size()) << round;
      EXPECT_EQ(all_scores(merged), expected) << round << " " << cuts.size();
    }
    // The children walked backwards: other sums' orders, the same boards.
    CallTable reversed = table;
    std::reverse(reversed.ret_order.begin(), reversed.ret_order.end());
    const Scoreboards backwards = one_walk(params, reversed);
    EXPECT_EQ(all_scores(backwards), expected) << round;
    if (params.smooth_bins > 0) continue;
    // Without smoothing, a board's bins hold the weights: each child's n
    // candidates add n weights of 1/n to the (raw) boards.
    Params raw = params;
    raw.raw_bin_scores = true;
    const Scoreboards raw_boards = one_walk(raw, table);
    for (uint32_t child : table.ret_order) {
      const Pair& c = table.pairs[child];
      const uint32_t n_cands = c.cand_end - c.cand_begin;
      if (n_cands != 1) continue;
      // A lone candidate: its bin holds at least this child's whole weight.
      EXPECT_GE(raw_boards.Score(table, table.cands[c.cand_begin], child), 1.0);
    }
  }
}

// Orders that are not sorted by time (never made by the drivers) cannot be
// split: the sweep runs on one thread, as SweepEnclosing.
TEST(NestingTest, SweepInPartsOfUnsortedOrdersIsOneSweep) {
  std::mt19937_64 rng(23);
  for (int round = 0; round < 4; ++round) {
    CallTable table = SweepTable(rng, 20000, round >= 2);
    // Two returns swapped in the second half, or two calls in the first.
    if (round % 2 == 0) {
      const size_t j = table.ret_order.size() * 3 / 4;
      while (table.pairs[table.ret_order[j]].ret ==
             table.pairs[table.ret_order[j + 1]].ret) {
        table.pairs[table.ret_order[j + 1]].ret += 1;
      }
      std::swap(table.ret_order[j], table.ret_order[j + 1]);
    } else if (table.call_order.empty()) {
      table.pairs[100].call = table.pairs[5000].call + 10;
    } else {
      std::swap(table.call_order[100], table.call_order[5000]);
    }
    const SweepVisits one = OneSweep(table, 30);
    size_t used = 0;
    const SweepVisits split = SweepInParts(table, 30, 3, &used);
    EXPECT_EQ(used, 1u) << "round " << round;
    EXPECT_EQ(split, one) << "round " << round;
  }
}

// A front F whose requests overlap (6,000 a second, each about 0.5 ms),
// each calling B once, 100-500 us after it arrived: timing alone leaves a
// call to B between two or three parents that fit about as well. Every
// route carries its resource's id (/a/k0 ... /a/k9), and F passes it on
// to B (/b/k7 under /a/k7), as services do. Learned from the assignment,
// a parent whose id its child repeats is likelier, by as much as repeats
// are commoner under assigned parents than among all candidates
// (LearnSharedIds). The same trace with the ids left out of the routes
// is the timing alone.
std::string SharedIdTrace(bool ids) {
  std::mt19937 rng(11);
  std::exponential_distribution<double> arrival(6000);
  std::uniform_int_distribution<int> key(0, 9), gap(100, 500), work(30, 70),
      tail(20, 40);
  TimedLines lines;
  char line[160];
  double t = 1.0;
  for (int i = 0; i < 3000; ++i) {
    t += arrival(rng);
    const int k = key(rng);
    const double call = t + gap(rng) * 1e-6;
    const double ret = call + work(rng) * 1e-6;
    const double done = ret + tail(rng) * 1e-6;
    const std::string a = ids ? "http:GET:/a/k" + std::to_string(k) : "http:GET:/a";
    const std::string b = ids ? "http:GET:/b/k" + std::to_string(k) : "http:GET:/b";
    auto add = [&](double at, const char* what, const char* from, const char* to,
                   char kind, const std::string& op) {
      std::snprintf(line, sizeof line, "%s %s %s %c%d r%d %s", what, from, to,
                    kind, i, i, op.c_str());
      lines.Add(at, line);
    };
    add(t, "CALL", "client", "F", 'f', a);
    add(call, "CALL", "F", "B", 'b', b);
    add(ret, "RET", "B", "F", 'b', b);
    add(done, "RET", "F", "client", 'f', a);
  }
  return lines.Text();
}

TEST(NestingTest, ChildrenThatRepeatTheirParentsIdFollowIt) {
  TempDir dir;
  auto with_ids =
      Evaluate(dir.Write("ids.trace", SharedIdTrace(true)), Params{}, {});
  auto timing = Evaluate(dir.Write("plain.trace", SharedIdTrace(false)),
                         Params{}, {});
  ASSERT_TRUE(with_ids.ok()) << with_ids.status().message();
  ASSERT_TRUE(timing.ok()) << timing.status().message();
  EXPECT_EQ(with_ids->requests, 3000u);
  // Measured: 98.3% with the ids (97.1% if the chance of a match were
  // read over every candidate, the true parent among them), 92.1% on
  // timing alone.
  EXPECT_GE(with_ids->request_accuracy, 0.975);
  EXPECT_LT(timing->request_accuracy, 0.94);
}

TEST(NestingTest, EvaluationOfTheTruthAgainstItselfIsPerfectOnASimpleTrace) {
  TempDir dir;
  std::string path = dir.Write(
      "e.trace",
      "1 CALL A B 1 7\n3 CALL B C 2 7\n5 RET C B 2 7\n11 RET B A 1 7\n"
      "12 CALL A B 3 8\n13 RET B A 3 8\n");
  auto ev = Evaluate(path, Params{}, EvalOptions{});
  ASSERT_TRUE(ev.ok()) << ev.status().message();
  EXPECT_EQ(ev->true_instances, 2u);
  EXPECT_EQ(ev->correct_instances, 2u);
  EXPECT_EQ(ev->instance_fn_rate, 0.0);
  EXPECT_EQ(ev->pattern_false_positives, 0u);
  EXPECT_EQ(ev->message_error_rate, 0.0);
}

TEST(NestingTest, EvaluationCountsAMisassignedInstance) {
  // Two A->B calls start together, with path ids 1 and 2; the B->C call
  // truly belongs to the second, but both parents give the same delay, so
  // the algorithm ties and takes the earliest: both instances are wrong.
  TempDir dir;
  std::string path = dir.Write(
      "m.trace",
      "0.0 CALL A B p1 1\n0.0 CALL A B p2 2\n0.2 CALL B C c 2\n0.3 RET C B c 2\n"
      "0.4 RET B A p1 1\n0.5 RET B A p2 2\n");
  Params raw = KeepClients();
  raw.raw_bin_scores = true;  // the paper's per-bin scores tie here
  auto ev = Evaluate(path, raw, EvalOptions{});
  ASSERT_TRUE(ev.ok());
  EXPECT_EQ(ev->true_instances, 2u);
  EXPECT_EQ(ev->correct_instances, 0u);
  EXPECT_DOUBLE_EQ(ev->instance_fn_rate, 1.0);
  EXPECT_EQ(ev->true_patterns, 2u);  // A->B and A->B(C)
  EXPECT_EQ(ev->pattern_false_negatives, 0u);
}

// Density scoring (the default): with equal per-bin weight, the shorter
// delay lies in a narrower bin, so its density is higher and the later,
// closer parent wins; here that is the truth.
TEST(NestingTest, DensityScoringPrefersTheDenserDelay) {
  TempDir dir;
  std::string path = dir.Write(
      "d.trace",
      "0.0 CALL A B p1 1\n0.1 CALL A B p2 2\n0.2 CALL B C c 2\n0.3 RET C B c 2\n"
      "0.4 RET B A p1 1\n0.5 RET B A p2 2\n");
  auto ev = Evaluate(path, Params{}, EvalOptions{});
  ASSERT_TRUE(ev.ok());
  EXPECT_EQ(ev->correct_instances, 2u);
  EXPECT_DOUBLE_EQ(ev->instance_fn_rate, 0.0);
}

TEST(NestingTest, EvaluationNeedsPathids) {
  TempDir dir;
  std::string path = dir.Write("n.trace", "1 CALL A B 1\n2 RET B A 1\n");
  auto ev = Evaluate(path, Params{}, EvalOptions{});
  ASSERT_FALSE(ev.ok());
  EXPECT_EQ(ev.status().message(),
            path +
                ": no CALL has a pathid; evaluation needs a trace with "
                "ground truth (from maketrace, or capture --truth-header)");
}

}  // namespace
}  // namespace bbprof::nesting

namespace bbprof::nesting {
namespace {

TEST(NestingTest, EvaluationRanksBothSidesByCount) {
  // A->C is seen first but only once; A->B three times. Perfect inference
  // must give no top-1 false negative, which needs both lists ranked.
  TempDir dir;
  std::string path = dir.Write(
      "r.trace",
      "0 CALL A C 9 1\n1 RET C A 9 1\n2 CALL A B 1 2\n3 RET B A 1 2\n"
      "4 CALL A B 2 3\n5 RET B A 2 3\n6 CALL A B 3 4\n7 RET B A 3 4\n");
  auto ev = Evaluate(path, Params{}, EvalOptions{});
  ASSERT_TRUE(ev.ok());
  ASSERT_EQ(ev->top_n.size(), 2u);
  EXPECT_EQ(ev->top_n[0].false_negatives, 0);
  EXPECT_EQ(ev->top_n[1].false_negatives, 0);
}

// Operations (trace field 7): one node serving two operations with
// different children gives two patterns, each node named with its op;
// grouped by node only, the two merge and the node's op is unknown.
const char kTwoOps[] =
    "1 CALL c nginx 1 - http:GET:/item/{n}\n"
    "2 CALL nginx app 1 - http:GET:/item/{n}\n"
    "3 CALL app db 1 - pg:SELECT:items\n"
    "4 RET db app 1 - pg:SELECT:items\n"
    "5 RET app nginx 1 - http:GET:/item/{n}\n"
    "6 RET nginx c 1 - http:GET:/item/{n}\n"
    "10 CALL c nginx 2 - http:GET:/slow/{n}\n"
    "11 CALL nginx app 2 - http:GET:/slow/{n}\n"
    "50 RET app nginx 2\n"
    "51 RET nginx c 2\n";

TEST(NestingTest, PatternsSplitByOperation) {
  auto r = NestText(kTwoOps);
  ASSERT_TRUE(r.ok()) << r.status().message();
  ASSERT_EQ(r->patterns.size(), 2u);
  const Pattern* item =
      Find(*r,
           "c->nginx[http:GET:/item/{n}](app[http:GET:/item/{n}]"
           "(db[pg:SELECT:items]))");
  const Pattern* slow =
      Find(*r, "c->nginx[http:GET:/slow/{n}](app[http:GET:/slow/{n}])");
  ASSERT_NE(item, nullptr);
  ASSERT_NE(slow, nullptr);
  EXPECT_EQ(item->root.op, "http:GET:/item/{n}");
  EXPECT_EQ(item->root.children[0].children[0].op, "pg:SELECT:items");
  // The RET without an op kept its CALL's.
  EXPECT_EQ(slow->root.children[0].op, "http:GET:/slow/{n}");
  EXPECT_DOUBLE_EQ(slow->root.children[0].latency.mean_s(), 39.0);
  EXPECT_NE(item->shape, slow->shape);
  auto j = ResultToJson(*r);
  EXPECT_EQ(j["patterns"][0]["root"]["op"], item == &r->patterns[0]
                                                ? "http:GET:/item/{n}"
                                                : "http:GET:/slow/{n}");
  EXPECT_EQ(j["params"]["group_by"], "op");
}

TEST(NestingTest, GroupByNodeMergesOperations) {
  Params params = KeepClients();
  params.group_by_op = false;
  auto r = NestText(
      "1 CALL c nginx 1 - http:GET:/a\n2 RET nginx c 1 - http:GET:/a\n"
      "5 CALL c nginx 2 - http:GET:/b\n6 RET nginx c 2 - http:GET:/b\n"
      "8 CALL c db 3 - pg:SELECT:t\n9 RET db c 3 - pg:SELECT:t\n",
      params);
  ASSERT_TRUE(r.ok()) << r.status().message();
  ASSERT_EQ(r->patterns.size(), 2u);
  EXPECT_EQ(r->patterns[0].signature, "c->nginx");
  EXPECT_EQ(r->patterns[0].count, 2u);
  EXPECT_EQ(r->patterns[0].root.op, "");  // two ops: none to name
  EXPECT_EQ(r->patterns[1].signature, "c->db");
  EXPECT_EQ(r->patterns[1].root.op, "pg:SELECT:t");  // one op: named
  EXPECT_TRUE(ResultToJson(*r)["patterns"][0]["root"]["op"].is_null());
}

TEST(NestingTest, BracketsInAnOpAreEncodedInTheSignature) {
  auto r = NestText("1 CALL c s 1 - x:[a]\n2 RET s c 1\n");
  ASSERT_TRUE(r.ok()) << r.status().message();
  ASSERT_EQ(r->patterns.size(), 1u);
  EXPECT_EQ(r->patterns[0].signature, "c->s[x:%5Ba%5D]");
  EXPECT_EQ(r->patterns[0].root.op, "x:[a]");
}

// External clients (callers never called) fold into one node by default,
// so two client addresses give one pattern counting both requests; a node
// that is called is never folded, even when it also calls.
TEST(NestingTest, ExternalClientsFoldIntoOneNode) {
  const char trace[] =
      "1 CALL 10.0.0.1 WS 1\n2 CALL WS DB 1\n3 RET DB WS 1\n4 RET WS 10.0.0.1 "
      "1\n"
      "10 CALL 10.0.1.2 WS 1\n11 CALL WS DB 2\n12 RET DB WS 2\n13 RET WS "
      "10.0.1.2 1\n";
  auto folded = NestText(trace, Params{});
  ASSERT_TRUE(folded.ok()) << folded.status().message();
  ASSERT_EQ(folded->patterns.size(), 1u);
  EXPECT_EQ(folded->patterns[0].signature, "clients->WS(DB)");
  EXPECT_EQ(folded->patterns[0].count, 2u);
  EXPECT_EQ(ResultToJson(*folded)["params"]["clients"], "fold");

  auto kept = NestText(trace);
  ASSERT_TRUE(kept.ok());
  EXPECT_EQ(kept->patterns.size(), 2u);

  Params grouped;
  grouped.clients.mode = ClientFolding::Mode::kGroup;
  grouped.clients.group = [](std::string_view name) {
    return name.starts_with("10.0.0.") ? std::string("lan0") : std::string();
  };
  auto g = NestText(trace, grouped);
  ASSERT_TRUE(g.ok());
  ASSERT_EQ(g->patterns.size(), 2u);
  EXPECT_TRUE(Find(*g, "lan0->WS(DB)") != nullptr);
  EXPECT_TRUE(Find(*g, "10.0.1.2->WS(DB)") != nullptr);  // empty group: kept
}

// FoldExternalClients walks the pairs in ranges on the threads (one per
// 65,536 pairs at most): the same names and callers on any count. ws is
// called only in the first pairs and `late` calls only in the last, so a
// range's flags left out of the OR would fold ws or keep `late`.
TEST(NestingTest, FoldExternalClientsIsTheSameOnAnyThreads) {
  std::mt19937_64 rng(11);
  CallTable base;
  base.names = {"c0", "ws", "db", "late", "c4", "c5"};
  const uint32_t n = 200000;
  for (uint32_t i = 0; i < n; ++i) {
    Pair p;
    p.callee = 2;  // db
    if (i < 10) {
      p.caller = 0, p.callee = 1;
    } else if (i >= n - 10) {
      p.caller = 3;
    } else {
      const uint32_t caller[] = {1, 4, 5};
      p.caller = caller[rng() % 3];
    }
    base.pairs.push_back(p);
  }
  Params params;
  std::vector<std::string> names1;
  std::vector<uint32_t> callers1;
  for (int threads : {1, 2, 3}) {
    CallTable table = base;
    params.threads = threads;
    FoldExternalClients(params, &table);
    std::vector<uint32_t> callers;
    for (const Pair& p : table.pairs) callers.push_back(p.caller);
    if (threads == 1) {
      // c0, c4, c5 and late call and are never called: one node, clients.
      ASSERT_EQ(table.names.size(), 7u);
      EXPECT_EQ(table.names[6], "clients");
      EXPECT_EQ(callers[0], 6u);
      EXPECT_EQ(callers[n - 1], 6u);
      EXPECT_EQ(std::count(callers.begin(), callers.end(), 1u),
                std::count_if(base.pairs.begin(), base.pairs.end(),
                              [](const Pair& p) { return p.caller == 1; }));
      EXPECT_EQ(std::count(callers.begin(), callers.end(), 6u) +
                    std::count(callers.begin(), callers.end(), 1u),
                static_cast<std::ptrdiff_t>(n));
      names1 = table.names;
      callers1 = callers;
      continue;
    }
    EXPECT_EQ(table.names, names1) << threads;
    EXPECT_EQ(callers, callers1) << threads;
  }
}

// PartitionByComponents cuts the calls with candidates into parts that
// share no candidate: each such call in exactly one part, each part in
// index order, a call and every candidate of it that has candidates of its
// own in the same part, two calls with a candidate in common too. The
// candidates are random calls near each one (before and after it, as a
// skew window allows), with long links now and then, so unions join
// components made apart and leave chains of roots deeper than one step.
TEST(NestingTest, PartitionByComponentsKeepsEveryComponentWhole) {
  std::mt19937_64 rng(5);
  for (const uint32_t n : {1u, 7u, 2000u, 50000u}) {
    CallTable table;
    table.pairs.resize(n);
    for (uint32_t i = 0; i < n; ++i) {
      Pair& c = table.pairs[i];
      c.cand_begin = static_cast<uint32_t>(table.cands.size());
      // A fifth are roots (no candidate); the others have one to four.
      const int k = rng() % 5 == 0 ? 0 : 1 + static_cast<int>(rng() % 4);
      for (int j = 0; j < k && n > 1; ++j) {
        const uint64_t reach = rng() % 50 == 0 ? n : 30;
        const int64_t at =
            static_cast<int64_t>(i) - static_cast<int64_t>(reach) +
            static_cast<int64_t>(rng() % (reach + reach / 3 + 1));
        const auto p = static_cast<uint32_t>(
            std::clamp<int64_t>(at, 0, static_cast<int64_t>(n) - 1));
        if (p != i) table.cands.push_back(p);
      }
      c.cand_end = static_cast<uint32_t>(table.cands.size());
    }
    for (int parts : {1, 2, 3, 8}) {
      SCOPED_TRACE(std::to_string(n) + " calls, " + std::to_string(parts) +
                   " parts");
      const auto out = PartitionByComponents(table, parts);
      ASSERT_EQ(out.size(), static_cast<size_t>(parts));
      std::vector<int> part_of(n, -1);
      for (int p = 0; p < parts; ++p) {
        EXPECT_TRUE(std::is_sorted(out[p].begin(), out[p].end()));
        for (uint32_t i : out[p]) {
          ASSERT_LT(i, n);
          EXPECT_EQ(part_of[i], -1) << i << " listed twice";
          part_of[i] = p;
        }
      }
      std::vector<int> part_of_cand(n, -1);  // the part of a call's children
      for (uint32_t i = 0; i < n; ++i) {
        const Pair& c = table.pairs[i];
        EXPECT_EQ(part_of[i] != -1, c.cand_end != c.cand_begin) << i;
        for (uint32_t k = c.cand_begin; k < c.cand_end; ++k) {
          const uint32_t p = table.cands[k];
          if (part_of[p] != -1) {
            EXPECT_EQ(part_of[p], part_of[i]) << i;
          }
          if (part_of_cand[p] == -1) part_of_cand[p] = part_of[i];
          EXPECT_EQ(part_of_cand[p], part_of[i]) << "candidate " << p;
        }
      }
    }
  }
}

TEST(NestingTest, FoldClientsNamesEachGroupOnceAsANewNode) {
  std::vector<std::string> names = {"a", "clients", "b", "c"};
  // a calls clients (a real node that is called), b and c are clients.
  const std::vector<bool> calls = {true, true, true, true};
  const std::vector<bool> called = {false, true, false, false};
  ClientFolding how;
  auto to = FoldClients(calls, called, how, &names);
  ASSERT_EQ(names.size(), 5u);
  EXPECT_EQ(names[4], "clients");
  EXPECT_EQ(to, (std::vector<uint32_t>{4, 1, 4, 4}));
  how.mode = ClientFolding::Mode::kKeep;
  std::vector<std::string> names2 = {"a", "b"};
  EXPECT_EQ(FoldClients({true, true}, {false, true}, how, &names2),
            (std::vector<uint32_t>{0, 1}));
}

}  // namespace
}  // namespace bbprof::nesting
