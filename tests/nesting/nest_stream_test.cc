// The stream driver (nesting/drivers/stream_driver.h, docs/nesting.md "The
// stream driver") through the binary: a trace of one segment gives the
// in-memory bytes; a trace of many counts every request once, on any number of
// threads with the same bytes, and near the in-memory shares; requests
// across a segment's edge keep their shape; one longer than the overlap is
// followed whole within the reach, and cut past it, as at the end of a
// capture; a lost return is not waited for long; `--requests` streamed writes
// the in-memory bytes for one segment and every request once for many.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <cctype>
#include <cmath>
#include <condition_variable>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>
#include <mutex>
#include <nlohmann/json.hpp>
#include <random>
#include <set>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "nesting/drivers/drivers.h"
#include "nesting/drivers/stream_driver.h"
#include "results/writer.h"
#include "tests/util/run_cli.h"
#include "tests/util/temp_dir.h"
#include "trace/reader.h"

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

// A pattern's total latency is a sum of integer nanoseconds, so the
// stream's segments, each adding its own roots, add up to the in-memory
// total to the bit, and it is the exact sum: 100 instances each of 0.1,
// 0.2 and 0.3 s make 60 s, where a running sum of seconds gives
// 60.00000000000x.
TEST(NestStreamTest, TotalLatencyIsExactAcrossSegments) {
  TempDir dir;
  std::string t;
  for (int i = 0; i < 300; ++i) {
    char line[96];
    std::snprintf(line, sizeof line,
                  "%d.000 CALL A B r%d\n%d.%03d RET B A r%d\n", i, i, i,
                  100 * (1 + i % 3), i);
    t += line;
  }
  const std::string path = dir.Write("latencies.trace", t);
  auto memory_reader = bbprof::trace::OpenTraceReader(path);
  ASSERT_TRUE(memory_reader.ok());
  auto memory =
      bbprof::nesting::RunNesting(**memory_reader, bbprof::nesting::Params{});
  ASSERT_TRUE(memory.ok()) << memory.status().message();
  auto stream_reader = bbprof::trace::OpenTraceReader(path);
  ASSERT_TRUE(stream_reader.ok());
  bbprof::nesting::StreamOptions options;
  options.segment_messages = 100;
  bbprof::nesting::StreamReport report;
  auto stream = bbprof::nesting::RunNestingStream(
      **stream_reader, bbprof::nesting::Params{}, options, &report);
  ASSERT_TRUE(stream.ok()) << stream.status().message();
  EXPECT_GE(report.segments, 6u);
  ASSERT_EQ(memory->patterns.size(), 1u);
  ASSERT_EQ(stream->patterns.size(), 1u);
  EXPECT_EQ(memory->patterns[0].count, 300u);
  EXPECT_EQ(stream->patterns[0].count, 300u);
  EXPECT_EQ(memory->patterns[0].total_latency_ns, 60'000'000'000);
  EXPECT_EQ(memory->patterns[0].total_latency_s(), 60.0);
  EXPECT_EQ(stream->patterns[0].total_latency_s(), 60.0);
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

// A text trace of requests of one front end and two back ends, one every
// 3 ms, each of 4 or 6 messages over 1.1-1.9 ms, from 50 clients; with
// `lose_every`, every lose_every-th request's return is lost. Timed lines
// are added with Add and sorted by Text.
class EdgeTrace {
 public:
  explicit EdgeTrace(int requests, int lose_every = 0) {
    std::mt19937_64 rng(7);
    std::uniform_real_distribution<double> jitter(0, 0.0001);
    for (int r = 0; r < requests; ++r) {
      const double a = 0.003 * r + jitter(rng);
      const double b = a + 0.0002 + 0.0001 * (r % 3);
      const double c = b + 0.0004 + 0.0001 * (r % 5);
      const std::string id = std::to_string(r);
      Add(a, "CALL c" + std::to_string(r % 50) + " web r" + id);
      Add(b, "CALL web db q" + id);
      Add(c, "RET db web q" + id);
      double end = c + 0.0001;
      if (r % 4 != 0) {  // a quarter ask the database only
        Add(c + 0.0001, "CALL web cache k" + id);
        Add(c + 0.0006, "RET cache web k" + id);
        end = c + 0.0008;
      }
      if (lose_every == 0 || r % lose_every != 0) {
        Add(end, "RET web c" + std::to_string(r % 50) + " r" + id);
      }
    }
  }
  void Add(double t, const std::string& what) {
    char at[32];
    std::snprintf(at, sizeof at, "%.9f ", t);
    lines_.push_back({t, at + what + "\n"});
  }
  std::string Text() {
    std::stable_sort(lines_.begin(), lines_.end(),
                     [](const Line& x, const Line& y) { return x.t < y.t; });
    std::string trace;
    for (const Line& l : lines_) trace += l.text;
    return trace;
  }

 private:
  struct Line {
    double t;
    std::string text;
  };
  std::vector<Line> lines_;
};

std::map<std::string, uint64_t> CountsOf(const nlohmann::json& j) {
  std::map<std::string, uint64_t> counts;
  for (const auto& p : j["patterns"]) counts[p["signature"]] = p["count"];
  return counts;
}

// With segments of 1000 messages (and 31 before and after), nearly every
// segment's edge falls inside one of EdgeTrace's requests. Each is nested
// in the segment that owns its root and nowhere else: the patterns' counts
// are the in-memory ones. One request of a batch client lasts a fifth of
// the trace, far longer than the overlap and the reach: it is cut.
TEST(NestStreamTest, RequestsAcrossASegmentEdgeKeepTheirShape) {
  const int kRequests = 3000;
  EdgeTrace lines(kRequests);
  const double span = 0.003 * kRequests;
  lines.Add(span * 0.1, "CALL batch report long");
  lines.Add(span * 0.1 + 0.001, "CALL report archive long");
  lines.Add(span * 0.1 + 0.002, "RET archive report long");
  lines.Add(span * 0.3, "RET report batch long");
  TempDir dir;
  const std::string t = dir.Write("edges.trace", lines.Text());
  const nlohmann::json mem = Nest(t + " -q --search memory");
  const nlohmann::json stream =
      Nest(t + " -q --search stream --segment-messages 1000");
  std::map<std::string, uint64_t> mem_counts = CountsOf(mem),
                                  stream_counts = CountsOf(stream);
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

// The number after `what` in nest's report line that has it.
uint64_t Reported(const std::string& out, const std::string& what) {
  const size_t at = out.find(what);
  if (at == std::string::npos) return ~uint64_t{0};
  size_t begin = at;
  while (begin > 0 && std::isdigit(static_cast<unsigned char>(out[begin - 1]))) {
    --begin;
  }
  return begin == at ? ~uint64_t{0} : std::stoull(out.substr(begin, at - begin));
}

// Requests that run past their segment's overlap, within its reach
// (StreamOptions::reach_messages): with segments of 1500 messages (46
// before and after, a reach of 414), every half second a batch request to
// the web server lasts 120-160 ms (about 220-290 messages), calling the
// report service at its start and again at its end. Its segment waits for
// its return, so it is nested whole; the next segment is given its call,
// open at its start, so its last call is neither a root of its own nor
// another request's: every count is the in-memory one. (Without them, 3 of
// the 18 were cut, and their last calls counted as "web->report".)
TEST(NestStreamTest, RequestsLongerThanTheOverlapAreFollowedWhole) {
  EdgeTrace lines(3000);
  for (int k = 0; k < 18; ++k) {
    const double a = 0.25 + 0.5 * k, length = 0.12 + 0.01 * (k % 5);
    const std::string id = std::to_string(k);
    lines.Add(a, "CALL batch web L" + id);
    lines.Add(a + 0.0005, "CALL web report s" + id);
    lines.Add(a + 0.0015, "RET report web s" + id);
    lines.Add(a + length - 0.002, "CALL web report e" + id);
    lines.Add(a + length - 0.001, "RET report web e" + id);
    lines.Add(a + length, "RET web batch L" + id);
  }
  TempDir dir;
  const std::string t = dir.Write("long.trace", lines.Text());
  const nlohmann::json mem = Nest(t + " -q --search memory");
  std::string text;
  const nlohmann::json stream =
      Nest(t + " --search stream --segment-messages 1500", &text);
  EXPECT_EQ(CountsOf(mem)["clients->web(report,report)"], 18u) << mem.dump(1);
  EXPECT_EQ(CountsOf(stream), CountsOf(mem)) << text;
  for (const char* key : {"call_pairs", "unmatched_calls", "unmatched_returns",
                          "unfinished_roots"}) {
    EXPECT_EQ(stream["input"][key], mem["input"][key]) << key;
  }
  EXPECT_GT(Reported(text, " calls still open carried"), 0u) << text;
  EXPECT_GT(Reported(text, " messages nested past the overlaps"), 0u) << text;
  for (int threads : {2, 3}) {
    EXPECT_EQ(Nest(t + " -q --search stream --segment-messages 1500 "
                       "--threads " + std::to_string(threads))
                  .dump(),
              stream.dump())
        << threads;
  }
  // Every request exported whole by the segment that owns it: the
  // in-memory bytes.
  std::string out;
  const std::string m = dir.File("m.csv"), st = dir.File("s.csv");
  ASSERT_EQ(RunCli("nest " + t + " -q --search memory --requests " + m, &out),
            0)
      << out;
  ASSERT_EQ(RunCli("nest " + t +
                       " -q --search stream --segment-messages 1500 "
                       "--requests " + st,
                   &out),
            0)
      << out;
  EXPECT_EQ(ReadFile(st), ReadFile(m));
}

// A lost return does not make its segment nest its whole tail: the call is
// waited for only while it is younger than twice the longest call into its
// server (here 2 ms), so a segment nests at most one check's worth (64
// messages) past its overlap, not its reach of 414.
TEST(NestStreamTest, ALostReturnIsNotWaitedForLong) {
  TempDir dir;
  const std::string t = dir.Write("lost.trace", EdgeTrace(3000, 7).Text());
  const nlohmann::json mem = Nest(t + " -q --search memory");
  std::string text;
  const nlohmann::json stream =
      Nest(t + " --search stream --segment-messages 1500", &text);
  EXPECT_EQ(mem["input"]["unmatched_calls"], 429) << mem.dump(1);
  EXPECT_EQ(stream["input"]["unmatched_calls"], 429) << text;
  const uint64_t segments = Reported(text, " segments of 1500");
  ASSERT_EQ(segments, 11u) << text;
  EXPECT_LE(Reported(text, " messages nested past the overlaps"),
            64 * segments)
      << text;
}

// A call whose return was stamped before it (a clock behind) is not
// carried from the first messages a segment's tracker is fed, where its
// return may lie just outside. Segments of 1500 messages (46 before and
// after, a reach of 414): the tracker of segment k is fed from message
// 1500k - 460, and there each has a call whose return, 0.5 ms earlier, is
// the message before. In one pass every call is paired; the trackers saw
// the calls but not their returns, and carried them into the segments as
// open (three calls, 0.75 s older than anything else in their segment).
TEST(NestStreamTest, ACallWhoseReturnCameFirstIsNotCarried) {
  std::string text;
  char line[96];
  int request = 0;
  std::set<int> early_at;  // where a tracker starts
  for (int k = 1; k <= 3; ++k) early_at.insert(1500 * k - 460);
  for (int i = 0; i < 6000;) {
    const double t = 0.0005 * i;
    if (early_at.count(i + 2) != 0) {
      std::snprintf(line, sizeof line, "%.6f MSG a b -\n", t);
      text += line;
      std::snprintf(line, sizeof line, "%.6f RET web client e%d\n",
                    t + 0.0005, i);
      text += line;
      std::snprintf(line, sizeof line, "%.6f CALL client web e%d\n",
                    t + 0.0010, i);
      text += line;
      std::snprintf(line, sizeof line, "%.6f MSG a b -\n", t + 0.0015);
      text += line;
      i += 4;
      continue;
    }
    std::snprintf(line, sizeof line,
                  "%.6f CALL client web r%d\n%.6f RET web client r%d\n", t,
                  request, t + 0.0004, request);
    text += line;
    ++request;
    i += 2;
  }
  TempDir dir;
  const std::string t = dir.Write("early.trace", text);
  const nlohmann::json mem = Nest(t + " -q --search memory");
  ASSERT_EQ(mem["input"]["unmatched_calls"], 0) << mem.dump(1);
  std::string out;
  const nlohmann::json stream =
      Nest(t + " --search stream --segment-messages 1500", &out);
  ASSERT_EQ(Reported(out, " segments of 1500"), 4u) << out;
  EXPECT_EQ(Reported(out, " calls still open carried"), 0u) << out;
  EXPECT_EQ(stream["input"]["unmatched_calls"], 0) << out;
  EXPECT_EQ(CountsOf(stream), CountsOf(mem)) << out;
}

// EdgeTrace's requests, 36 s of them, with each message stamped by its
// sender's clock: db +0.3 ms and +40 ppm, cache -0.2 ms and -30 ppm, web
// +0.1 ms and +10 ppm (the clients' clock is true).
std::string SkewedEdgeTrace(TempDir& dir) {
  const std::string t = dir.Write("edge.trace", EdgeTrace(12000).Text());
  const std::string st = dir.File("skewed.trace");
  std::string out;
  EXPECT_EQ(RunCli("skewer " + t +
                       " -q --offset db=0.0003 --drift db=40 --offset "
                       "cache=-0.0002 --drift cache=-30 --offset web=0.0001 "
                       "--drift web=10 -o " + st,
                   &out),
            0)
      << out;
  return st;
}

// The stream driver nests each segment into the table of the segment
// before (CallTable::Recycle keeps its storage): the table must come out
// as a new one's would. The first trace has ops with ids (op_of, id_of,
// key_callee) and more calls; the second, clock skew (call_order while the
// clocks are corrected). Each is nested into the other's recycled table and
// into a new one.
TEST(NestStreamTest, ARecycledTableNestsAsANewOne) {
  TempDir dir;
  const std::string ops = Maketrace(dir, "multitier-ops", 30000);
  const std::string skewed = SkewedEdgeTrace(dir);
  bbprof::nesting::Params params;
  const auto assign = [&](const std::string& path,
                          bbprof::nesting::AssignedSegment* a) {
    auto reader = bbprof::trace::OpenTraceReader(path);
    ASSERT_TRUE(reader.ok()) << reader.status().message();
    const bbprof::Status st = AssignSegment(**reader, params, a);
    ASSERT_TRUE(st.ok()) << st.message();
  };
  const auto same_table = [](const bbprof::nesting::CallTable& x,
                             const bbprof::nesting::CallTable& y) {
    EXPECT_EQ(x.names, y.names);
    ASSERT_EQ(x.pairs.size(), y.pairs.size());
    for (size_t i = 0; i < x.pairs.size(); ++i) {
      const bbprof::nesting::Pair &a = x.pairs[i], &b = y.pairs[i];
      EXPECT_TRUE(a.call == b.call && a.ret == b.ret && a.caller == b.caller &&
                  a.callee == b.callee && a.cand_begin == b.cand_begin &&
                  a.cand_end == b.cand_end && a.parent == b.parent &&
                  a.first_child == b.first_child &&
                  a.next_sibling == b.next_sibling &&
                  a.imputed == b.imputed && a.children == b.children &&
                  a.pathid == b.pathid)
          << "pair " << i;
    }
    EXPECT_EQ(x.ret_order, y.ret_order);
    EXPECT_EQ(x.call_order, y.call_order);
    EXPECT_EQ(x.cands, y.cands);
    EXPECT_EQ(x.op_of, y.op_of);
    EXPECT_EQ(x.op_names, y.op_names);
    EXPECT_EQ(x.op_ids, y.op_ids);
    EXPECT_EQ(x.key_callee, y.key_callee);
    EXPECT_EQ(x.id_of, y.id_of);
  };
  for (const auto& [first, second] :
       {std::pair{ops, skewed}, std::pair{skewed, ops}}) {
    bbprof::nesting::AssignedSegment before, fresh, reused;
    assign(first, &before);
    assign(second, &fresh);
    ASSERT_FALSE(fresh.table.op_of.empty() && before.table.op_of.empty());
    ASSERT_FALSE(before.table.pairs.empty());
    const size_t capacity = before.table.pairs.capacity();
    const bbprof::nesting::Pair* storage = before.table.pairs.data();
    reused.table = std::move(before.table);
    assign(second, &reused);
    same_table(reused.table, fresh.table);
    EXPECT_EQ(reused.result.skew.size(), fresh.result.skew.size());
    EXPECT_EQ(reused.result.clock_offsets.size(),
              fresh.result.clock_offsets.size());
    if (fresh.table.pairs.size() <= capacity) {
      EXPECT_EQ(reused.table.pairs.data(), storage);  // no new pages
    }
  }
}

// Each segment solves its clocks relative to its own first node and at its
// own middle; the stream reports them on one reference per connected part
// at the trace's middle, as the in-memory run does. EdgeTrace's requests,
// 36 s of them, with clocks that drift by 10-40 ppm (0.7 ms at the ends),
// in 10 segments: each clock the in-memory run reports, the stream reports
// against the same node, to 20 us and 1 ppm. (Averaging the segments'
// offsets as given put the cache about 70 us off.)
TEST(NestStreamTest, SegmentsClocksAreReportedAsOneTracesClocks) {
  TempDir dir;
  const std::string st = SkewedEdgeTrace(dir);
  std::string out;
  const nlohmann::json mem = Nest(st + " -q --search memory");
  const nlohmann::json stream =
      Nest(st + " --search stream --segment-messages 6600", &out);
  ASSERT_EQ(Reported(out, " segments of 6600"), 10u) << out;
  std::map<std::string, nlohmann::json> streamed;
  for (const auto& c : stream["params"]["clock_offsets"]) {
    streamed[c["node"]] = c;
  }
  const auto& clocks = mem["params"]["clock_offsets"];
  ASSERT_FALSE(clocks.empty()) << mem["params"].dump(1);
  for (const auto& c : clocks) {
    ASSERT_EQ(streamed.count(c["node"]), 1u) << c["node"] << "\n" << out;
    const nlohmann::json& s = streamed[c["node"]];
    EXPECT_EQ(s["reference"], c["reference"]) << out;
    EXPECT_NEAR(s["offset_s"].get<double>(), c["offset_s"].get<double>(),
                20e-6)
        << c["node"] << "\n" << out;
    EXPECT_NEAR(s["drift_ppm"].get<double>(), c["drift_ppm"].get<double>(), 1)
        << c["node"] << "\n" << out;
  }
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
}

// `nest --requests` under the stream driver (RequestSpool): each segment
// spools the requests it owns, written once the patterns are ranked.
std::string NestRequests(const std::string& args, const std::string& requests,
                         nlohmann::json* json = nullptr) {
  TempDir dir;
  std::string out;
  const std::string j = dir.File("r.json");
  EXPECT_EQ(
      RunCli("nest " + args + " -q --json " + j + " --requests " + requests,
             &out),
      0)
      << out;
  if (json != nullptr) *json = nlohmann::json::parse(ReadFile(j));
  return ReadFile(requests);
}

// The rows of a CSV export (RFC 4180: CRLF line ends, fields with a comma
// quoted, quotes doubled; no field of these traces holds a line break).
std::vector<std::vector<std::string>> CsvRows(const std::string& text) {
  std::vector<std::vector<std::string>> rows(1);
  std::string field;
  bool quoted = false;
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (quoted) {
      if (c != '"') {
        field.push_back(c);
      } else if (i + 1 < text.size() && text[i + 1] == '"') {
        field.push_back('"');
        ++i;
      } else {
        quoted = false;
      }
    } else if (c == '"') {
      quoted = true;
    } else if (c == ',') {
      rows.back().push_back(std::move(field));
      field.clear();
    } else if (c == '\r' && i + 1 < text.size() && text[i + 1] == '\n') {
      rows.back().push_back(std::move(field));
      field.clear();
      rows.emplace_back();
      ++i;
    } else {
      field.push_back(c);
    }
  }
  rows.pop_back();  // after the last line end
  return rows;
}

TEST(NestStreamRequestsTest, OneSegmentWritesTheInMemoryBytes) {
  TempDir dir;
  const std::string ops = Maketrace(dir, "multitier-ops", 40000);
  for (const std::string& t :
       {ops, Maketrace(dir, "children-d-cc", 30000, "\nloss 0.01\n")}) {
    for (const char* name :
         {"r.jaeger.json", "r.otlp.json", "r.chrome.json", "r.csv", "r.tsv"}) {
      nlohmann::json mem_json, stream_json;
      const std::string mem =
          NestRequests(t + " --search memory",
                       dir.File(std::string("m-") + name), &mem_json);
      const std::string stream =
          NestRequests(t + " --search stream",
                       dir.File(std::string("s-") + name), &stream_json);
      EXPECT_GT(mem.size(), 1000u) << t << " " << name;
      EXPECT_TRUE(mem == stream) << t << " " << name;
      // The JSON names its requests file: the same counts.
      EXPECT_EQ(mem_json["requests"]["requests"],
                stream_json["requests"]["requests"]);
      EXPECT_EQ(mem_json["requests"]["calls"],
                stream_json["requests"]["calls"]);
    }
  }
  // Standard input is streamed by default, --requests too: the same.
  std::string out;
  const std::string a = dir.File("stdin.csv");
  ASSERT_EQ(RunCli("nest - -q --requests " + a + " < " + ops, &out), 0) << out;
  EXPECT_TRUE(ReadFile(a) ==
              NestRequests(ops + " --search memory", dir.File("m.csv")));
}

TEST(NestStreamRequestsTest, SegmentsWriteEveryRequestOnceWithItsRank) {
  TempDir dir;
  const std::string t = Maketrace(dir, "multitier-normal", 100000);
  std::vector<std::vector<std::string>> mem_rows =
      CsvRows(NestRequests(t + " --search memory", dir.File("m.csv")));
  nlohmann::json json;
  const std::string one =
      NestRequests(t + " --search stream --segment-messages 7000 --threads 1",
                   dir.File("s1.csv"), &json);
  for (int threads : {2, 3}) {
    EXPECT_TRUE(one == NestRequests(t +
                                        " --search stream --segment-messages "
                                        "7000 --threads " +
                                        std::to_string(threads),
                                    dir.File("s.csv")))
        << threads << " threads";
  }
  const std::vector<std::vector<std::string>> rows = CsvRows(one);
  ASSERT_GT(rows.size(), 1000u);
  EXPECT_EQ(rows[0], mem_rows[0]);  // the header
  // Every request once: as many rows as the patterns count, each with its
  // pattern's rank and signature, and the same root calls as in memory.
  const Shares shares = SharesOf(json);
  EXPECT_EQ(rows.size() - 1, shares.requests);
  EXPECT_EQ(json["requests"]["requests"].get<uint64_t>(), shares.requests);
  std::map<std::string, int> ids, mem_ids;
  for (size_t r = 1; r < rows.size(); ++r) {
    ASSERT_EQ(rows[r].size(), 12u) << r;
    ++ids[rows[r][0]];
    const int rank = std::stoi(rows[r][2]);
    ASSERT_GE(rank, 1);
    ASSERT_LE(rank, static_cast<int>(json["patterns"].size()));
    EXPECT_EQ(rows[r][3], json["patterns"][rank - 1]["signature"]) << r;
  }
  for (size_t r = 1; r < mem_rows.size(); ++r) ++mem_ids[mem_rows[r][0]];
  for (const auto& [id, n] : ids) EXPECT_EQ(n, 1) << id;
  EXPECT_EQ(ids, mem_ids);
  // Rows in root call order, across the segments' edges too.
  for (size_t r = 2; r < rows.size(); ++r) {
    EXPECT_LE(rows[r - 1][1], rows[r][1]) << r;
  }

  // --top cuts the export as it cuts the report; the viewers' formats are
  // one JSON document each however many segments wrote them.
  const std::vector<std::vector<std::string>> top = CsvRows(
      NestRequests(t + " --search stream --segment-messages 7000 --top 2",
                   dir.File("top.csv")));
  uint64_t top_count = 0;
  for (int k = 0; k < 2; ++k)
    top_count += json["patterns"][k]["count"].get<uint64_t>();
  EXPECT_EQ(top.size() - 1, top_count);
  for (size_t r = 1; r < top.size(); ++r) EXPECT_LE(std::stoi(top[r][2]), 2);
  const nlohmann::json jaeger = nlohmann::json::parse(
      NestRequests(t + " --search stream --segment-messages 7000",
                   dir.File("r.jaeger.json")));
  EXPECT_EQ(jaeger["data"].size(), shares.requests);
  const nlohmann::json chrome = nlohmann::json::parse(
      NestRequests(t + " --search stream --segment-messages 7000",
                   dir.File("r.chrome.json")));
  EXPECT_GT(chrome["traceEvents"].size(), shares.requests);
}

TEST(NestStreamRequestsTest, AnUnwritableSpoolFolderIsNamed) {
  TempDir dir;
  const std::string t = Maketrace(dir, "multitier-normal", 5000);
  const char* old = std::getenv("TMPDIR");
  const std::string saved = old != nullptr ? old : "";
  setenv("TMPDIR", dir.File("no/such/folder").c_str(), 1);
  std::string out;
  const int rc = RunCli(
      "nest " + t + " -q --search stream --requests " + dir.File("r.csv"),
      &out);
  if (old != nullptr) {
    setenv("TMPDIR", saved.c_str(), 1);
  } else {
    unsetenv("TMPDIR");
  }
  EXPECT_EQ(rc, 1);
  EXPECT_NE(out.find("cannot create the requests' spool file in " +
                     dir.File("no/such/folder")),
            std::string::npos)
      << out;
  EXPECT_FALSE(std::ifstream(dir.File("r.csv")).good());
}

// An output nest cannot write fails before the trace is nested, not after
// a long run: no report is printed, nothing is written.
TEST(NestStreamRequestsTest, AnUnwritableOutputFailsBeforeNesting) {
  TempDir dir;
  const std::string t = Maketrace(dir, "multitier-normal", 5000);
  const std::string missing = dir.File("no/such/folder");
  for (const std::string& flags :
       {"--requests " + missing + "/r.csv", "--json " + missing + "/r.json",
        "--report " + missing + "/r.html",
        "--json " + dir.File("ok.json") + " --requests " + missing +
            "/r.jaeger.json"}) {
    std::string out;
    EXPECT_EQ(RunCli("nest " + t + " --search stream " + flags, &out), 1)
        << flags;
    EXPECT_NE(out.find("cannot create files in folder " + missing),
              std::string::npos)
        << out;
    EXPECT_EQ(out.find("#1 "), std::string::npos) << out;
  }
  EXPECT_FALSE(std::ifstream(dir.File("ok.json")).good());
}

// The stream driver's split across ranks (StreamOptions::rank, ranks,
// gather), here as threads of one process with an in-memory gather, so
// that it runs without MPI and under the sanitizers: every rank reading
// the whole trace, or seeking its own blocks of a binary trace, rank 0's
// result is one process's, to the byte, and a seeking rank decodes only
// part of the trace.
class InProcessRanks {
 public:
  explicit InProcessRanks(int ranks) : ranks_(ranks) {}
  // As MPI_Gatherv: every rank's parts reach rank 0, which waits for all.
  bbprof::Result<bbprof::nesting::StreamOptions::Parts> Gather(
      int rank, const bbprof::nesting::StreamOptions::Parts& mine) {
    std::unique_lock lock(mu_);
    all_.insert(all_.end(), mine.begin(), mine.end());
    ++arrived_;
    cv_.notify_all();
    if (rank != 0) return bbprof::nesting::StreamOptions::Parts{};
    cv_.wait(lock, [&] { return arrived_ == ranks_; });
    return all_;
  }

 private:
  const int ranks_;
  std::mutex mu_;
  std::condition_variable cv_;
  int arrived_ = 0;
  bbprof::nesting::StreamOptions::Parts all_;
};

struct RanksRun {
  std::string json;  // rank 0's result
  std::vector<bbprof::nesting::StreamReport> reports;
};

RanksRun NestOnRanks(const std::string& path, int ranks, bool seek,
                     uint64_t segment) {
  InProcessRanks gather(ranks);
  RanksRun run;
  run.reports.resize(static_cast<size_t>(ranks));
  std::vector<bbprof::Result<bbprof::nesting::NestingResult>> results(
      static_cast<size_t>(ranks), bbprof::Status::Error("not run"));
  std::vector<std::thread> threads;
  for (int r = 0; r < ranks; ++r) {
    threads.emplace_back([&, r] {
      auto reader = bbprof::trace::OpenTraceReader(path);
      if (!reader.ok()) {
        results[static_cast<size_t>(r)] = reader.status();
        return;
      }
      bbprof::nesting::StreamOptions options;
      options.segment_messages = segment;
      options.rank = r;
      options.ranks = ranks;
      options.seek = seek;
      options.gather = [&gather, r](const auto& mine) {
        return gather.Gather(r, mine);
      };
      results[static_cast<size_t>(r)] = bbprof::nesting::RunNestingStream(
          **reader, bbprof::nesting::Params{}, options,
          &run.reports[static_cast<size_t>(r)]);
    });
  }
  for (std::thread& t : threads) t.join();
  for (int r = 0; r < ranks; ++r) {
    EXPECT_TRUE(results[static_cast<size_t>(r)].ok())
        << "rank " << r << ": "
        << results[static_cast<size_t>(r)].status().message();
  }
  if (results[0].ok()) {
    run.json = bbprof::nesting::ResultToJson(*results[0]).dump();
  }
  return run;
}

TEST(NestRanksTest, SeekingOrNotRankZeroHasTheResultOfOneProcess) {
  TempDir dir;
  const std::string bbt = Maketrace(dir, "multitier-normal", 90000);
  // Meta lines amid the messages and after them, in the binary form.
  std::string out;
  const std::string text = dir.File("m.trace");
  ASSERT_EQ(RunCli("convert " + bbt + " " + text, &out), 0) << out;
  std::string lines = ReadFile(text);
  const size_t mid = lines.find('\n', lines.size() / 2) + 1;
  lines.insert(mid, "#meta in the middle\n");
  lines += "#meta after the last message\n";
  const std::string with_meta = dir.Write("meta.trace", lines);
  const std::string seekable = dir.File("meta.bbt");
  ASSERT_EQ(RunCli("convert " + with_meta + " " + seekable, &out), 0) << out;

  constexpr uint64_t kSegment = 20000;
  const RanksRun one = NestOnRanks(seekable, 1, false, kSegment);
  ASSERT_NE(one.json.find("after the last message"), std::string::npos);
  ASSERT_EQ(one.reports[0].messages_read, 90002u);
  for (int ranks : {2, 3}) {
    for (bool seek : {false, true}) {
      const RanksRun run = NestOnRanks(seekable, ranks, seek, kSegment);
      EXPECT_EQ(run.json, one.json) << ranks << " ranks, seek " << seek;
      for (const auto& report : run.reports) {
        EXPECT_EQ(report.seeked, seek);
        EXPECT_EQ(report.segments, one.reports[0].segments);
        if (seek) {
          // Its segments, each with its overlaps and the reach before and
          // after (S + 2V + 2R: 32,500 messages), in whole blocks: on two
          // ranks 75,002 and 65,000 messages before the blocks' rounding.
          EXPECT_LT(report.messages_read, 90002u * 19 / 20);
          EXPECT_GT(report.messages_read, 0u);
        } else {
          EXPECT_EQ(report.messages_read, 90002u);
        }
      }
    }
  }
  // A text trace has no block index: every rank reads it whole, and says
  // why.
  const RanksRun run = NestOnRanks(with_meta, 2, true, kSegment);
  EXPECT_EQ(run.json, NestOnRanks(with_meta, 1, false, kSegment).json);
  EXPECT_FALSE(run.reports[0].seeked);
  EXPECT_NE(run.reports[0].whole_read_why.find("not a bbprof binary trace"),
            std::string::npos)
      << run.reports[0].whole_read_why;
}

// The segments' clocks cross from rank to rank with what they are relative
// to and when they hold (MergeRangeClocks needs both): on the skewed trace
// of SegmentsClocksAreReportedAsOneTracesClocks, two and three ranks give
// rank 0 one process's result, clocks and all.
TEST(NestRanksTest, RanksCarryTheSegmentsClocks) {
  TempDir dir;
  const std::string st = SkewedEdgeTrace(dir);
  const RanksRun one = NestOnRanks(st, 1, false, 6600);
  const nlohmann::json clocks =
      nlohmann::json::parse(one.json)["params"]["clock_offsets"];
  ASSERT_FALSE(clocks.empty()) << one.json.substr(0, 2000);
  EXPECT_FALSE(clocks[0]["reference"].get<std::string>().empty());
  for (int ranks : {2, 3}) {
    EXPECT_EQ(NestOnRanks(st, ranks, false, 6600).json, one.json) << ranks;
  }
}

#ifdef BBPROF_MPI
// The MPI driver (nesting/drivers/mpi_driver.h): two and three ranks on this
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

// --requests under mpirun: every rank spools its own segments' requests
// and rank 0 writes them all, the bytes one process writes; ops and node
// names travel as names (each rank numbers its own).
TEST(NestMpiTest, RanksWriteTheRequestsOfOneProcess) {
  TempDir dir;
  const std::string t = Maketrace(dir, "multitier-ops", 60000);
  for (const char* name : {"r.csv", "r.otlp.json", "r.chrome.json"}) {
    const std::string one =
        NestRequests(t + " --search stream --segment-messages 7000 --threads 1",
                     dir.File(std::string("one-") + name));
    ASSERT_GT(one.size(), 1000u);
    for (int ranks : {2, 3}) {
      std::string out;
      const std::string r = dir.File(std::string("mpi-") + name);
      ASSERT_EQ(
          RunMpi(ranks,
                 "nest " + t + " -q --segment-messages 7000 --requests " + r,
                 &out),
          0)
          << out;
      EXPECT_TRUE(ReadFile(r) == one) << name << " on " << ranks << " ranks";
    }
  }
}

// The rank's share of the trace's messages that it decoded, from nest's
// "rank 0 decoded X of the Y messages" line; -1 if there is none.
double DecodedShare(const std::string& out) {
  const size_t at = out.find("rank 0 decoded ");
  unsigned long long x = 0, y = 0;
  if (at == std::string::npos ||
      std::sscanf(out.c_str() + at, "rank 0 decoded %llu of the %llu", &x,
                  &y) != 2 ||
      y == 0) {
    return -1;
  }
  return static_cast<double>(x) / static_cast<double>(y);
}

// With the block index of a binary trace, each rank decodes only the
// blocks of its own segments (StreamOptions::seek), and the result is
// still one process's, to the byte: the input's size, CRC-32, node count
// and folded names, and its meta lines in file order, also those in the
// middle of the trace and after its last message (a capture's footer). A
// text trace, or renamed nodes, fall back to every rank reading it all,
// and nest says so.
TEST(NestMpiTest, RanksSeekOnlyTheirBlocksOfABinaryTrace) {
  TempDir dir;
  const std::string text = dir.File("m.trace");
  std::string out;
  ASSERT_EQ(RunCli("maketrace " + std::string(BBPROF_SOURCE_DIR) +
                       "/samples/multitier-normal.conf -q --seed 3 "
                       "--messages 120000 -o " +
                       text,
                   &out),
            0)
      << out;
  // Meta lines among the messages: every 9,973 lines (some inside a
  // segment's overlap, on either side of its edge), and after the last
  // message.
  std::string with_meta;
  {
    const std::string lines = ReadFile(text);
    size_t line = 0;
    for (size_t at = 0; at < lines.size();) {
      const size_t eol = lines.find('\n', at);
      with_meta.append(lines, at, eol - at + 1);
      at = eol + 1;
      if (++line % 9973 == 0) {
        with_meta += "#meta mid " + std::to_string(line) + "\n";
      }
    }
    with_meta += "#meta footer packets=123\n#meta footer end\n";
  }
  const std::string meta_text = dir.Write("meta.trace", with_meta);
  const std::string bbt = dir.File("meta.bbt");
  ASSERT_EQ(RunCli("convert " + meta_text + " " + bbt, &out), 0) << out;

  for (const std::string& flags :
       {std::string("--segment-messages 20000 --threads 1"),
        std::string("--segment-messages 20000 --threads 2 --max-nodes 4"),
        std::string("--segment-messages 45000 --threads 1")}) {
    const nlohmann::json one = Nest(bbt + " -q --search stream " + flags);
    ASSERT_GE(one["input"]["meta"].size(), 4u);
    EXPECT_EQ(one["input"]["meta"].back(), "footer end");
    for (int ranks : {2, 3}) {
      const std::string json = dir.File("mpi.json");
      ASSERT_EQ(
          RunMpi(ranks, "nest " + bbt + " " + flags + " --json " + json, &out),
          0)
          << out;
      EXPECT_EQ(nlohmann::json::parse(ReadFile(json)).dump(), one.dump())
          << flags << " on " << ranks << " ranks";
      EXPECT_EQ(out.find("every rank read the whole trace"), std::string::npos)
          << out;
      // Rank 0 holds every ranks-th segment, with its overlaps and its
      // reach after (S + 2V + R: 1.34 S), decodes the reach before it for
      // the calls carried in (0.28 S), and reads whole blocks of about
      // 6,500 messages: under 0.93 of the trace on two ranks (0.81-0.86
      // without the blocks), under 0.7 on three (0.49-0.54).
      const double share = DecodedShare(out);
      EXPECT_GT(share, 0) << out;
      EXPECT_LT(share, ranks == 2 ? 0.93 : 0.7) << flags << "\n" << out;
    }
  }
  // Folded names are warned about from the counts, as in one process.
  ASSERT_EQ(RunMpi(2, "nest " + bbt + " --segment-messages 20000 --max-nodes 4",
                   &out),
            0)
      << out;
  EXPECT_NE(out.find("more than 4 distinct node names"), std::string::npos)
      << out;

  // The text form and renamed nodes: every rank reads it all, same bytes.
  const std::string flags = "--segment-messages 20000";
  for (const auto& [input, why] :
       std::vector<std::pair<std::string, std::string>>{
           {meta_text, "not a bbprof binary trace"},
           {bbt + " --granularity service", "renames nodes"}}) {
    const nlohmann::json one = Nest(input + " -q --search stream " + flags);
    const std::string json = dir.File("mpi.json");
    ASSERT_EQ(
        RunMpi(2, "nest " + input + " " + flags + " --json " + json, &out), 0)
        << out;
    EXPECT_EQ(nlohmann::json::parse(ReadFile(json)).dump(), one.dump())
        << input;
    EXPECT_NE(out.find("every rank read the whole trace"), std::string::npos)
        << out;
    EXPECT_NE(out.find(why), std::string::npos) << out;
    EXPECT_EQ(DecodedShare(out), 1.0) << out;
  }
}
#endif

}  // namespace
