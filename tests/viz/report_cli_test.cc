// End-to-end: `bbprof report` and `nest --report`, exit codes included.
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

int RunBbprof(const std::string& args, const TempDir& dir) {
  std::string cmd = std::string(BBPROF_BINARY) + " " + args + " >" +
                    dir.File("stdout") + " 2>" + dir.File("stderr");
  int rc = std::system(cmd.c_str());
  return WIFEXITED(rc) ? WEXITSTATUS(rc) : -1;
}

TEST(ReportCliTest, WritesOnePage) {
  TempDir dir;
  EXPECT_EQ(
      RunBbprof("report " + kData + "nest.json -o " + dir.File("r.html"), dir),
      0);
  std::string page = ReadFile(dir.File("r.html"));
  EXPECT_EQ(page.rfind("<!DOCTYPE html>", 0), 0u);
  EXPECT_NE(page.find("client-&gt;WS1(AUTH,AP1(DB))"), std::string::npos);
  EXPECT_NE(ReadFile(dir.File("stderr")).find("wrote " + dir.File("r.html")),
            std::string::npos);
  EXPECT_EQ(RunBbprof("report -q --top 1 --window 2.5 " + kData +
                          "nest.json -o " + dir.File("one.html"),
                      dir),
            0);
  EXPECT_EQ(ReadFile(dir.File("stderr")), "");
  std::string one = ReadFile(dir.File("one.html"));
  EXPECT_NE(one.find("id=\"p001\""), std::string::npos);
  EXPECT_EQ(one.find("id=\"p002\""), std::string::npos);
}

TEST(ReportCliTest, ExitCodes) {
  TempDir dir;
  const std::string out = " -o " + dir.File("r.html");
  EXPECT_EQ(RunBbprof("report " + kData + "nest.json", dir), 2);  // no -o
  EXPECT_EQ(RunBbprof("report " + kData + "nest.json --window 0" + out, dir),
            2);
  EXPECT_EQ(RunBbprof("report " + kData + "nest.json --window x" + out, dir),
            2);
  EXPECT_EQ(RunBbprof("report " + kData + "nest.json --top 0" + out, dir), 2);
  EXPECT_EQ(RunBbprof("report " + kData + "malformed.json" + out, dir), 1);
  EXPECT_NE(ReadFile(dir.File("stderr")).find("malformed.json: not valid JSON"),
            std::string::npos);
  EXPECT_EQ(RunBbprof("report " + kData + "missing_mean.json" + out, dir), 1);
  EXPECT_NE(
      ReadFile(dir.File("stderr")).find("missing_mean.json: patterns[0].root"),
      std::string::npos)
      << ReadFile(dir.File("stderr"));
  EXPECT_EQ(RunBbprof("report " + dir.File("absent.json") + out, dir), 1);
  EXPECT_FALSE(std::filesystem::exists(dir.File("r.html")));
  // An unwritable output is named alone, without the input's name.
  EXPECT_EQ(
      RunBbprof("report " + kData + "nest.json -o " + dir.File("absent/r.html"),
                dir),
      1);
  EXPECT_EQ(ReadFile(dir.File("stderr")).find("nest.json"), std::string::npos)
      << ReadFile(dir.File("stderr"));
}

TEST(ReportCliTest, NestWritesTheSamePageAsReport) {
  TempDir dir;
  const std::string trace =
      std::string(BBPROF_SOURCE_DIR) + "/samples/paper_example.trace";
  ASSERT_EQ(RunBbprof("nest -q " + trace + " --json " + dir.File("n.json") +
                          " --report " + dir.File("nest.html"),
                      dir),
            0)
      << ReadFile(dir.File("stderr"));
  ASSERT_EQ(RunBbprof("report -q " + dir.File("n.json") + " -o " +
                          dir.File("report.html"),
                      dir),
            0);
  EXPECT_EQ(ReadFile(dir.File("nest.html")), ReadFile(dir.File("report.html")));
  EXPECT_NE(ReadFile(dir.File("nest.html")).find("median request"),
            std::string::npos);
}

}  // namespace
}  // namespace bbprof
