// End-to-end: bbprof convolve exit codes and outputs.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <cstdlib>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "tests/util/temp_dir.h"

namespace {

int RunBbprof(const std::string& args) {
  const std::string cmd =
      std::string(BBPROF_BINARY) + " " + args + " >/dev/null 2>&1";
  const int rc = std::system(cmd.c_str());
  return WIFEXITED(rc) ? WEXITSTATUS(rc) : -1;
}

TEST(ConvolveCli, ExitCodesAndJson) {
  bbprof::testing::TempDir dir;
  std::ostringstream t;
  t << "#bbprof-trace 1\n";
  unsigned s = 12345;
  long long ms = 0;
  for (int i = 0; i < 300; ++i) {
    s = s * 1103515245u + 12345u;
    ms += 20 + (s >> 16) % 200;
    t << ms / 1000 << "." << (ms % 1000 + 1000) % 1000 / 100 << (ms % 100) / 10
      << ms % 10 << "\tCALL\tA\tB\tc" << i << "\n";
    const long long r = ms + 15;
    t << r / 1000 << "." << (r % 1000) / 100 << (r % 100) / 10 << r % 10
      << "\tRET\tB\tA\tc" << i << "\n";
  }
  const std::string trace = dir.Write("rpc.trace", t.str());
  const std::string json = dir.File("out.json");
  EXPECT_EQ(RunBbprof("convolve " + trace +
                      " --quantum 0.001 --root A --json " + json),
            0);
  std::ifstream in(json);
  auto j = nlohmann::json::parse(in);
  EXPECT_EQ(j["tool"], "bbprof convolve");
  // On an RPC trace the return is a message caused 15 ms after the call.
  ASSERT_EQ(j["paths"].size(), 1u);
  EXPECT_EQ(j["paths"][0]["nodes"], nlohmann::json::array({"A", "B", "A"}));
  EXPECT_NEAR(j["paths"][0]["delays_s"][1].get<double>(), 0.015, 0.001);

  EXPECT_EQ(
      RunBbprof("convolve " + dir.Write("empty.trace", "#bbprof-trace 1\n")),
      1);
  EXPECT_EQ(RunBbprof("convolve " + dir.File("missing.trace")), 1);
  EXPECT_EQ(
      RunBbprof("convolve " + dir.Write("bad.trace", "1.0 CALLX a b -\n")), 1);
  EXPECT_EQ(RunBbprof("convolve " + trace + " --quantum 0"), 2);
  EXPECT_EQ(RunBbprof("convolve " + trace + " --quantum abc"), 2);
  EXPECT_EQ(RunBbprof("convolve " + trace + " --valley-sigma 5"), 2);
  EXPECT_EQ(RunBbprof("convolve " + trace + " --max-depth 0"), 2);
  EXPECT_EQ(RunBbprof("convolve " + trace + " --bogus"), 2);
  EXPECT_EQ(RunBbprof("convolve " + trace + " --root Z"), 1);
  EXPECT_EQ(RunBbprof("convolve"), 2);
  EXPECT_EQ(RunBbprof("convolve --quiet " + trace + " --root A"), 0);
}

}  // namespace
