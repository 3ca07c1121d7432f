// End-to-end tests of `bbprof nest` through the binary: output, JSON to a
// file, and exit codes for bad traces and bad flags.
#include <gtest/gtest.h>

#include <cstdio>
#include <nlohmann/json.hpp>
#include <string>
#include <sys/wait.h>

#include "tests/util/run_cli.h"
#include "tests/util/temp_dir.h"

namespace {

using bbprof::testing::ReadFile;
using bbprof::testing::RunCli;
using bbprof::testing::TempDir;

const char kTrace[] =
    "0.000 CALL client WS 1\n0.001 CALL WS DB 2\n0.0035 RET DB WS 2\n0.004 RET WS client 1\n";

TEST(NestCliTest, WritesReportAndJson) {
  TempDir dir;
  std::string t = dir.Write("a.trace", kTrace);
  std::string out;
  ASSERT_EQ(RunCli("nest " + t + " --json " + dir.File("r.json"), &out), 0) << out;
  EXPECT_NE(out.find("client->WS(DB)"), std::string::npos) << out;
  EXPECT_NE(out.find("most time added by DB"), std::string::npos) << out;
  auto j = nlohmann::json::parse(ReadFile(dir.File("r.json")));
  EXPECT_EQ(j["patterns"][0]["signature"], "client->WS(DB)");
}

// nest reads binary traces with numeric ids (numbers, not text) and text
// traces with text ids: the same trace (a maketrace sample, numeric callids
// and the pathids eval needs) in both forms gives the same patterns and the
// same evaluation.
TEST(NestCliTest, TextAndBinaryFormsOfATraceGiveTheSameResult) {
  TempDir dir;
  const std::string sample = std::string(BBPROF_SOURCE_DIR) + "/samples/multitier-small.trace";
  std::string text = dir.File("t.trace"), bin = dir.File("t.bbt");
  std::string out;
  ASSERT_EQ(RunCli("convert " + sample + " " + text, &out), 0) << out;
  ASSERT_EQ(RunCli("convert " + text + " " + bin, &out), 0) << out;
  for (const std::string* t : {&text, &bin}) {
    const std::string name = t == &text ? "text" : "bin";
    ASSERT_EQ(RunCli("nest " + *t + " -q --json " + dir.File(name + ".json"), &out), 0)
        << out;
    ASSERT_EQ(RunCli("eval " + dir.File(name + ".json") + " --truth " + *t + " -q --json " +
                         dir.File(name + ".eval.json"),
                     &out),
              0)
        << out;
  }
  auto a = nlohmann::json::parse(ReadFile(dir.File("text.json")));
  auto b = nlohmann::json::parse(ReadFile(dir.File("bin.json")));
  ASSERT_GT(a["patterns"].size(), 0u);
  EXPECT_EQ(a["patterns"], b["patterns"]);
  EXPECT_EQ(a["input"]["call_pairs"], b["input"]["call_pairs"]);
  auto ea = nlohmann::json::parse(ReadFile(dir.File("text.eval.json")));
  auto eb = nlohmann::json::parse(ReadFile(dir.File("bin.eval.json")));
  EXPECT_EQ(ea["instances"], eb["instances"]);
}

// Refinement (the default, one pass) re-chooses each call's parent knowing
// all its siblings: on the Children-parallel case of section 7.5.2, where
// greedy assignment swaps parallel children, it makes fewer false-negative
// instances than the paper's single pass (--refine-passes 0); eval re-runs
// each result with the setting it was made with.
TEST(NestCliTest, RefinementMakesFewerMistakesThanTheGreedyPass) {
  TempDir dir;
  const std::string conf = std::string(BBPROF_SOURCE_DIR) + "/samples/children-parallel.conf";
  const std::string t = dir.File("cp.bbt");
  std::string out;
  ASSERT_EQ(RunCli("maketrace " + conf + " -q --messages 60000 --seed 3 -o " + t, &out), 0)
      << out;
  double fn[2];
  for (int passes : {0, 1}) {
    const std::string r = dir.File("r" + std::to_string(passes) + ".json");
    const std::string e = dir.File("e" + std::to_string(passes) + ".json");
    ASSERT_EQ(RunCli("nest " + t + " -q --refine-passes " + std::to_string(passes) +
                         " --json " + r,
                     &out),
              0)
        << out;
    auto result = nlohmann::json::parse(ReadFile(r));
    EXPECT_EQ(result["params"]["refine_passes"], passes);
    ASSERT_EQ(RunCli("eval " + r + " --truth " + t + " -q --json " + e, &out), 0) << out;
    fn[passes] = nlohmann::json::parse(ReadFile(e))["instances"]["false_negative_rate"];
  }
  EXPECT_LT(fn[1], fn[0] - 0.01) << "greedy " << fn[0] << ", refined " << fn[1];
  EXPECT_EQ(RunCli("nest " + t + " --refine-passes -1", &out), 2);
}

TEST(NestCliTest, EmptyAndBadTracesFailClearly) {
  TempDir dir;
  std::string out;
  EXPECT_EQ(RunCli("nest " + dir.Write("e.trace", ""), &out), 1);
  EXPECT_NE(out.find("has no messages"), std::string::npos) << out;
  EXPECT_EQ(RunCli("nest " + dir.Write("m.trace", "0.0 MSG A B -\n"), &out), 1);
  EXPECT_NE(out.find("no CALL has a matching RET"), std::string::npos) << out;
  EXPECT_EQ(RunCli("nest " + dir.Write("b.trace", "0.0 CALLX A B 1\n"), &out), 1);
  EXPECT_NE(out.find("b.trace:1"), std::string::npos) << out;
  EXPECT_EQ(RunCli("nest " + dir.File("missing.trace"), &out), 1);
}

TEST(NestCliTest, BadFlagsAreUsageErrors) {
  TempDir dir;
  std::string t = dir.Write("a.trace", kTrace);
  std::string out;
  EXPECT_EQ(RunCli("nest " + t + " --top -3", &out), 2);
  EXPECT_EQ(RunCli("nest " + t + " --sort speed", &out), 2);
  EXPECT_NE(out.find("--sort"), std::string::npos);
  EXPECT_EQ(RunCli("nest " + t + " --bin-base 1", &out), 2);
  EXPECT_EQ(RunCli("nest " + t + " --penalty-overlap abc", &out), 2);
  EXPECT_EQ(RunCli("nest " + t + " --skew-window x", &out), 2);
  EXPECT_EQ(RunCli("nest " + t + " --smooth -1", &out), 2);
  EXPECT_EQ(RunCli("nest " + t + " --bogus", &out), 2);
}

}  // namespace
