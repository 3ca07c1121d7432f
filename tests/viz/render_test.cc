#include "viz/render.h"

#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include "tests/util/temp_dir.h"

namespace bbprof::viz {
namespace {

using bbprof::testing::ReadFile;
using bbprof::testing::TempDir;

const std::string kData = std::string(BBPROF_SOURCE_DIR) + "/tests/viz/data/";

nlohmann::json Load(const std::string& name) {
  return nlohmann::json::parse(ReadFile(kData + name));
}

std::vector<RenderedFile> RenderOk(const nlohmann::json& doc,
                                   RenderOptions opts) {
  auto r = RenderResult(doc, opts);
  EXPECT_TRUE(r.ok()) << r.status().message();
  if (!r.ok()) return {};
  return *r;
}

const RenderedFile* Find(const std::vector<RenderedFile>& files,
                         const std::string& name) {
  for (const auto& f : files) {
    if (f.name == name) return &f;
  }
  return nullptr;
}

// Golden files: the dot text of each fixture. Regenerate after an intended
// change with `bbprof render tests/viz/data/X.json -f dot -o
// tests/viz/data/golden/X` and review the diff.
void ExpectGolden(const std::string& fixture, RenderOptions opts) {
  opts.format = Format::kDot;
  auto files = RenderOk(Load(fixture + ".json"), opts);
  ASSERT_FALSE(files.empty());
  for (const auto& f : files) {
    std::string golden_path = kData + "golden/" + fixture + "/" + f.name;
    std::ifstream in(golden_path);
    ASSERT_TRUE(in.good()) << "no golden file " << golden_path;
    EXPECT_EQ(f.contents, ReadFile(golden_path)) << golden_path;
  }
}

TEST(RenderGoldenTest, NestingPatternsMatchFigure8Golden) {
  ExpectGolden("nest", {});
}
TEST(RenderGoldenTest, SpecialCharactersGolden) { ExpectGolden("special", {}); }
TEST(RenderGoldenTest, EmptyResultGolden) { ExpectGolden("empty", {}); }
TEST(RenderGoldenTest, ConvolutionMatchesFigure9Golden) {
  ExpectGolden("convolve", {});
}

TEST(RenderTest, Figure8LabelsInDot) {
  RenderOptions opts;
  opts.format = Format::kDot;
  auto files = RenderOk(Load("nest.json"), opts);
  const RenderedFile* p1 = Find(files, "pattern-001.dot");
  ASSERT_NE(p1, nullptr);
  // Node: name and mean latency. Edge: mean call delay. First edge: count
  // and total latency.
  EXPECT_NE(p1->contents.find("label=\"AP1\\n130 ms\""), std::string::npos);
  EXPECT_NE(p1->contents.find("label=\"15.0 ms\""), std::string::npos);
  EXPECT_NE(p1->contents.find("label=\"5210 calls\\n812 s total\""),
            std::string::npos);
  // DB: 95 ms own of a 156 ms path.
  // (Graphviz wraps long dot lines; the whole line is in index.html.)
  EXPECT_NE(p1->contents.find("DB adds 495 s in total (95.0 ms a call, 61%"),
            std::string::npos);
  EXPECT_NE(Find(files, "index.html")
                ->contents.find("DB adds 495 s in total (95.0 ms a call, 61% "
                                "of this path&#39;s latency)"),
            std::string::npos);
  EXPECT_NE(Find(files, "pattern-002.dot"), nullptr);
  EXPECT_NE(Find(files, "index.html"), nullptr);
}

// One absolute scale for the whole render: DB adds 495 s (the most, dark
// red) on pattern 1; pattern 2's WS2 adds 5.4 s and stays nearly white
// although it is 56% of its own path (a per-path share would make it red).
TEST(RenderTest, FillIsTimeAddedOnOneScale) {
  RenderOptions opts;
  opts.format = Format::kDot;
  auto files = RenderOk(Load("nest.json"), opts);
  const RenderedFile* p1 = Find(files, "pattern-001.dot");
  const RenderedFile* p2 = Find(files, "pattern-002.dot");
  ASSERT_NE(p1, nullptr);
  ASSERT_NE(p2, nullptr);
  EXPECT_NE(p1->contents.find("fillcolor=\"#800026\""), std::string::npos);
  EXPECT_EQ(p2->contents.find("fillcolor=\"#800026\""), std::string::npos);
  EXPECT_NE(p2->contents.find("fillcolor=\"#fffefa\""), std::string::npos);
  // Every picture carries its legend, with the scale's top.
  EXPECT_NE(p2->contents.find("edge: mean call delay"), std::string::npos);
  EXPECT_NE(p2->contents.find("dark red 495 s"), std::string::npos);
}

TEST(StyleTest, HeatScaleRunsFromWhiteToDarkRed) {
  HeatScale scale(2.0);
  EXPECT_EQ(scale.Colour(0), "#ffffff");
  EXPECT_EQ(scale.Colour(-1), "#ffffff");
  EXPECT_EQ(scale.Colour(2.0), "#800026");
  EXPECT_EQ(scale.Colour(5.0), "#800026");  // clamped
  EXPECT_DOUBLE_EQ(scale.Level(1.0), 0.5);
  EXPECT_EQ(scale.TextColour(2.0), "#ffffff");
  EXPECT_EQ(scale.TextColour(0.2), "#000000");
  EXPECT_EQ(HeatScale(0).Colour(1.0), "#ffffff");  // nothing on the page
  EXPECT_DOUBLE_EQ(AddedTime(0.01, 100), 1.0);
  EXPECT_DOUBLE_EQ(AddedTime(-0.01, 100), 0.0);
  EXPECT_TRUE(IsSlowEdge(5, 10));
  EXPECT_FALSE(IsSlowEdge(4.9, 10));
  EXPECT_FALSE(IsSlowEdge(0, 0));
}

TEST(RenderTest, TopLimitsPatternsAndOnePageStacksThem) {
  RenderOptions opts;
  opts.top = 1;
  auto files = RenderOk(Load("nest.json"), opts);
  EXPECT_NE(Find(files, "pattern-001.svg"), nullptr);
  EXPECT_EQ(Find(files, "pattern-002.svg"), nullptr);

  opts.top = 0;
  opts.one_page = true;
  files = RenderOk(Load("nest.json"), opts);
  ASSERT_EQ(files.size(), 2u);
  const RenderedFile* page = Find(files, "patterns.svg");
  ASSERT_NE(page, nullptr);
  EXPECT_NE(page->contents.find("id=\"p001\""), std::string::npos);
  EXPECT_NE(page->contents.find("id=\"p002\""), std::string::npos);
  EXPECT_EQ(page->contents.find("<!DOCTYPE"), std::string::npos);
}

TEST(RenderTest, NoHighlightLeavesNodesUnfilled) {
  RenderOptions opts;
  opts.format = Format::kDot;
  opts.highlight = false;
  auto files = RenderOk(Load("nest.json"), opts);
  ASSERT_FALSE(files.empty());
  EXPECT_EQ(files[0].contents.find("fillcolor"), std::string::npos);
  EXPECT_EQ(files[0].contents.find("adds"), std::string::npos);
}

TEST(RenderTest, SameInputSameBytes) {
  for (Format f : {Format::kDot, Format::kSvg, Format::kPng}) {
    RenderOptions opts;
    opts.format = f;
    auto a = RenderOk(Load("nest.json"), opts);
    auto b = RenderOk(Load("nest.json"), opts);
    ASSERT_EQ(a.size(), b.size());
    for (size_t i = 0; i < a.size(); ++i) {
      EXPECT_EQ(a[i].name, b[i].name);
      EXPECT_EQ(a[i].contents, b[i].contents) << a[i].name;
    }
  }
}

TEST(RenderTest, PngHasPngSignature) {
  RenderOptions opts;
  opts.format = Format::kPng;
  auto files = RenderOk(Load("convolve.json"), opts);
  const RenderedFile* f = Find(files, "convolution.png");
  ASSERT_NE(f, nullptr);
  ASSERT_GT(f->contents.size(), 8u);
  EXPECT_EQ(f->contents.substr(0, 8), std::string("\x89PNG\r\n\x1a\n", 8));
}

TEST(RenderTest, EmptyResultSaysNoPatterns) {
  auto files = RenderOk(Load("empty.json"), {});
  const RenderedFile* f = Find(files, "patterns.svg");
  ASSERT_NE(f, nullptr);
  EXPECT_NE(f->contents.find("no patterns"), std::string::npos);
  EXPECT_NE(f->contents.find("quiet.trace"), std::string::npos);
}

TEST(RenderTest, ConvolutionDelaysInDecliningFrequency) {
  nlohmann::json doc = Load("convolve.json");
  // Producer wrote them out of order: the picture must still decline.
  doc["edges"][1]["delays"] = nlohmann::json::parse(
      R"([{"delay_s": 10.0, "count": 300}, {"delay_s": 0.05, "count": 900}])");
  RenderOptions opts;
  opts.format = Format::kDot;
  auto files = RenderOk(doc, opts);
  ASSERT_FALSE(files.empty());
  EXPECT_NE(files[0].contents.find("1200 msgs\\n50.0 ms (900)\\n10.0 s (300)"),
            std::string::npos)
      << files[0].contents;
}

// The convolution graph highlights its slowest edges by the same rule: e1
// adds 0.05 x 900 + 10 x 300 = 3045 s, the others 0 and 1.76 s.
TEST(RenderTest, ConvolutionHighlightsSlowestEdges) {
  RenderOptions opts;
  opts.format = Format::kDot;
  auto files = RenderOk(Load("convolve.json"), opts);
  ASSERT_FALSE(files.empty());
  const std::string& dot = files[0].contents;
  auto attrs = [&](const std::string& id) {
    size_t at = dot.find("id=" + id + ",");
    if (at == std::string::npos) return std::string();
    size_t start = dot.rfind('[', at);
    return dot.substr(start, dot.find(']', at) - start);
  };
  EXPECT_NE(attrs("e1").find("penwidth=4.0"), std::string::npos) << dot;
  EXPECT_NE(attrs("e1").find("color=\"#800026\""), std::string::npos);
  EXPECT_EQ(attrs("e0").find("penwidth"), std::string::npos) << dot;
  EXPECT_EQ(attrs("e2").find("penwidth"), std::string::npos) << dot;
  opts.highlight = false;
  files = RenderOk(Load("convolve.json"), opts);
  EXPECT_EQ(files[0].contents.find("penwidth=4"), std::string::npos);
}

std::string ErrorOf(const nlohmann::json& doc) {
  auto r = RenderResult(doc, {});
  return r.ok() ? "" : r.status().message();
}

TEST(RenderErrorTest, MissingFieldsNameTheirJsonPath) {
  EXPECT_EQ(ErrorOf(Load("missing_mean.json")),
            "patterns[0].root.children[0].latency_s.mean: missing (expected a "
            "number)");
  nlohmann::json doc = Load("nest.json");
  doc["patterns"][1].erase("count");
  EXPECT_EQ(ErrorOf(doc), "patterns[1].count: missing (expected an integer)");
  doc = Load("nest.json");
  doc["patterns"][0]["root"]["children"][1]["node"] = 7;
  EXPECT_EQ(
      ErrorOf(doc),
      "patterns[0].root.children[1].node: wrong type (expected a string)");
  doc = Load("convolve.json");
  doc["edges"][2]["to"] = 99;
  EXPECT_EQ(ErrorOf(doc), "edges[2].to: no vertex with id 99");
  EXPECT_EQ(ErrorOf(nlohmann::json::parse(R"({"tool": "bbprof eval"})")),
            "tool: 'bbprof eval' is not a result bbprof knows (expected "
            "'bbprof nest' or 'bbprof convolve')");
  EXPECT_EQ(ErrorOf(nlohmann::json::parse("[1,2]")),
            "$: expected a JSON object (a bbprof result)");
  EXPECT_EQ(ErrorOf(nlohmann::json::parse(R"({"patterns": []})")),
            "tool: missing (expected a string)");
}

TEST(RenderErrorTest, DeepNestingIsAnErrorNotACrash) {
  nlohmann::json leaf = {{"node", "x"},
                         {"latency_s", {{"mean", 1}}},
                         {"call_delay_s", {{"mean", 0}}},
                         {"children", nlohmann::json::array()}};
  for (int i = 0; i < 300; ++i) {
    nlohmann::json parent = leaf;
    parent["children"] = nlohmann::json::array({leaf});
    leaf = std::move(parent);
  }
  leaf["caller"] = "c";
  nlohmann::json doc = {{"tool", "bbprof nest"},
                        {"patterns",
                         {{{"rank", 1},
                           {"signature", "s"},
                           {"count", 1},
                           {"total_latency_s", 1},
                           {"root", leaf}}}}};
  EXPECT_NE(ErrorOf(doc).find("nested deeper than 200 calls"),
            std::string::npos);
}

TEST(RenderToDirTest, WritesEveryFile) {
  TempDir dir;
  std::string out = dir.File("a/b");
  ASSERT_TRUE(RenderResultToDir(Load("nest.json"), {}, out).ok());
  EXPECT_NE(ReadFile(out + "/pattern-001.svg").find("</svg>"),
            std::string::npos);
  EXPECT_NE(ReadFile(out + "/index.html").find("pattern-002.svg"),
            std::string::npos);
}

TEST(OwnTimeTest, SequentialChildrenAddUp) {
  // 100 ms parent; children at [10,40] and [50,70]: 50 ms covered.
  EXPECT_NEAR(OwnTime(0.100, {{0.010, 0.030}, {0.050, 0.020}}), 0.050, 1e-12);
}

TEST(OwnTimeTest, ParallelChildrenCountOnce) {
  // Two overlapping children [10,60] and [20,70]: union [10,70] = 60 ms.
  EXPECT_NEAR(OwnTime(0.100, {{0.010, 0.050}, {0.020, 0.050}}), 0.040, 1e-12);
  // Identical parallel calls.
  EXPECT_NEAR(OwnTime(0.100, {{0.0, 0.080}, {0.0, 0.080}}), 0.020, 1e-12);
}

TEST(OwnTimeTest, ChildrenClippedToParentAndNeverNegative) {
  // Means can disagree (a child's mean end beyond the parent's mean).
  EXPECT_NEAR(OwnTime(0.100, {{0.050, 0.200}}), 0.050, 1e-12);
  EXPECT_NEAR(OwnTime(0.100, {{0.0, 0.300}}), 0.0, 1e-12);
  EXPECT_NEAR(OwnTime(0.100, {}), 0.100, 1e-12);
  EXPECT_NEAR(OwnTime(0.0, {{0.0, 0.1}}), 0.0, 1e-12);
}

}  // namespace
}  // namespace bbprof::viz
