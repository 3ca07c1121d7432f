// The stream driver (nesting/stream_driver.h, docs/nesting.md "The stream
// driver") through the binary: a trace of one segment gives the in-memory
// bytes; a trace of many counts every request once, on any number of
// threads with the same bytes, and near the in-memory shares; requests
// across a segment's edge keep their shape; a request longer than the
// overlap is cut, as at the end of a capture.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <map>
#include <nlohmann/json.hpp>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "tests/util/run_cli.h"
#include "tests/util/temp_dir.h"

namespace {

using bbprof::testing::ReadFile;
using bbprof::testing::RunCli;
using bbprof::testing::TempDir;

std::string Maketrace(TempDir& dir, const std::string& conf, int messages,
                      const std::string& extra = "") {
  const std::string c = dir.Write(
      conf + ".conf",
      ReadFile(std::string(BBPROF_SOURCE_DIR) + "/samples/" + conf + ".conf") +
          extra);
  const std::string t = dir.File(conf + ".bbt");
  std::string out;
  EXPECT_EQ(RunCli("maketrace " + c + " -q --seed 2 --messages " +
                       std::to_string(messages) + " -o " + t,
                   &out),
            0)
      << out;
  return t;
}

nlohmann::json Nest(const std::string& args, std::string* text = nullptr) {
  TempDir dir;
  std::string out;
  const std::string json = dir.File("r.json");
  EXPECT_EQ(RunCli("nest " + args + " --json " + json, &out), 0) << out;
  if (text != nullptr) *text = out;
  return nlohmann::json::parse(ReadFile(json));
}

// Requests (the sum of the patterns' counts) and each pattern's share.
struct Shares {
  uint64_t requests = 0;
  std::map<std::string, double> share;  // by signature
};
Shares SharesOf(const nlohmann::json& j) {
  Shares s;
  for (const auto& p : j["patterns"]) s.requests += p["count"].get<uint64_t>();
  for (const auto& p : j["patterns"]) {
    s.share[p["signature"]] =
        100.0 * p["count"].get<double>() / static_cast<double>(s.requests);
  }
  return s;
}

TEST(NestStreamTest, ATraceOfOneSegmentGivesTheInMemoryBytes) {
  TempDir dir;
  std::vector<std::string> traces = {
      Maketrace(dir, "multitier-parallelism-high", 60000),
      Maketrace(dir, "async-fanin", 60000),
      Maketrace(dir, "multitier-ops", 60000),
      Maketrace(dir, "children-d-cc", 40000, "\nloss 0.01\n"),
      std::string(BBPROF_SOURCE_DIR) + "/samples/multitier-small.trace",
  };
  for (const std::string& t : traces) {
    std::string mem_text, stream_text;
    const nlohmann::json mem = Nest(t + " --search memory", &mem_text);
    const nlohmann::json stream = Nest(t + " --search stream", &stream_text);
    EXPECT_EQ(mem.dump(), stream.dump()) << t;
    EXPECT_EQ(mem_text, stream_text) << t;
  }
  // Standard input is streamed by default (its size is unknown): the same.
  std::string out;
  const std::string a = dir.File("stdin-auto.json"),
                    m = dir.File("stdin-memory.json");
  ASSERT_EQ(RunCli("nest - -q --json " + a + " < " + traces[0], &out), 0)
      << out;
  ASSERT_EQ(
      RunCli("nest - -q --search memory --json " + m + " < " + traces[0], &out),
      0)
      << out;
  EXPECT_EQ(ReadFile(a), ReadFile(m));
}

TEST(NestStreamTest, SegmentsCountEveryRequestOnceOnAnyThreads) {
  TempDir dir;
  for (const std::string& t :
       {Maketrace(dir, "multitier-normal", 100000),
        Maketrace(dir, "multitier-parallelism-medium", 100000)}) {
    const nlohmann::json mem = Nest(t + " -q --search memory");
    std::string one_text;
    const nlohmann::json one =
        Nest(t + " --search stream --segment-messages 7000 --threads 1",
             &one_text);
    EXPECT_NE(one_text.find("nested in 15 segments of 7000 messages"),
              std::string::npos)
        << one_text;
    for (int threads : {2, 3}) {
      const nlohmann::json more =
          Nest(t + " -q --search stream --segment-messages 7000 --threads " +
               std::to_string(threads));
      EXPECT_EQ(one.dump(), more.dump()) << t << " on " << threads;
    }
    // Every message and call once, whole requests once.
    for (const char* key : {"messages", "call_pairs", "unmatched_calls",
                            "unmatched_returns", "unfinished_roots"}) {
      EXPECT_EQ(one["input"][key], mem["input"][key]) << t << " " << key;
    }
    const Shares s = SharesOf(one), m = SharesOf(mem);
    EXPECT_EQ(s.requests, m.requests) << t;
    for (const auto& [sig, share] : m.share) {
      if (share < 1.0) continue;
      ASSERT_EQ(s.share.count(sig), 1u) << sig;
      EXPECT_NEAR(s.share.at(sig), share, 0.5) << t << " " << sig;
    }
  }
}

// Requests of one front end and two back ends, one every 3 ms, each of
// 4 or 6 messages over 1.1-1.9 ms: with segments of 1000 messages (and 62
// before and after), nearly every segment's edge falls inside a request.
// Each is nested in the segment that owns its root and nowhere else: the
// patterns' counts are the in-memory ones. One request of a batch client
// lasts a fifth of the trace, far longer than the overlap: it is cut.
TEST(NestStreamTest, RequestsAcrossASegmentEdgeKeepTheirShape) {
  std::mt19937_64 rng(7);
  std::uniform_real_distribution<double> jitter(0, 0.0001);
  struct Line {
    double t;
    std::string text;
  };
  std::vector<Line> lines;
  auto add = [&](double t, const std::string& what) {
    char at[32];
    std::snprintf(at, sizeof at, "%.9f ", t);
    lines.push_back({t, at + what + "\n"});
  };
  const int kRequests = 3000;
  for (int r = 0; r < kRequests; ++r) {
    const double a = 0.003 * r + jitter(rng);
    const double b = a + 0.0002 + 0.0001 * (r % 3);
    const double c = b + 0.0004 + 0.0001 * (r % 5);
    const std::string id = std::to_string(r);
    add(a, "CALL c" + std::to_string(r % 50) + " web r" + id);
    add(b, "CALL web db q" + id);
    add(c, "RET db web q" + id);
    double end = c + 0.0001;
    if (r % 4 != 0) {  // a quarter ask the database only
      add(c + 0.0001, "CALL web cache k" + id);
      add(c + 0.0006, "RET cache web k" + id);
      end = c + 0.0008;
    }
    add(end, "RET web c" + std::to_string(r % 50) + " r" + id);
  }
  const double span = 0.003 * kRequests;
  add(span * 0.1, "CALL batch report long");
  add(span * 0.1 + 0.001, "CALL report archive long");
  add(span * 0.1 + 0.002, "RET archive report long");
  add(span * 0.3, "RET report batch long");
  std::stable_sort(lines.begin(), lines.end(),
                   [](const Line& x, const Line& y) { return x.t < y.t; });
  std::string trace;
  for (const Line& l : lines) trace += l.text;
  TempDir dir;
  const std::string t = dir.Write("edges.trace", trace);
  const nlohmann::json mem = Nest(t + " -q --search memory");
  const nlohmann::json stream =
      Nest(t + " -q --search stream --segment-messages 1000");
  std::map<std::string, uint64_t> mem_counts, stream_counts;
  for (const auto& p : mem["patterns"]) mem_counts[p["signature"]] = p["count"];
  for (const auto& p : stream["patterns"]) {
    stream_counts[p["signature"]] = p["count"];
  }
  // In memory: the two request shapes and the long batch request (its
  // client folded, as a caller never called).
  EXPECT_EQ(mem_counts["clients->web(db,cache)"], 2250u) << mem.dump(1);
  EXPECT_EQ(mem_counts["clients->web(db)"], 750u);
  EXPECT_EQ(mem_counts["clients->report(archive)"], 1u);
  EXPECT_EQ(mem["patterns"].size(), 3u);
  EXPECT_EQ(mem["input"]["unmatched_calls"], 0);
  // Streamed: the same requests. The long one is cut: its segment never
  // sees its return, so its call is unmatched (as at the end of a capture)
  // and the call it made is a root of its own.
  EXPECT_EQ(stream_counts["clients->web(db,cache)"], 2250u) << stream.dump(1);
  EXPECT_EQ(stream_counts["clients->web(db)"], 750u);
  EXPECT_EQ(stream_counts["report->archive"], 1u);
  EXPECT_EQ(stream["patterns"].size(), 3u);
  EXPECT_EQ(stream["input"]["unmatched_calls"], 1);
  EXPECT_EQ(stream["input"]["messages"], mem["input"]["messages"]);
  EXPECT_EQ(stream["input"]["call_pairs"],
            mem["input"]["call_pairs"].get<uint64_t>() - 1);
}

TEST(NestStreamTest, BadSearchFlagsAreRefused) {
  TempDir dir;
  const std::string t = dir.Write(
      "a.trace", "0.000 CALL client WS 1\n0.001 RET WS client 1\n");
  std::string out;
  EXPECT_EQ(RunCli("nest " + t + " --search disk", &out), 2);
  EXPECT_NE(out.find("--search must be auto, memory or stream, not 'disk'"),
            std::string::npos)
      << out;
  for (const char* bad : {"999", "x", "-5", ""}) {
    EXPECT_EQ(RunCli("nest " + t + " --segment-messages '" + bad + "'", &out), 2)
        << bad << ": " << out;
  }
  EXPECT_EQ(RunCli("nest " + t + " --search stream --requests " +
                       dir.File("r.csv"),
                   &out),
            1);
  EXPECT_NE(out.find("--search stream cannot export or score every request"),
            std::string::npos)
      << out;
  // Without --search, --requests holds the trace in memory.
  EXPECT_EQ(RunCli("nest " + t + " -q --requests " + dir.File("r.csv"), &out),
            0)
      << out;
}

#ifdef BBPROF_MPI
// The MPI driver (nesting/mpi_driver.h): two and three ranks on this
// machine, over loopback TCP only, give the bytes one process gives with
// --search stream, segments or not; a bad trace fails on every rank with
// its FILE:LINE and no hang; what needs one process is refused.
int RunMpi(int ranks, const std::string& args, std::string* out) {
  // Root may run mpirun only when told so (CI runs as root).
  const std::string cmd =
      "OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 timeout 300 "
      "mpirun -np " +
      std::to_string(ranks) +
      " --oversubscribe --mca btl self,tcp --mca btl_tcp_if_include lo "
      "--mca oob_tcp_if_include lo " +
      std::string(BBPROF_BINARY) + " " + args + " 2>&1";
  FILE* f = popen(cmd.c_str(), "r");
  if (f == nullptr) return -1;
  char buf[4096];
  size_t n;
  out->clear();
  while ((n = fread(buf, 1, sizeof buf, f)) > 0) out->append(buf, n);
  const int st = pclose(f);
  return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

TEST(NestMpiTest, RanksGiveTheBytesOfOneProcess) {
  TempDir dir;
  const std::string many = Maketrace(dir, "multitier-normal", 100000);
  const std::string small =
      std::string(BBPROF_SOURCE_DIR) + "/samples/multitier-small.trace";
  for (const auto& [trace, flags] :
       std::vector<std::pair<std::string, std::string>>{
           {many, "--segment-messages 7000 --threads 1"},
           {many, "--segment-messages 7000 --threads 2"},
           {small, ""}}) {
    const nlohmann::json one = Nest(trace + " -q --search stream " + flags);
    for (int ranks : {2, 3}) {
      std::string out;
      const std::string json = dir.File("mpi.json");
      ASSERT_EQ(RunMpi(ranks, "nest " + trace + " -q " + flags + " --json " + json,
                       &out),
                0)
          << out;
      EXPECT_EQ(nlohmann::json::parse(ReadFile(json)).dump(), one.dump())
          << trace << " " << flags << " on " << ranks << " ranks";
    }
  }
  std::string out;
  const std::string bad = dir.Write(
      "bad.trace", "0.000 CALL a b 1\n0.001 RET b a 1\n0.002 BOGUS a b\n");
  EXPECT_EQ(RunMpi(2, "nest " + bad, &out), 1) << out;
  EXPECT_NE(out.find("bad.trace:3"), std::string::npos) << out;
  EXPECT_EQ(RunMpi(2, "nest " + small + " --search memory", &out), 1) << out;
  EXPECT_NE(out.find("under mpirun, nest streams the trace"), std::string::npos)
      << out;
}
#endif

}  // namespace
