// The HTML report builder (viz/report.h) and the charts it draws
// (viz/charts.h, viz/service_map.h), on the fixtures of render_test.
#include "viz/report.h"

#include <gtest/gtest.h>

#include <regex>

#include "results/model.h"
#include "tests/util/temp_dir.h"
#include "tests/viz/test_data.h"
#include "viz/charts.h"
#include "viz/service_map.h"

namespace bbprof::viz {
namespace {

size_t Count(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (size_t at = text.find(what); at != std::string::npos;
       at = text.find(what, at + 1))
    ++n;
  return n;
}

// nest.json with what nest writes for the report (docs/formats.md), and
// the diff's culprit and suspect marks on pattern 2.
nlohmann::json WithReportFields() {
  nlohmann::json doc = Load("nest.json");
  auto& p1 = doc["patterns"][0];
  p1["root"]["latency_hist"] = {{"edges_s", {0.09, 0.15, 0.31}},
                                {"counts", {3000, 2210}}};
  p1["root"]["own_time_hist"] = {{"edges_s", {0.0, 0.016, 0.04}},
                                 {"counts", {5000, 210}}};
  p1["examples"] = nlohmann::json::parse(R"({
    "median": {"at_s": 1000.5, "tree": {"node": "WS1", "caller": "client",
      "start_s": 0, "latency_s": 0.15, "children": [
        {"node": "AUTH", "caller": "WS1", "op": "GET /auth", "start_s": 0.002,
         "latency_s": 0.01, "children": []}]}},
    "slowest": {"at_s": 1200.0, "tree": {"node": "WS1", "caller": "client",
      "start_s": 0, "latency_s": 0.31, "children": []}}})");
  // 100 s in 1 s buckets: busy only in its first 10 s.
  std::vector<int64_t> counts(100, 0);
  std::vector<double> sums(100, 0.0);
  for (int i = 0; i < 10; ++i) {
    counts[i] = 500;
    sums[i] = 500 * 0.156;
  }
  counts[99] = 10;
  sums[99] = 1.56;
  p1["timeline"] = {{"bucket_s", 1.0},
                    {"start_s", 1000.0},
                    {"counts", counts},
                    {"latency_sum_s", sums}};
  auto& p2 = doc["patterns"][1];
  p2["culprit"] = {
      {"path", {1}}, {"node", "DB"}, {"own_time_s", 0.03}, {"added_s", 3.6}};
  p2["suspect"] = {
      {{"kind", "rare-variant"}, {"reason", "one child more than pattern #1"}}};
  p2["timeline"] = {{"bucket_s", 1.0},
                    {"start_s", 1000.0},
                    {"counts", std::vector<int64_t>(100, 1)},
                    {"latency_sum_s", std::vector<double>(100, 0.08)}};
  return doc;
}

std::string BuildOk(const nlohmann::json& doc, ReportOptions options = {}) {
  auto page = BuildReport(doc, options);
  EXPECT_TRUE(page.ok()) << page.status().message();
  return page.ok() ? *page : "";
}

TEST(ReportTest, OnePageWithEverySection) {
  std::string page = BuildOk(WithReportFields());
  EXPECT_EQ(page.rfind("<!DOCTYPE html>", 0), 0u);
  for (const char* id :
       {"id=\"input\"", "id=\"legend\"", "id=\"pattern-table\"",
        "id=\"service_map\"", "id=\"phases-chart\"", "id=\"details\"",
        "id=\"filter\""}) {
    EXPECT_NE(page.find(id), std::string::npos) << id;
  }
  // Self-contained: no file or address outside the page.
  EXPECT_EQ(page.find("http://www.w3.org/1999/xhtml"), std::string::npos);
  std::regex external(R"re((src|href)="(?!#)[^"]*")re");
  EXPECT_FALSE(std::regex_search(page, external));
  EXPECT_EQ(page.find("<!--"), std::string::npos);  // SVG comments dropped
  EXPECT_EQ(Count(page, "<script>"), 1u);
  // Each pattern: a table row, a details section holding its graph.
  EXPECT_EQ(Count(page, "<tr data-pattern="), 2u);
  EXPECT_EQ(Count(page, "<details class=\"pattern\""), 2u);
  EXPECT_NE(page.find("<g id=\"p001\" class=\"graph\""), std::string::npos);
  EXPECT_NE(page.find("<g id=\"p002\" class=\"graph\""), std::string::npos);
}

TEST(ReportTest, TableHasSortableNumbersAndCulprits) {
  std::string page = BuildOk(WithReportFields());
  // Count, total, mean, p50, p90, p99 sort by their value.
  EXPECT_NE(page.find("<td class=\"n\" data-v=\"5210\">5210</td>"),
            std::string::npos);
  EXPECT_NE(page.find("data-v=\"812.4\">812 s</td>"), std::string::npos);
  EXPECT_NE(page.find("data-v=\"0.24\">240 ms</td>"), std::string::npos);
  // Pattern 1: no culprit in the result, so the rule: DB, 95 ms x 5210.
  EXPECT_NE(page.find("<td>DB</td><td class=\"n\" data-v=\"494.95\">495 s"),
            std::string::npos);
  // Pattern 2: the result's culprit (its second child) and time added.
  EXPECT_NE(page.find("<td>DB</td><td class=\"n\" data-v=\"3.6\">3.60 s"),
            std::string::npos);
  // Suspect marks in the table and in the pattern's section.
  EXPECT_NE(page.find("rare-variant</span>"), std::string::npos);
  EXPECT_NE(page.find("suspect (rare-variant): one child more than pattern #1"),
            std::string::npos);
}

TEST(ReportTest, ColoursAndLabelsAreRendersOnes) {
  std::string page = BuildOk(WithReportFields());
  // The same fill rule and scale as `render` (render_test's
  // FillIsTimeAddedOnOneScale): DB on pattern 1 is the darkest.
  EXPECT_NE(page.find("fill=\"#800026\""), std::string::npos);
  EXPECT_NE(page.find("edge: mean call delay"), std::string::npos);
  EXPECT_NE(page.find("dark red 495 s"), std::string::npos);
}

TEST(ReportTest, HistogramsWaterfallsAndPhases) {
  std::string page = BuildOk(WithReportFields());
  EXPECT_NE(page.find("latency: p50 150 ms, p90 190 ms, p99 240 ms"),
            std::string::npos);
  EXPECT_NE(page.find("own time of WS1"), std::string::npos);
  EXPECT_NE(page.find("median request (150 ms)"), std::string::npos);
  EXPECT_NE(page.find("slowest request (310 ms)"), std::string::npos);
  EXPECT_NE(page.find("WS1 -&gt; AUTH GET /auth: starts at +2.00 ms"),
            std::string::npos);
  // Default window: 100 one-second buckets into at most 40 windows: 3 s.
  EXPECT_NE(page.find("windows of 3.00 s"), std::string::npos);
  // Pattern 1 is bursty, pattern 2 steady.
  EXPECT_EQ(Count(page, ">bursty</span>"), 1u);
  page = BuildOk(WithReportFields(), {.window_s = 10});
  EXPECT_NE(page.find("windows of 10.0 s"), std::string::npos);
}

TEST(ReportTest, OlderResultsWithoutTheNewFieldsStillReport) {
  std::string page = BuildOk(Load("nest.json"));
  EXPECT_EQ(Count(page, "<details class=\"pattern\""), 2u);
  EXPECT_NE(page.find("No timelines in this result"), std::string::npos);
  EXPECT_NE(BuildOk(Load("empty.json")).find("id=\"pattern-table\""),
            std::string::npos);
  EXPECT_NE(BuildOk(Load("convolve.json")).find("id=\"convolution\""),
            std::string::npos);
}

// Names with markup, quotes, backslashes and UTF-8 come out as written,
// escaped, and never as markup of the page.
TEST(ReportTest, NamesAreEscaped) {
  std::string page = BuildOk(Load("special.json"));
  EXPECT_EQ(Count(page, "<script"), 1u);
  EXPECT_EQ(page.find("<x>"), std::string::npos);
  EXPECT_NE(page.find("we\\b&lt;x&gt;&amp;amp;"), std::string::npos);
  EXPECT_NE(page.find("Z\u00fcrich \u6771\u4eac"), std::string::npos);
}

TEST(ReportTest, BadReportFieldsNameTheirJsonPath) {
  nlohmann::json doc = WithReportFields();
  doc["patterns"][0]["root"]["latency_hist"]["counts"] = {1, 2, 3};
  auto r = BuildReport(doc, {});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().message(),
            "patterns[0].root.latency_hist.edges_s: 3 edges for 3 counts "
            "(expected one more edge than counts)");
  doc = WithReportFields();
  doc["patterns"][1]["culprit"]["path"] = {7};
  r = BuildReport(doc, {});
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("patterns[1].culprit.path[0]"),
            std::string::npos);
  doc = WithReportFields();
  doc["patterns"][0]["timeline"]["bucket_s"] = 0;
  EXPECT_FALSE(BuildReport(doc, {}).ok());
  doc = WithReportFields();
  doc["patterns"][0]["examples"]["median"]["tree"].erase("latency_s");
  r = BuildReport(doc, {});
  ASSERT_FALSE(r.ok());
  EXPECT_NE(
      r.status().message().find("patterns[0].examples.median.tree.latency_s"),
      std::string::npos);
}

TEST(ServiceMapTest, MergesPatternsByNode) {
  auto patterns = ParseNest(Load("nest.json"), 0);
  ASSERT_TRUE(patterns.ok());
  ServiceMap map = BuildServiceMap(*patterns);
  // DB: once in 5210 instances, twice in 120.
  EXPECT_EQ(map.nodes.at("DB").calls, 5210 + 240);
  EXPECT_FALSE(map.nodes.at("client").called);
  EXPECT_EQ(map.edges.at({"WS2", "DB"}).calls, 240);
  EXPECT_NEAR(map.edges.at({"WS2", "DB"}).latency_sum_s, 240 * 0.030, 1e-9);
  EXPECT_NEAR(map.total_s, 812.4 + 9.6, 1e-9);
  // DB adds 95 ms x 5210 on pattern 1 and, on pattern 2, 30 ms x 120 for
  // each of its two calls (leaves: all their latency is their own).
  EXPECT_NEAR(map.nodes.at("DB").added_s, 0.095 * 5210 + 2 * 0.030 * 120, 1e-6);
}

TEST(ChartsTest, PhasesAggregateBucketsIntoWindows) {
  auto patterns = ParseNest(WithReportFields(), 0);
  ASSERT_TRUE(patterns.ok());
  EXPECT_DOUBLE_EQ(DefaultWindow(*patterns), 3.0);
  Phases ph = BuildPhases(*patterns, 25);
  EXPECT_DOUBLE_EQ(ph.window_s, 25.0);
  EXPECT_DOUBLE_EQ(ph.start_s, 1000.0);
  ASSERT_EQ(ph.windows, 4u);
  ASSERT_EQ(ph.rows.size(), 2u);
  EXPECT_EQ(ph.rows[0].counts, (std::vector<int64_t>{5000, 0, 0, 10}));
  EXPECT_EQ(ph.rows[1].counts, (std::vector<int64_t>{25, 25, 25, 25}));
  EXPECT_TRUE(ph.rows[1].burst.empty());
  // A window that is not a multiple of the bucket is rounded up.
  EXPECT_DOUBLE_EQ(BuildPhases(*patterns, 2.5).window_s, 3.0);
  ph = BuildPhases(*patterns, 5);
  EXPECT_EQ(ph.rows[0].burst, "100% of its instances in 2 of 20 windows");
}

TEST(ChartsTest, HistogramIsOnePathOfBars) {
  Histogram h{{0.001, 0.01, 0.1}, {4, 1}};
  std::string svg = HistogramSvg(h, "latency");
  EXPECT_EQ(Count(svg, "<path"), 1u);
  EXPECT_NE(svg.find("1.00 ms"), std::string::npos);
  EXPECT_NE(svg.find("100 ms"), std::string::npos);
  EXPECT_NE(svg.find("max 4"), std::string::npos);
  EXPECT_NE(HistogramSvg({}, "x").find("no values"), std::string::npos);
}

}  // namespace
}  // namespace bbprof::viz
