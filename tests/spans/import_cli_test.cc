// End-to-end tests of `bbprof import` through the binary: text and binary
// outputs, exit codes, and nest + eval scoring an imported trace against its
// own trace ids.
#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

#include "tests/util/run_cli.h"
#include "tests/util/temp_dir.h"

namespace {

using bbprof::testing::ReadFile;
using bbprof::testing::RunCli;
using bbprof::testing::TempDir;

std::string Testdata(const std::string& name) {
  return std::string(BBPROF_SOURCE_DIR) + "/tests/spans/testdata/" + name;
}

TEST(ImportCliTest, WritesATextTraceWithMetaAndSummary) {
  TempDir dir;
  std::string out;
  ASSERT_EQ(RunCli("import " + Testdata("three_tier.jaeger.json") + " -o " +
                       dir.File("t.trace"),
                   &out),
            0)
      << out;
  EXPECT_NE(out.find("imported 16 spans of 2 traces: 8 RPCs (16 records)"),
            std::string::npos)
      << out;
  const std::string t = ReadFile(dir.File("t.trace"));
  EXPECT_NE(t.find("#meta source=import\n"), std::string::npos) << t;
  EXPECT_NE(t.find("format=jaeger\n"), std::string::npos) << t;
  EXPECT_NE(
      t.find("#meta import_stats entry_points=2 rpcs=8 spans=16 traces=2\n"),
      std::string::npos)
      << t;
  EXPECT_NE(
      t.find("1700000000.000180000\tCALL\tfrontend\tapi\t00000000000000a2\t"
             "4bf92f3577b34da6a3ce929d0e0e4736\tGET%20/api/items\n"),
      std::string::npos)
      << t;
}

// The three formats of one recording give the same trace, and the binary
// form of it converts back to the same text.
TEST(ImportCliTest, ThreeFormatsGiveOneTrace) {
  TempDir dir;
  std::string out;
  std::string first;
  for (const char* f : {"jaeger", "otlp", "zipkin"}) {
    const std::string bbt = dir.File(std::string(f) + ".bbt");
    const std::string txt = dir.File(std::string(f) + ".trace");
    ASSERT_EQ(RunCli("import -q --format " + std::string(f) + " " +
                         Testdata(std::string("three_tier.") + f + ".json") +
                         " -o " + bbt,
                     &out),
              0)
        << out;
    ASSERT_EQ(RunCli("convert " + bbt + " " + txt, &out), 0) << out;
    std::string records;
    for (const std::string& line :
         bbprof::testing::RecordLines(ReadFile(txt))) {
      records += line + "\n";
    }
    EXPECT_FALSE(records.empty());
    if (first.empty()) {
      first = records;
    } else {
      EXPECT_EQ(records, first) << f;
    }
  }
}

TEST(ImportCliTest, ExitCodes) {
  TempDir dir;
  std::string out;
  const std::string bad = dir.Write("bad.json", "{\"data\": [}");
  EXPECT_EQ(RunCli("import " + bad + " -o " + dir.File("x.trace"), &out), 1);
  EXPECT_NE(out.find(bad + ": JSON error at byte 11: "), std::string::npos)
      << out;
  EXPECT_FALSE(std::ifstream(dir.File("x.trace")).good())
      << "no partial output";
  EXPECT_EQ(RunCli("import " + dir.File("missing.json") + " -o " +
                       dir.File("x.trace"),
                   &out),
            1);
  EXPECT_EQ(RunCli("import " + Testdata("three_tier.otlp.json") +
                       " --format zipkin -o " + dir.File("x.trace"),
                   &out),
            1);
  EXPECT_NE(out.find("not Zipkin v2 JSON"), std::string::npos) << out;
  EXPECT_EQ(RunCli("import " + Testdata("three_tier.otlp.json"), &out),
            2);  // no -o
  EXPECT_EQ(RunCli("import " + Testdata("three_tier.otlp.json") +
                       " --format xml -o " + dir.File("x.trace"),
                   &out),
            2);
  EXPECT_EQ(RunCli("import -o " + dir.File("x.trace"), &out), 2);  // no input
}

// The point of import: score bbprof against tracing. On a simple,
// unambiguous recording (the requests do not overlap) nest finds every
// request's tree and eval, scoring against the trace ids, says so.
TEST(ImportCliTest, NestThenEvalOnAnImportedTraceIsPerfect) {
  TempDir dir;
  std::string out;
  const std::string t = dir.File("t.bbt");
  ASSERT_EQ(
      RunCli("import -q " + Testdata("three_tier.zipkin.json") + " -o " + t,
             &out),
      0)
      << out;
  // eval scores the parent choices of the requests nest exports.
  ASSERT_EQ(RunCli("nest -q " + t + " --json " + dir.File("r.json") +
                       " --requests " + dir.File("r.otlp.json"),
                   &out),
            0)
      << out;
  ASSERT_EQ(RunCli("eval -q " + dir.File("r.json") + " --truth " + t +
                       " --json " + dir.File("e.json"),
                   &out),
            0)
      << out;
  auto e = nlohmann::json::parse(ReadFile(dir.File("e.json")));
  EXPECT_EQ(e["instances"]["true"], 2);
  EXPECT_EQ(e["instances"]["correct"], 2);
  EXPECT_EQ(e["instances"]["false_negative_rate"], 0.0);
  EXPECT_EQ(e["instances"]["false_positive_rate"], 0.0);
  EXPECT_EQ(e["messages"]["error_rate"], 0.0);
  EXPECT_EQ(e["patterns"]["true"], 1);
  EXPECT_EQ(e["patterns"]["false_negatives"], 0);
  EXPECT_EQ(e["request_accuracy"], 1.0);
}

}  // namespace
