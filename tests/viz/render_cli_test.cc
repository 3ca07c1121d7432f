// End-to-end: the bbprof binary's render subcommand, exit codes included.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <cstdlib>
#include <filesystem>

#include "tests/util/temp_dir.h"

namespace bbprof {
namespace {

using bbprof::testing::ReadFile;
using bbprof::testing::TempDir;

const std::string kData = std::string(BBPROF_SOURCE_DIR) + "/tests/viz/data/";

int RunRender(const std::string& args, const TempDir& dir) {
  std::string cmd = std::string(BBPROF_BINARY) + " render " + args + " >" +
                    dir.File("stdout") + " 2>" + dir.File("stderr");
  int rc = std::system(cmd.c_str());
  return WIFEXITED(rc) ? WEXITSTATUS(rc) : -1;
}

TEST(RenderCliTest, RendersSvgIntoFolder) {
  TempDir dir;
  EXPECT_EQ(
      RunRender(kData + "nest.json -o " + dir.File("out") + " --top 2", dir),
      0);
  EXPECT_TRUE(std::filesystem::exists(dir.File("out/pattern-001.svg")));
  EXPECT_TRUE(std::filesystem::exists(dir.File("out/pattern-002.svg")));
  EXPECT_TRUE(std::filesystem::exists(dir.File("out/index.html")));
  EXPECT_NE(ReadFile(dir.File("stderr")).find("wrote"), std::string::npos);
}

TEST(RenderCliTest, QuietPrintsNothing) {
  TempDir dir;
  EXPECT_EQ(
      RunRender(kData + "convolve.json -q -f dot -o " + dir.File("out"), dir),
      0);
  EXPECT_EQ(ReadFile(dir.File("stderr")), "");
  EXPECT_TRUE(std::filesystem::exists(dir.File("out/convolution.dot")));
}

TEST(RenderCliTest, MalformedJsonFailsWithLineAndExit1) {
  TempDir dir;
  EXPECT_EQ(RunRender(kData + "malformed.json -o " + dir.File("out"), dir), 1);
  std::string err = ReadFile(dir.File("stderr"));
  EXPECT_NE(err.find("malformed.json: not valid JSON"), std::string::npos)
      << err;
  EXPECT_NE(err.find("line 3"), std::string::npos) << err;
  EXPECT_FALSE(std::filesystem::exists(dir.File("out/index.html")));
}

TEST(RenderCliTest, MissingFieldFailsWithJsonPathAndExit1) {
  TempDir dir;
  EXPECT_EQ(RunRender(kData + "missing_mean.json -o " + dir.File("out"), dir),
            1);
  EXPECT_NE(ReadFile(dir.File("stderr"))
                .find("missing_mean.json: "
                      "patterns[0].root.children[0].latency_s.mean: missing"),
            std::string::npos);
}

// Issue 16, defect 11: a well-formed JSON document with impossible values
// (here a negative count) is refused with the file and the JSON path, exit 1.
TEST(RenderCliTest, ImpossibleValuesFailWithJsonPathAndExit1) {
  TempDir dir;
  std::string doc = ReadFile(kData + "nest.json");
  size_t at = doc.find("\"count\":");
  ASSERT_NE(at, std::string::npos);
  doc.insert(doc.find_first_of("0123456789", at), "-");
  std::string path = dir.Write("neg.json", doc);
  EXPECT_EQ(RunRender(path + " -o " + dir.File("out"), dir), 1);
  EXPECT_NE(
      ReadFile(dir.File("stderr")).find(path + ": patterns[0].count: negative"),
      std::string::npos)
      << ReadFile(dir.File("stderr"));
  EXPECT_FALSE(std::filesystem::exists(dir.File("out/index.html")));
}

TEST(RenderCliTest, MissingFileExit1) {
  TempDir dir;
  EXPECT_EQ(RunRender(dir.File("nope.json") + " -o " + dir.File("out"), dir),
            1);
}

TEST(RenderCliTest, UsageErrorsExit2) {
  TempDir dir;
  EXPECT_EQ(RunRender(kData + "nest.json", dir), 2);  // no -o
  EXPECT_EQ(RunRender(kData + "nest.json -o x --format jpeg", dir), 2);
  EXPECT_EQ(RunRender(kData + "nest.json -o x --top 0", dir), 2);
  EXPECT_EQ(RunRender(kData + "nest.json -o x --one-page -f png", dir), 2);
  EXPECT_EQ(RunRender(kData + "nest.json -o x --bogus", dir), 2);
  EXPECT_EQ(RunRender("-o x", dir), 2);
  EXPECT_EQ(RunRender("--help", dir), 0);
}

TEST(RenderCliTest, EmptyResultIsANoPatternsPageNotAnError) {
  TempDir dir;
  EXPECT_EQ(RunRender(kData + "empty.json -o " + dir.File("out"), dir), 0);
  EXPECT_NE(ReadFile(dir.File("out/patterns.svg")).find("no patterns"),
            std::string::npos);
}

}  // namespace
}  // namespace bbprof
