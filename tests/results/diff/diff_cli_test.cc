// bbprof diff end to end, through the binary: the added-delay sample against
// the normal one (the paper's Figure 12 scenario), two seeds of one
// configuration (false alarms), results as well as traces, and exit codes.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>

#include "tests/util/run_cli.h"
#include "tests/util/temp_dir.h"

namespace {

using bbprof::testing::ReadFile;
using bbprof::testing::RunCli;
using bbprof::testing::TempDir;
using json = nlohmann::json;

std::string Sample(TempDir& dir, const std::string& conf, int seed) {
  const std::string t = dir.File(conf + "." + std::to_string(seed) + ".bbt");
  std::string out;
  EXPECT_EQ(RunCli("maketrace " + std::string(BBPROF_SOURCE_DIR) + "/samples/" +
                       conf + ".conf -q --messages 100000 --seed " +
                       std::to_string(seed) + " -o " + t,
                   &out),
            0)
      << out;
  return t;
}

json Diff(TempDir& dir, const std::string& before, const std::string& after,
          std::string* text = nullptr) {
  const std::string j = dir.File("diff.json");
  std::string out;
  EXPECT_EQ(RunCli("diff -q " + before + " " + after + " --json " + j, &out), 0)
      << out;
  if (text != nullptr) *text = out;
  return json::parse(ReadFile(j));
}

size_t SignificantPatterns(const json& d) {
  size_t n = 0;
  for (const json& p : d["patterns"]) n += p["significant"].get<bool>();
  return n;
}

// Section 7.2's added delay: 200 ms more at WS2 between its calls to AUTH
// and AP. The diff ranks a WS2 pattern first, with about +200 ms on WS2, as
// significant; the WS1 patterns do not change significantly.
void ExpectWs2First(const json& d) {
  ASSERT_GE(d["patterns"].size(), 2u);
  for (int i = 0; i < 2; ++i) {
    const json& p = d["patterns"][i];
    EXPECT_NE(p["signature"].get<std::string>().find("->WS2(AUTH,AP"),
              std::string::npos)
        << p["signature"];
    EXPECT_TRUE(p["significant"].get<bool>());
    const json& root = p["nodes"][0];
    EXPECT_EQ(root["node"], "WS2");
    EXPECT_NEAR(root["delta_s"]["mean"].get<double>(), 0.200, 0.005);
    EXPECT_NEAR(root["delta_s"]["own_time"].get<double>(), 0.200, 0.005);
    EXPECT_TRUE(root["test"]["significant"].get<bool>());
    EXPECT_GT(p["impact_s"].get<double>(), 0);
  }
  for (const json& p : d["patterns"]) {
    if (p["signature"].get<std::string>().find("WS1") == std::string::npos)
      continue;
    for (const json& n : p["nodes"]) {
      if (n["test"].is_object()) {
        EXPECT_FALSE(n["test"]["significant"].get<bool>()) << n["label"];
      }
    }
  }
}

TEST(DiffCliTest, AddedDelayPutsWs2FirstFromTraces) {
  TempDir dir;
  const std::string normal = Sample(dir, "multitier-normal", 1);
  const std::string delayed = Sample(dir, "multitier-added-delay", 1);
  std::string text;
  json d = Diff(dir, normal, delayed, &text);
  EXPECT_EQ(d["tool"], "bbprof diff");
  EXPECT_EQ(d["before"]["source"], "trace");
  ExpectWs2First(d);
  EXPECT_NE(text.find("#1  clients->WS2(AUTH,AP"), std::string::npos) << text;
  // The HTML view: the first two patterns drawn as significant, WS2 filled.
  std::string out;
  ASSERT_EQ(RunCli("diff -q " + normal + " " + delayed + " --top 3 --html " +
                       dir.File("d.html"),
                   &out),
            0)
      << out;
  const std::string html = ReadFile(dir.File("d.html"));
  EXPECT_NE(html.find("<h2>#1 clients-&gt;WS2(AUTH,AP"), std::string::npos);
  EXPECT_NE(html.find("(changed, significant)</h2>"), std::string::npos);
  size_t svgs = 0;
  for (size_t at = html.find("<svg"); at != std::string::npos;
       at = html.find("<svg", at + 1)) {
    ++svgs;
  }
  EXPECT_EQ(svgs, 3u);
}

TEST(DiffCliTest, AddedDelayPutsWs2FirstFromResults) {
  TempDir dir;
  std::string out;
  const std::string normal = Sample(dir, "multitier-normal", 1);
  const std::string delayed = Sample(dir, "multitier-added-delay", 1);
  ASSERT_EQ(RunCli("nest -q " + normal + " --json " + dir.File("n.json"), &out),
            0)
      << out;
  ASSERT_EQ(
      RunCli("nest -q " + delayed + " --json " + dir.File("d.json"), &out), 0)
      << out;
  json d = Diff(dir, dir.File("n.json"), dir.File("d.json"));
  EXPECT_EQ(d["before"]["source"], "result");
  ExpectWs2First(d);
}

// Two seeds of one configuration: nothing changed, so nothing may be
// reported as significant (Holm keeps the family-wise error at 5%; three
// pairs of seeds, from traces and from results).
TEST(DiffCliTest, TwoSeedsOfOneConfigurationReportNoSignificantChange) {
  TempDir dir;
  std::string out;
  for (int seed : {1, 3, 5}) {
    const std::string a = Sample(dir, "multitier-normal", seed);
    const std::string b = Sample(dir, "multitier-normal", seed + 1);
    json d = Diff(dir, a, b);
    EXPECT_GT(d["method"]["tests"].get<int>(), 20);
    EXPECT_EQ(SignificantPatterns(d), 0u) << d.dump(1);
    ASSERT_EQ(RunCli("nest -q " + a + " --json " + dir.File("a.json"), &out), 0)
        << out;
    ASSERT_EQ(RunCli("nest -q " + b + " --json " + dir.File("b.json"), &out), 0)
        << out;
    json r = Diff(dir, dir.File("a.json"), dir.File("b.json"));
    EXPECT_EQ(SignificantPatterns(r), 0u) << r.dump(1);
  }
}

TEST(DiffCliTest, ExitCodesAndBadInput) {
  TempDir dir;
  std::string out;
  const std::string t =
      dir.Write("a.trace",
                "0.000 CALL client WS 1\n0.001 CALL WS DB 2\n0.0035 RET DB WS "
                "2\n0.004 RET WS client 1\n");
  EXPECT_EQ(RunCli("diff " + t + " " + t, &out), 0) << out;
  EXPECT_NE(out.find("0 of 1 patterns changed significantly"),
            std::string::npos)
      << out;
  // Usage errors: one input, two from standard input, a bad flag, a result
  // against a trace.
  EXPECT_EQ(RunCli("diff " + t, &out), 2) << out;
  EXPECT_EQ(RunCli("diff - -", &out), 2) << out;
  EXPECT_EQ(RunCli("diff " + t + " " + t + " --alpha 2", &out), 2) << out;
  ASSERT_EQ(RunCli("nest -q " + t + " --json " + dir.File("r.json"), &out), 0)
      << out;
  EXPECT_EQ(RunCli("diff " + dir.File("r.json") + " " + t, &out), 2) << out;
  EXPECT_NE(out.find("the same kind"), std::string::npos) << out;
  // Bad input: a missing file, a broken document, a convolve result, a
  // mistyped field (named by its path), a trace with no call pairs.
  EXPECT_EQ(RunCli("diff " + t + " " + dir.File("missing.trace"), &out), 1)
      << out;
  EXPECT_NE(out.find("missing.trace"), std::string::npos) << out;
  const std::string broken = dir.Write("broken.json", "{\"tool\": ");
  EXPECT_EQ(RunCli("diff " + dir.File("r.json") + " " + broken, &out), 1)
      << out;
  EXPECT_NE(out.find("broken.json: not a JSON document"), std::string::npos)
      << out;
  const std::string conv =
      dir.Write("conv.json", "{\"tool\": \"bbprof convolve\"}");
  EXPECT_EQ(RunCli("diff " + dir.File("r.json") + " " + conv, &out), 1) << out;
  EXPECT_NE(out.find("not a 'bbprof nest' result"), std::string::npos) << out;
  json r = json::parse(ReadFile(dir.File("r.json")));
  r["patterns"][0]["root"]["latency_hist"]["counts"] = "many";
  const std::string bad = dir.Write("bad.json", r.dump());
  EXPECT_EQ(RunCli("diff " + dir.File("r.json") + " " + bad, &out), 1) << out;
  EXPECT_NE(out.find("bad.json: patterns[0].root.latency_hist"),
            std::string::npos)
      << out;
  const std::string msgs =
      dir.Write("m.trace", "0.000 MSG A B 1\n0.001 MSG B C 2\n");
  EXPECT_EQ(RunCli("diff " + t + " " + msgs, &out), 1) << out;
  EXPECT_NE(out.find("no CALL has a matching RET"), std::string::npos) << out;
}

}  // namespace
