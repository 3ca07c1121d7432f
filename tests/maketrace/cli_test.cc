// End-to-end: the bbprof binary's maketrace subcommand, exit codes included.
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <string>

#include "tests/util/temp_dir.h"

namespace bbprof::maketrace {
namespace {

using bbprof::testing::ReadFile;
using bbprof::testing::TempDir;

struct RunResult {
  int code;
  std::string err;
};

RunResult Bbprof(const TempDir& dir, const std::string& args) {
  const std::string err = dir.File("stderr.txt");
  const std::string cmd =
      std::string(BBPROF_BINARY) + " maketrace " + args + " 2>" + err;
  const int rc = std::system(cmd.c_str());
  return {WIFEXITED(rc) ? WEXITSTATUS(rc) : -1, ReadFile(err)};
}

const char kConfig[] =
    "duration 30s\n"
    "tracelet web instances=4 think=100ms..300ms\n"
    "  client -> WS1|WS2 proc=2ms±0.5ms\n"
    "    -> DB delay=1ms±0.2ms proc=5ms±1ms\n";

TEST(MaketraceCliTest, WritesATraceAndASummary) {
  TempDir dir;
  const std::string conf = dir.Write("web.conf", kConfig);
  RunResult r = Bbprof(dir, conf + " -o " + dir.File("t.trace") + " --seed 3");
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.err.find("tracelet web:"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("dropped: 0 by the sniffer"), std::string::npos)
      << r.err;
  const std::string t = ReadFile(dir.File("t.trace"));
  EXPECT_EQ(t.rfind("#bbprof-trace 1\n#meta source=maketrace config=web.conf "
                    "config_hash=",
                    0),
            0u);
  EXPECT_NE(t.find(" seed=3\n"), std::string::npos);
  EXPECT_NE(t.find("\tCALL\tclient\tWS"), std::string::npos);
  EXPECT_NE(t.find("#meta maketrace_result generated="), std::string::npos);
}

TEST(MaketraceCliTest, QuietPrintsNothingAndFlagsOverrideTheLength) {
  TempDir dir;
  const std::string conf = dir.Write("web.conf", kConfig);
  RunResult r =
      Bbprof(dir, conf + " -q -o " + dir.File("t.trace") + " --messages 500");
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(r.err, "");
  const std::string t = ReadFile(dir.File("t.trace"));
  size_t lines = 0;
  for (char c : t) lines += c == '\n' ? 1 : 0;
  // 3 header/meta lines; 500 messages, rounded up to whole instances (4).
  EXPECT_GE(lines, 503u);
  EXPECT_LE(lines, 503u + 4 * 4);
}

TEST(MaketraceCliTest, UsageErrorsExitTwo) {
  TempDir dir;
  const std::string conf = dir.Write("web.conf", kConfig);
  EXPECT_EQ(Bbprof(dir, conf).code, 2);  // no -o
  EXPECT_EQ(Bbprof(dir, conf + " -o x --seed -4").code, 2);
  EXPECT_EQ(Bbprof(dir, conf + " -o x --duration 5").code, 2);
  EXPECT_EQ(Bbprof(dir, conf + " -o x --duration 5s --messages 9").code, 2);
  EXPECT_EQ(Bbprof(dir, conf + " -o x --bogus").code, 2);
}

TEST(MaketraceCliTest, BadConfigurationExitsOneNamingTheLine) {
  TempDir dir;
  const std::string conf =
      dir.Write("bad.conf", "duration 1s\ntracelet t\n  a -> b delay=3\n");
  RunResult r = Bbprof(dir, conf + " -o " + dir.File("t.trace"));
  EXPECT_EQ(r.code, 1);
  EXPECT_EQ(r.err, "bbprof maketrace: " + conf +
                       ":3: delay=: expected a duration with a unit (ns, us, "
                       "ms, s, min, h) like 10ms, not '3'\n");
  EXPECT_EQ(ReadFile(dir.File("t.trace")), "");  // nothing written
  r = Bbprof(dir, dir.File("missing.conf") + " -o " + dir.File("t.trace"));
  EXPECT_EQ(r.code, 1);
}

}  // namespace
}  // namespace bbprof::maketrace
