// results/diff/diff.h and results/marks.h: the statistics of `bbprof diff`, the
// matching of patterns and nodes, and the marks on likely artefacts.
#include "results/diff/diff.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

#include "results/marks.h"
#include "results/writer.h"

namespace bbprof::nesting {
namespace {

using json = nlohmann::json;

std::vector<Cell> Points(const std::vector<double>& values) {
  std::vector<Cell> out;
  for (double v : values) out.push_back({v, v, 1, true});
  return out;
}

// Two samples with no ties: U and the continuity-corrected normal
// approximation, worked by hand.
TEST(DiffTest, MannWhitneyMatchesTheTextbook) {
  std::vector<double> a, b;
  for (int i = 0; i < 10; ++i)
    a.push_back(i < 8 ? i : 100 + i);  // 0..7, 108, 109
  for (int i = 0; i < 10; ++i)
    b.push_back(i < 2 ? 8 + i : 20 + i);  // 8, 9, 22..29
  double slower = 0;
  double p = MannWhitneyP(Points(a), Points(b), &slower);
  // U(after) = pairs with b > a: each of 8 small a below all 10 b, the two
  // large a below none: 80 of 100.
  EXPECT_NEAR(slower, 0.8, 1e-12);
  const double z = (80 - 50 - 0.5) / std::sqrt(10.0 * 10 * 21 / 12);
  EXPECT_NEAR(p, std::erfc(z / std::sqrt(2.0)), 1e-12);
}

TEST(DiffTest, MannWhitneyIdenticalSamplesAreNoChange) {
  std::vector<Cell> a = {{1, 2, 50, false}, {2, 3, 30, false}};
  double slower = 0;
  EXPECT_DOUBLE_EQ(MannWhitneyP(a, a, &slower), 1.0);
  EXPECT_DOUBLE_EQ(slower, 0.5);
  // One side empty: nothing to test.
  EXPECT_DOUBLE_EQ(MannWhitneyP(a, {}, &slower), 1.0);
}

// Values are spread evenly within their bins: two overlapping bins of two
// grids are ordered by how much they overlap, disjoint or touching
// half-open bins fully.
TEST(DiffTest, MannWhitneySpreadsValuesWithinBins) {
  std::vector<Cell> a = {{0.010, 0.020, 100, true}};
  std::vector<Cell> b = {{0.015, 0.025, 100, true}};
  double slower = 0;
  EXPECT_LT(MannWhitneyP(a, b, &slower), 1e-10);
  EXPECT_NEAR(slower, 0.875, 1e-12);  // P(U[15,25] > U[10,20])
  std::vector<Cell> d = {{0.020, 0.030, 100, false}};
  std::vector<Cell> a_open = {{0.010, 0.020, 100, false}};
  EXPECT_LT(MannWhitneyP(a_open, d, &slower), 1e-20);
  EXPECT_DOUBLE_EQ(slower, 1.0);
  // Two grids over one distribution: no change.
  // (evenly spread over [10, 20] ms, 100 values each).
  std::vector<Cell> g1 = {{0.010, 0.014, 40, false}, {0.014, 0.020, 60, true}};
  std::vector<Cell> g2 = {{0.010, 0.016, 60, false}, {0.016, 0.020, 40, true}};
  EXPECT_GT(MannWhitneyP(g1, g2, &slower), 0.9);
  EXPECT_NEAR(slower, 0.5, 0.01);
}

// Under the null (both samples from one distribution, on one 1% grid) the
// raw p-value is uniform: about alpha of the tests fall below alpha.
TEST(DiffTest, MannWhitneyHoldsItsLevelUnderTheNull) {
  std::mt19937_64 rng(7);
  std::lognormal_distribution<double> d(std::log(0.02), 0.3);
  int below = 0;
  const int kRuns = 400;
  for (int r = 0; r < kRuns; ++r) {
    LogHistogram x, y;
    for (int i = 0; i < 300; ++i)
      x.Add(static_cast<trace::TimeNs>(d(rng) * 1e9));
    for (int i = 0; i < 200; ++i)
      y.Add(static_cast<trace::TimeNs>(d(rng) * 1e9));
    std::vector<Cell> cx, cy;
    x.ForEachBin([&](double lo, double hi, uint64_t n) {
      cx.push_back({lo, hi, n, false});
    });
    y.ForEachBin([&](double lo, double hi, uint64_t n) {
      cy.push_back({lo, hi, n, false});
    });
    below += MannWhitneyP(cx, cy, nullptr) < 0.05;
  }
  EXPECT_GT(below, kRuns * 0.02);
  EXPECT_LT(below, kRuns * 0.08);
}

TEST(DiffTest, FisherExactMatchesKnownTables) {
  // The lady tasting tea: [[3, 1], [1, 3]], two-sided p = 0.4857.
  EXPECT_NEAR(FisherExactP(3, 1, 1, 3), 0.485714, 1e-5);
  // [[1, 9], [11, 3]]: two-sided p = 0.002759.
  EXPECT_NEAR(FisherExactP(1, 9, 11, 3), 0.002759, 1e-5);
  EXPECT_DOUBLE_EQ(FisherExactP(5, 5, 5, 5), 1.0);
  // Large and balanced: no change; large and shifted: a change.
  EXPECT_GT(FisherExactP(5000, 95000, 5010, 94990), 0.5);
  EXPECT_LT(FisherExactP(5000, 95000, 6000, 94000), 1e-10);
}

TEST(DiffTest, HolmAdjustsStepDown) {
  std::vector<double> p = {0.01, 0.04, 0.03, 0.5};
  HolmAdjust(p);
  EXPECT_DOUBLE_EQ(p[0], 0.04);  // 4 x 0.01
  EXPECT_DOUBLE_EQ(p[2], 0.09);  // 3 x 0.03
  EXPECT_DOUBLE_EQ(p[1], 0.09);  // max(2 x 0.04, 0.09): monotone
  EXPECT_DOUBLE_EQ(p[3], 0.5);
}

json Summary(double mean) {
  return {{"mean", mean}, {"p50", mean}, {"p90", mean},
          {"p99", mean},  {"min", mean}, {"max", mean}};
}

json Node(const std::string& name, double latency, double delay, json children,
          double lo, uint64_t n) {
  return {{"node", name},
          {"op", nullptr},
          {"latency_s", Summary(latency)},
          {"call_delay_s", Summary(delay)},
          {"own_time_s", latency},
          {"latency_hist", {{"edges_s", {lo, lo * 1.1}}, {"counts", {n}}}},
          {"children", children}};
}

// A vector, not a json: `{one_pattern}` as a json is that pattern itself
// under clang (a one-element brace list copies), an array under gcc.
json Doc(const std::vector<json>& patterns) {
  return {
      {"tool", "bbprof nest"},
      {"input",
       {{"path", "x.trace"}, {"duration_s", 10.0}, {"mean_parallelism", 1.2}}},
      {"patterns", json(patterns)}};
}

// Patterns match by shape whatever their display order; nodes by position
// in the canonical order; appeared and vanished patterns are listed; the
// ranking is by impact on total time, and the paths point into each side's
// own display order.
TEST(DiffTest, MatchesPatternsByShapeAndRanksByImpact) {
  json ws_before = {
      {"signature", "c->WS(A,B)"},
      {"count", 100},
      {"total_latency_s", 1.0},
      {"root", Node("WS", 0.010, 0,
                    {Node("A", 0.002, 0.001, json::array(), 0.002, 100),
                     Node("B", 0.003, 0.004, json::array(), 0.003, 100)},
                    0.010, 100)}};
  ws_before["root"]["caller"] = "c";
  // After: B now comes first in display order and is 50 ms slower.
  json ws_after = {
      {"signature", "c->WS(B,A)"},
      {"count", 100},
      {"total_latency_s", 6.0},
      {"root", Node("WS", 0.060, 0,
                    {Node("B", 0.053, 0.0005, json::array(), 0.053, 100),
                     Node("A", 0.002, 0.001, json::array(), 0.002, 100)},
                    0.060, 100)}};
  ws_after["root"]["caller"] = "c";
  json old_only = {{"signature", "c->OLD"},
                   {"count", 100},
                   {"total_latency_s", 0.5},
                   {"root", Node("OLD", 0.005, 0, json::array(), 0.005, 100)}};
  old_only["root"]["caller"] = "c";
  auto before = DiffSideFromJson(Doc({ws_before, old_only}), "b.json");
  auto after = DiffSideFromJson(Doc({ws_after}), "a.json");
  ASSERT_TRUE(before.ok()) << before.status().message();
  ASSERT_TRUE(after.ok()) << after.status().message();
  DiffResult d = Diff(*before, *after, DiffOptions{});
  ASSERT_EQ(d.patterns.size(), 2u);
  EXPECT_NEAR(d.scale, 0.5, 1e-12);  // 100 requests after, 200 before
  const PatternDiff& ws = d.patterns[0];
  EXPECT_EQ(ws.change, PatternChange::kBoth);
  EXPECT_NEAR(ws.impact_s, 6.0 - 0.5 * 1.0, 1e-12);
  ASSERT_EQ(ws.nodes.size(), 3u);
  EXPECT_EQ(ws.nodes[0].label, "WS");
  EXPECT_TRUE(ws.nodes[0].latency.significant);
  EXPECT_NEAR(ws.nodes[0].after.mean - ws.nodes[0].before.mean, 0.050, 1e-12);
  EXPECT_EQ(ws.nodes[1].label, "WS > A");
  EXPECT_FALSE(ws.nodes[1].latency.significant);
  EXPECT_EQ(ws.nodes[2].label, "WS > B");
  EXPECT_EQ(ws.nodes[2].path_before, std::vector<size_t>{1});
  EXPECT_EQ(ws.nodes[2].path_after, std::vector<size_t>{0});
  EXPECT_TRUE(ws.nodes[2].latency.significant);
  EXPECT_EQ(d.patterns[1].change, PatternChange::kVanished);
  EXPECT_EQ(d.patterns[1].signature, "c->OLD");
  EXPECT_TRUE(d.patterns[1].count.significant);  // 100 of 200 -> 0 of 100

  json j = DiffToJson(d);
  EXPECT_EQ(j["patterns"][0]["nodes"][2]["path_after"].dump(), "[0]");
  EXPECT_EQ(j["patterns"][1]["change"], "vanished");
  EXPECT_TRUE(j["patterns"][1]["nodes"][0]["path_after"].is_null());
  std::string text = DiffToText(d);
  EXPECT_NE(text.find("#1  c->WS(B,A)  *"), std::string::npos) << text;
  EXPECT_NE(text.find("(vanished)"), std::string::npos) << text;
}

TEST(DiffTest, BadHistogramsAreNamedByPath) {
  json p = {{"signature", "c->WS"},
            {"count", 1},
            {"total_latency_s", 1.0},
            {"root", Node("WS", 1, 0, json::array(), 1, 1)}};
  p["root"]["caller"] = "c";
  p["root"]["latency_hist"]["edges_s"] = {1.0};
  auto s = DiffSideFromJson(Doc({p}), "b.json");
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.status().message().find(
                "b.json: patterns[0].root.latency_hist: 1 edges for 1 counts"),
            std::string::npos)
      << s.status().message();
  auto t = DiffSideFromJson(json{{"tool", "bbprof convolve"}}, "c.json");
  ASSERT_FALSE(t.ok());
  EXPECT_NE(t.status().message().find("not a 'bbprof nest' result"),
            std::string::npos);
}

PatternNode Leaf(const std::string& name) {
  PatternNode n;
  n.node = name;
  return n;
}

Pattern MakePattern(const std::string& sig, PatternNode root, uint64_t count) {
  Pattern p;
  p.signature = sig;
  p.caller = "c";
  p.root = std::move(root);
  p.count = count;
  return p;
}

// A variant with one child subtree more or less than a frequent pattern is
// marked when its count is within what misassignment at the expected rate
// gives; a variant as frequent as real traffic is not; at parallelism 1
// nothing can be misassigned.
TEST(MarksTest, RareVariantsOfFrequentPatterns) {
  PatternNode full = Leaf("WS");
  full.children = {Leaf("AUTH"), Leaf("AP")};
  full.children[1].children = {Leaf("DB")};
  PatternNode no_ap = Leaf("WS");  // AP(DB) missing
  no_ap.children = {Leaf("AUTH")};
  PatternNode extra = full;  // one AUTH more
  extra.children.push_back(Leaf("AUTH"));
  NestingResult r;
  r.input.mean_parallelism = 1.5;  // expected misassignment 8%
  r.patterns = {MakePattern("c->WS(AUTH,AP(DB))", full, 1000),
                MakePattern("c->WS(AUTH)", no_ap, 30),
                MakePattern("c->WS(AUTH,AP(DB),AUTH)", extra, 95)};
  MarkSuspects(r);
  EXPECT_TRUE(r.patterns[0].suspects.empty());
  ASSERT_EQ(r.patterns[1].suspects.size(), 1u);
  EXPECT_EQ(r.patterns[1].suspects[0].kind, "rare-variant");
  EXPECT_NE(r.patterns[1].suspects[0].reason.find("one child fewer (AP)"),
            std::string::npos)
      << r.patterns[1].suspects[0].reason;
  ASSERT_EQ(r.patterns[2].suspects.size(), 1u);
  EXPECT_NE(r.patterns[2].suspects[0].reason.find("one child more (AUTH)"),
            std::string::npos);
  EXPECT_TRUE(r.warnings.empty());

  // 300 of 1000 is real traffic (a login path), not misassignment.
  r.patterns[1].count = 300;
  MarkSuspects(r);
  EXPECT_TRUE(r.patterns[1].suspects.empty());
  r.patterns[1].count = 30;
  r.input.mean_parallelism = 1.0;
  MarkSuspects(r);
  EXPECT_TRUE(r.patterns[1].suspects.empty());
  EXPECT_TRUE(r.patterns[2].suspects.empty());
}

TEST(MarksTest, HighParallelismWarnsAndMarksEveryPattern) {
  NestingResult r;
  r.input.mean_parallelism = 30.4;
  r.patterns = {MakePattern("c->A", Leaf("A"), 10),
                MakePattern("c->B", Leaf("B"), 5)};
  MarkSuspects(r);
  ASSERT_EQ(r.warnings.size(), 1u);
  EXPECT_NE(r.warnings[0].find("mean parallelism 30.40"), std::string::npos)
      << r.warnings[0];
  for (const Pattern& p : r.patterns) {
    ASSERT_EQ(p.suspects.size(), 1u);
    EXPECT_EQ(p.suspects[0].kind, "high-parallelism");
  }
  r.input.mean_parallelism = kHighParallelism - 0.01;
  MarkSuspects(r);
  EXPECT_TRUE(r.warnings.empty());
}

TEST(MarksTest, PoissonUpperQuantile) {
  EXPECT_EQ(PoissonUpper99(0), 0u);
  EXPECT_EQ(PoissonUpper99(1), 4u);    // P(X <= 3) = 0.981, P(X <= 4) = 0.996
  EXPECT_EQ(PoissonUpper99(10), 18u);  // P(X <= 17) = 0.986, P(X <= 18) = 0.993
  EXPECT_NEAR(static_cast<double>(PoissonUpper99(1e6)), 1e6 + 2326, 2);
  // Past exp(-lambda)'s underflow (it once looped forever at 893).
  EXPECT_NEAR(static_cast<double>(PoissonUpper99(893)),
              893 + 2.3263 * std::sqrt(893.0), 2);
  EXPECT_NEAR(static_cast<double>(PoissonUpper99(150)),
              150 + 2.3263 * std::sqrt(150.0), 2);
}

// The culprit is the node adding the most absolute time, with its path.
TEST(MarksTest, CulpritInTheJson) {
  NestingResult r;
  PatternNode root = Leaf("WS");
  root.latency.Add(10'000'000);
  PatternNode db = Leaf("DB");
  db.latency.Add(8'000'000);
  db.call_delay.Add(1'000'000);
  root.children = {db};
  r.patterns = {MakePattern("c->WS(DB)", root, 4)};
  auto j = ResultToJson(r);
  const auto& c = j["patterns"][0]["culprit"];
  EXPECT_EQ(c["node"], "DB");
  EXPECT_EQ(c["path"].dump(), "[0]");
  EXPECT_NEAR(c["own_time_s"].get<double>(), 0.008, 1e-9);
  EXPECT_NEAR(c["added_s"].get<double>(), 0.032, 1e-9);
  EXPECT_EQ(j["params"]["sort"], "total-latency");
  EXPECT_FALSE(j["patterns"][0].contains("suspect"));
}

}  // namespace
}  // namespace bbprof::nesting
