// End-to-end tests of 'bbprof skewer' and 'bbprof merge --offsets'.
#include <gtest/gtest.h>

#include <filesystem>
#include <sstream>

#include "tests/util/run_cli.h"
#include "tests/util/temp_dir.h"

namespace bbprof::testing {
namespace {

const std::string kSample =
    std::string(BBPROF_SOURCE_DIR) + "/samples/multitier-short.conf";

TEST(SkewerCliTest, HelpExplainsWithExamples) {
  std::string out;
  EXPECT_EQ(RunCli("skewer --help", &out), 0);
  EXPECT_NE(out.find("Usage: bbprof skewer"), std::string::npos);
  EXPECT_NE(out.find("--offset"), std::string::npos);
  EXPECT_NE(out.find("--estimate"), std::string::npos);
  EXPECT_NE(out.find("Examples:"), std::string::npos);
  EXPECT_EQ(RunCli("help", &out), 0);
  EXPECT_NE(out.find("skewer"), std::string::npos);
}

TEST(SkewerCliTest, RoundTripIsTwoCommandsAndByteExact) {
  TempDir dir;
  std::string out;
  const std::string t = dir.File("t.trace");
  ASSERT_EQ(RunCli("maketrace " + kSample + " --duration 20s -q -o " + t, &out),
            0)
      << out;
  ASSERT_EQ(
      RunCli("skewer " + t +
                 " --offset WS2=0.030 --offset AUTH=-0.0051 --drift AUTH=37.25 "
                 "--drift DB=12 --write-offsets " +
                 dir.File("o.offsets") + " -o " + dir.File("s.trace"),
             &out),
      0)
      << out;
  EXPECT_NE(out.find("messages"), std::string::npos);
  const std::string skewed = ReadFile(dir.File("s.trace"));
  EXPECT_NE(skewed.find("#meta skewer op=add stamp=sender"), std::string::npos);
  EXPECT_NE(skewed, ReadFile(t));
  const std::string offsets = ReadFile(dir.File("o.offsets"));
  EXPECT_NE(offsets.find("AUTH\t-0.005100000\t+37.250000"), std::string::npos)
      << offsets;
  EXPECT_NE(offsets.find("#reference="), std::string::npos);
  ASSERT_EQ(RunCli("skewer -q " + dir.File("s.trace") + " --remove " +
                       dir.File("o.offsets") + " -o " + dir.File("back.trace"),
                   &out),
            0)
      << out;
  EXPECT_EQ(out, "");  // --quiet
  EXPECT_EQ(ReadFile(dir.File("back.trace")), ReadFile(t));
}

// docs/formats.md says nodes of an offsets file that are not in the trace
// are ignored by --remove (an --estimate over several views names every
// host): --remove must not exit 2 after writing.
TEST(SkewerCliTest, RemoveIgnoresOffsetsForNodesNotInTheTrace) {
  TempDir dir;
  std::string out;
  const std::string t = dir.Write("t.trace", "1.0 CALL A B 1\n1.1 RET B A 1\n");
  const std::string offsets = dir.Write("o.offsets", "A 0.5\nZZ 0.25\n");
  ASSERT_EQ(RunCli("skewer " + t + " --remove " + offsets + " -o " +
                       dir.File("r.trace"),
                   &out),
            0)
      << out;
  EXPECT_NE(out.find("offsets for nodes not in " + t + " ignored: ZZ"),
            std::string::npos)
      << out;
  EXPECT_TRUE(std::filesystem::exists(dir.File("r.trace")));
}

// Issue 16, defect 9: a seconds flag beyond the timestamp range said "must
// be a number of seconds"; it says out of range, with the range.
TEST(SkewerCliTest, SecondsFlagsOutOfRangeSayTheRange) {
  TempDir dir;
  std::string out;
  const std::string t = dir.Write("t.trace", "1.0 CALL A B 1\n1.1 RET B A 1\n");
  EXPECT_EQ(RunCli("merge " + t + " -o " + dir.File("m.trace") + " --dedup-window 1e300", &out),
            2);
  EXPECT_NE(out.find("--dedup-window '1e300' is out of range (at most 4611686018.427387903 "
                     "seconds either way)"),
            std::string::npos)
      << out;
  EXPECT_EQ(RunCli("merge " + t + " -o " + dir.File("m.trace") + " --dedup-window soon", &out),
            2);
  EXPECT_NE(out.find("--dedup-window 'soon' is not a number of seconds"), std::string::npos)
      << out;
}

TEST(SkewerCliTest, UsageErrorsNameTheProblem) {
  TempDir dir;
  std::string out;
  const std::string t = dir.Write("t.trace", "1.0 CALL A B 1\n1.1 RET B A 1\n");
  const std::string o = " -o " + dir.File("out.trace");
  EXPECT_EQ(RunCli("skewer " + t + " --offset C=0.01" + o, &out), 2);
  EXPECT_NE(out.find("no node named C in " + t), std::string::npos) << out;
  EXPECT_FALSE(std::filesystem::exists(dir.File("out.trace")));
  EXPECT_EQ(RunCli("skewer " + t + " --offset A=abc" + o, &out), 2);
  EXPECT_NE(out.find("--offset A=abc: 'abc' is not a number of seconds"),
            std::string::npos)
      << out;
  EXPECT_EQ(RunCli("skewer " + t + " --drift A=" + o, &out), 2);
  EXPECT_NE(out.find("--drift A=: '' is not a drift in ppm"), std::string::npos)
      << out;
  EXPECT_EQ(RunCli("skewer " + t + " --drift A=2000" + o, &out), 2);
  EXPECT_EQ(RunCli("skewer " + t + " --offset 0.01" + o, &out), 2);
  EXPECT_NE(out.find("--offset expects NODE=VALUE"), std::string::npos) << out;
  EXPECT_EQ(RunCli("skewer " + t + " --offset A=1", &out), 2);
  EXPECT_NE(out.find("-o OUT is required"), std::string::npos) << out;
  EXPECT_EQ(RunCli("skewer " + t + o, &out), 2);
  EXPECT_NE(out.find("nothing to do"), std::string::npos) << out;
  EXPECT_EQ(RunCli("skewer " + t + " --offset A=1 --stamp wall" + o, &out), 2);
  EXPECT_EQ(RunCli("skewer " + t + " --offset A=1 --bogus" + o, &out), 2);
  const std::string bad =
      dir.Write("bad.offsets", "# clocks\nA 0.01\nB 0.02 fast\n");
  EXPECT_EQ(RunCli("skewer " + t + " --remove " + bad + o, &out), 2);
  EXPECT_NE(out.find(bad + ":3: bad drift 'fast' for B"), std::string::npos)
      << out;
  EXPECT_EQ(
      RunCli("skewer " + t + " --remove " + dir.File("missing.offsets") + o,
             &out),
      2);
  EXPECT_EQ(
      RunCli("skewer " + dir.File("missing.trace") + " --offset A=1" + o, &out),
      1);
  EXPECT_FALSE(std::filesystem::exists(dir.File("out.trace")));
  // Estimation needs to know where each trace was captured.
  EXPECT_EQ(RunCli("skewer --estimate " + t + " " + t, &out), 2);
  EXPECT_NE(out.find("does not say where it was captured"), std::string::npos)
      << out;
}

TEST(SkewerCliTest, EstimateThenMergeRemovesPerHostSkew) {
  TempDir dir;
  std::string out;
  const std::string views = dir.File("views");
  ASSERT_EQ(RunCli("maketrace " + kSample + " --duration 40s -q -o " +
                       dir.File("t.trace") + " --per-host-views " + views,
                   &out),
            0)
      << out;
  const std::map<std::string, std::string> offsets = {
      {"client", "0.0123"}, {"WS1", "-0.0875"}, {"WS2", "0.0421"},
      {"AUTH", "-0.0033"},  {"AP1", "0.0999"},  {"AP2", "-0.0500"},
      {"DB", "0.0642"}};
  std::filesystem::create_directory(dir.File("skewed"));
  std::string inputs, truth_inputs, exact;
  for (const auto& [host, off] : offsets) {
    const std::string s = dir.File("skewed/" + host + ".trace");
    ASSERT_EQ(RunCli("skewer -q " + views + "/" + host +
                         ".trace --stamp host --offset " + host + "=" + off +
                         " -o " + s,
                     &out),
              0)
        << out;
    inputs += " " + s;
    truth_inputs += " " + views + "/" + host + ".trace";
    exact += host + " " + off + "\n";
  }
  // Merging with the exact offsets gives the unskewed merge back.
  const std::string exact_file = dir.Write("exact.offsets", exact);
  ASSERT_EQ(RunCli("merge -q" + truth_inputs + " -o " + dir.File("truth.trace"),
                   &out),
            0)
      << out;
  ASSERT_EQ(RunCli("merge" + inputs + " --offsets " + exact_file + " -o " +
                       dir.File("m.trace"),
                   &out),
            0)
      << out;
  EXPECT_NE(out.find("clock skew removed from 7 of 7 inputs"),
            std::string::npos)
      << out;
  const std::string merged = ReadFile(dir.File("m.trace"));
  EXPECT_NE(merged.find("#meta skewer op=remove stamp=host"),
            std::string::npos);
  EXPECT_EQ(RecordLines(merged),
            RecordLines(ReadFile(dir.File("truth.trace"))));
  // Estimation: within 1 ms of the truth, relative to the reference.
  ASSERT_EQ(RunCli("skewer --estimate" + inputs + " --reference WS1 -o " +
                       dir.File("e.offsets"),
                   &out),
            0)
      << out;
  EXPECT_NE(out.find("reference node WS1"), std::string::npos) << out;
  std::istringstream est(ReadFile(dir.File("e.offsets")));
  std::string line;
  int nodes = 0;
  while (std::getline(est, line)) {
    if (line.empty() || line[0] == '#') continue;
    std::istringstream w(line);
    std::string node, off;
    w >> node >> off;
    const double want =
        std::stod(offsets.at(node)) - std::stod(offsets.at("WS1"));
    EXPECT_NEAR(std::stod(off), want, 1e-3) << node;
    ++nodes;
  }
  EXPECT_EQ(nodes, 7);
  // And merging with the estimate removes nearly all skew: the two copies
  // of each message fall within the 1 ms dedup window.
  ASSERT_EQ(RunCli("merge" + inputs + " --offsets " + dir.File("e.offsets") +
                       " -o " + dir.File("m2.trace"),
                   &out),
            0)
      << out;
  EXPECT_EQ(RecordLines(ReadFile(dir.File("m2.trace"))).size(),
            RecordLines(ReadFile(dir.File("truth.trace"))).size());
  // An input without a capture host cannot be corrected.
  const std::string plain = dir.Write("plain.trace", "1 MSG A B -\n");
  EXPECT_EQ(RunCli("merge " + plain + " --offsets " + exact_file + " -o " +
                       dir.File("x.trace"),
                   &out),
            2);
  EXPECT_NE(out.find("does not say where it was captured"), std::string::npos)
      << out;
}

}  // namespace
}  // namespace bbprof::testing

namespace bbprof::testing {
namespace {

TEST(SkewerCliTest, HostStampAndHostFlags) {
  TempDir dir;
  std::string out;
  // Two per-host captures of one RPC, B's clock 5 ms ahead, named by flag.
  const std::string a = dir.Write("a.trace",
                                  "1.000000 CALL A B 1\n1.000900 RET B A 1\n"
                                  "2.000000 CALL A B 2\n2.000900 RET B A 2\n");
  const std::string b = dir.Write("b.trace",
                                  "1.005100 CALL A B 1\n1.005800 RET B A 1\n"
                                  "2.005100 CALL A B 2\n2.005800 RET B A 2\n");
  ASSERT_EQ(RunCli("skewer --estimate " + a + " " + b + " --host " + a + "=A --host " + b +
                       "=B --min-matches 2 --reference A -o " + dir.File("e.offsets"),
                   &out),
            0)
      << out;
  // Bounds: [t3 - t4, t2 - t1] = [5.8 - 0.9, 5.1 - 0] ms = [4.9, 5.1] ms.
  EXPECT_NE(ReadFile(dir.File("e.offsets")).find("B\t+0.005000000"), std::string::npos)
      << ReadFile(dir.File("e.offsets"));
  EXPECT_NE(out.find("0.000100000"), std::string::npos) << out;  // +- 0.1 ms
  EXPECT_EQ(RunCli("skewer --estimate " + a + " " + b + " --host " + a + "=A", &out), 2);
  EXPECT_NE(out.find(b + " does not say where it was captured"), std::string::npos) << out;
  EXPECT_EQ(RunCli("skewer --estimate " + a + " " + b + " --host nothere=A --host " + a +
                       "=A --host " + b + "=B",
                   &out),
            2);
  EXPECT_EQ(RunCli("skewer --estimate " + a + " " + b + " --host " + a + "=A --host " + b +
                       "=B --reference Z",
                   &out),
            2);
  EXPECT_NE(out.find("--reference Z"), std::string::npos) << out;
  // --stamp host on B's capture moves every line, with --host naming it.
  ASSERT_EQ(RunCli("skewer -q " + b + " --stamp host --host B --offset B=-0.005 -o " +
                       dir.File("b0.trace"),
                   &out),
            0)
      << out;
  EXPECT_NE(ReadFile(dir.File("b0.trace")).find("1.000100000\tCALL\tA\tB\t1\n"),
            std::string::npos);
  EXPECT_EQ(RunCli("skewer " + b + " --stamp host --offset B=-0.005 -o " + dir.File("x.trace"),
                   &out),
            1);
  EXPECT_NE(out.find("capture_host"), std::string::npos) << out;
  EXPECT_EQ(RunCli("skewer " + b + " --stamp host --host B --offset A=1 -o " +
                       dir.File("x.trace"),
                   &out),
            2);
  EXPECT_NE(out.find("stamped by B's clock"), std::string::npos) << out;
}

TEST(SkewerCliTest, RemoveTakesTheReferenceFromTheMetaLine) {
  TempDir dir;
  std::string out;
  const std::string t = dir.Write("t.trace",
                                  "#bbprof-trace 1\n"
                                  "5.250000000\tMSG\tA\tB\t-\n"
                                  "9.000000000\tMSG\tB\tA\t-\n"
                                  "300.125000000\tMSG\tA\tB\t-\n");
  ASSERT_EQ(RunCli("skewer -q " + t + " --drift A=-400 --offset B=1 -o " + dir.File("s.trace"),
                   &out),
            0)
      << out;
  // No #reference line: it comes from '#meta skewer op=add ... reference=5'.
  const std::string off = dir.Write("o.offsets", "A 0 -400\nB 1\n");
  ASSERT_EQ(RunCli("skewer -q " + dir.File("s.trace") + " --remove " + off + " -o " +
                       dir.File("back.trace"),
                   &out),
            0)
      << out;
  EXPECT_EQ(ReadFile(dir.File("back.trace")), ReadFile(t));
}

}  // namespace
}  // namespace bbprof::testing
