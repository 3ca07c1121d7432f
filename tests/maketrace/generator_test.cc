// Statistical and structural tests of the generator. Tolerances are a few
// standard errors of the quantity measured (z = 5: a correct generator fails
// with probability below 1e-6 per check), never fudge factors; the seeds are
// fixed, so the tests are deterministic anyway.
#include "maketrace/generator.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "maketrace/config.h"
#include "maketrace/run.h"
#include "tests/util/temp_dir.h"
#include "trace/reader.h"

namespace bbprof::maketrace {
namespace {

using bbprof::testing::ReadFile;
using bbprof::testing::TempDir;
using trace::Kind;
using trace::TimeNs;

constexpr double kZ = 5;

struct Line {
  TimeNs ts;
  Kind kind;
  std::string sender, receiver, callid, pathid, op;
};

std::vector<Line> ReadAll(const std::string& path,
                          std::vector<std::string>* meta = nullptr) {
  std::vector<Line> out;
  auto r = trace::OpenTraceReader(path);
  EXPECT_TRUE(r.ok()) << r.status().message();
  if (!r.ok()) return out;
  trace::Record rec;
  while ((*r)->Next(rec)) {
    out.push_back(
        {rec.ts_ns, rec.kind, std::string((*r)->nodes().Name(rec.sender)),
         std::string((*r)->nodes().Name(rec.receiver)), std::string(rec.callid),
         std::string(rec.pathid), std::string(rec.op)});
  }
  EXPECT_TRUE((*r)->status().ok()) << (*r)->status().message();
  if (meta != nullptr) *meta = (*r)->meta();
  return out;
}

Config MustParse(const std::string& text) {
  Result<Config> c = ParseConfig(text, "test.conf");
  EXPECT_TRUE(c.ok()) << c.status().message();
  return c.ok() ? *c : Config();
}

RunSummary MustRun(const Config& c, const std::string& out, uint64_t seed = 1,
                   const std::string& views = "") {
  RunOptions o;
  o.output = out;
  o.seed = seed;
  o.quiet = true;
  o.per_host_dir = views;
  Result<RunSummary> s = RunMaketrace(c, o);
  EXPECT_TRUE(s.ok()) << s.status().message();
  return s.ok() ? *s : RunSummary();
}

struct Sample {
  double n = 0, sum = 0, sum2 = 0;
  void Add(double x) {
    n += 1;
    sum += x;
    sum2 += x * x;
  }
  double Mean() const { return sum / n; }
  double Sd() const { return std::sqrt((sum2 - sum * sum / n) / (n - 1)); }
};

// Checks a sample of a Gaussian(mean, sd): mean within kZ standard errors,
// SD within kZ standard errors of an SD (sd / sqrt(2(n-1))).
void ExpectGaussian(const Sample& s, double mean, double sd, const char* what) {
  ASSERT_GT(s.n, 100) << what;
  EXPECT_NEAR(s.Mean(), mean, kZ * sd / std::sqrt(s.n) + 1) << what;
  EXPECT_NEAR(s.Sd(), sd, kZ * sd / std::sqrt(2 * (s.n - 1)) + 1) << what;
}

const char kTree[] =
    "duration 200s\n"
    "tracelet t instances=8 think=50ms..150ms\n"
    "  C -> S1|S2 proc=2ms±0.5ms\n"
    "    -> A delay=1ms±0.2ms proc=5ms±1ms\n"
    "    -> B delay=3ms±0.6ms proc=4ms±1ms parallel\n"
    "    -> D delay=2ms±0.4ms proc=6ms±1.5ms parallel\n"
    "      -> E delay=1ms±0.25ms proc=3ms±0.75ms\n";

// Groups a trace by path id.
std::map<std::string, std::vector<Line>> ByPath(
    const std::vector<Line>& lines) {
  std::map<std::string, std::vector<Line>> m;
  for (const Line& l : lines) m[l.pathid].push_back(l);
  return m;
}

TEST(GeneratorTest, InstancesHaveTheConfiguredStructureAndTiming) {
  TempDir dir;
  Config c = MustParse(kTree);
  RunSummary sum = MustRun(c, dir.File("t.trace"));
  std::vector<Line> lines = ReadAll(dir.File("t.trace"));
  ASSERT_EQ(lines.size(), sum.written);
  ASSERT_EQ(sum.gen.messages, sum.written);
  auto paths = ByPath(lines);
  // Every message has a path id; every instance is complete (last ones too).
  EXPECT_EQ(paths.count(""), 0u);
  EXPECT_EQ(paths.size(), sum.gen.instances_per_tracelet[0]);
  std::set<std::string> seen_callids;  // caller/callee/callid
  Sample a_delay, a_proc, b_delay, d_delay, e_delay, e_proc, s_proc;
  std::set<std::string> front;
  for (auto& [pid, msgs] : paths) {
    ASSERT_EQ(msgs.size(), 10u) << "path " << pid;
    // Match calls and returns.
    struct Call {
      TimeNs call, ret;
      std::string caller, callee;
    };
    std::map<std::string, Call> calls;  // by callee name (unique per path)
    for (const Line& l : msgs) {
      if (l.kind == Kind::kCall) {
        EXPECT_TRUE(
            seen_callids.insert(l.sender + ">" + l.receiver + "#" + l.callid)
                .second)
            << "callid reused: " << l.callid;
        calls[l.receiver] = {l.ts, -1, l.sender, l.receiver};
      }
    }
    for (const Line& l : msgs) {
      if (l.kind != Kind::kReturn) continue;
      ASSERT_TRUE(calls.count(l.sender)) << "RET without CALL in " << pid;
      Call& k = calls[l.sender];
      EXPECT_EQ(k.caller, l.receiver);
      k.ret = l.ts;
    }
    ASSERT_EQ(calls.size(), 5u);
    const std::string ws = calls.count("S1") ? "S1" : "S2";
    front.insert(ws);
    ASSERT_TRUE(calls.count(ws) && calls.count("A") && calls.count("B") &&
                calls.count("D") && calls.count("E"));
    const Call &s = calls[ws], &a = calls["A"], &b = calls["B"],
               &d = calls["D"], &e = calls["E"];
    EXPECT_EQ(s.caller, "C");
    EXPECT_EQ(a.caller, ws);
    EXPECT_EQ(e.caller, "D");
    for (const Call* k : {&s, &a, &b, &d, &e}) {
      EXPECT_GE(k->ret, k->call);
    }
    // Nesting: children inside their parent; B and D (a parallel group) start
    // after A returns; S returns after both.
    EXPECT_GE(a.call, s.call);
    EXPECT_GE(b.call, a.ret);
    EXPECT_GE(d.call, a.ret);
    EXPECT_GE(e.call, d.call);
    EXPECT_LE(e.ret, d.ret);
    EXPECT_GE(s.ret, std::max(b.ret, d.ret));
    a_delay.Add(a.call - s.call);
    a_proc.Add(a.ret - a.call);
    b_delay.Add(b.call - a.ret);
    d_delay.Add(d.call - a.ret);
    e_delay.Add(e.call - d.call);
    e_proc.Add(e.ret - e.call);
    s_proc.Add(s.ret - std::max(b.ret, d.ret));
  }
  EXPECT_EQ(front.size(), 2u);  // both pool members used
  ExpectGaussian(a_delay, 1e6, 0.2e6, "A delay");
  ExpectGaussian(a_proc, 5e6, 1e6, "A proc");
  ExpectGaussian(b_delay, 3e6, 0.6e6, "B delay");
  ExpectGaussian(d_delay, 2e6, 0.4e6, "D delay");
  ExpectGaussian(e_delay, 1e6, 0.25e6, "E delay");
  ExpectGaussian(e_proc, 3e6, 0.75e6, "E proc");
  ExpectGaussian(s_proc, 2e6, 0.5e6, "S proc");
}

TEST(GeneratorTest, ThinkTimesAreUniformAndClientsRunInParallel) {
  TempDir dir;
  // One client: its instances never overlap, and the gap between one's
  // return and the next call is the think time, uniform in [1 s, 3 s].
  Config c = MustParse(
      "duration 4000s\n"
      "tracelet t instances=1 think=1s..3s\n"
      "  C -> S proc=10ms\n");
  MustRun(c, dir.File("t.trace"));
  std::vector<Line> lines = ReadAll(dir.File("t.trace"));
  Sample think;
  TimeNs last_ret = -1;
  for (const Line& l : lines) {
    if (l.kind == Kind::kCall && last_ret >= 0) {
      const double g = static_cast<double>(l.ts - last_ret);
      EXPECT_GE(g, 1e9);
      EXPECT_LE(g, 3e9);
      think.Add(g);
    }
    if (l.kind == Kind::kReturn) {
      EXPECT_EQ(l.ts - lines[&l - &lines[0] - 1].ts, 10'000'000);
      last_ret = l.ts;
    }
  }
  const double sd = 2e9 / std::sqrt(12.0);
  ASSERT_GT(think.n, 1000);
  EXPECT_NEAR(think.Mean(), 2e9, kZ * sd / std::sqrt(think.n));
  EXPECT_NEAR(think.Sd(), sd,
              kZ * sd / std::sqrt(think.n));  // uniform: kurtosis 1.8

  // N clients, each alternating a 100 ms call and a think time uniform in
  // [50, 150] ms: by Little's law N * 100 / (100 + 100) = 15 calls are open
  // at S on average over time. About 15,000 cycles give a relative standard
  // error near 1%; allow 5%.
  Config p = MustParse(
      "duration 100s\n"
      "tracelet t instances=30 think=50ms..150ms\n"
      "  C -> S proc=100ms±10ms\n");
  RunSummary sum = MustRun(p, dir.File("p.trace"));
  EXPECT_LE(sum.gen.max_in_flight, 30u);  // never more than the clients
  EXPECT_GT(sum.gen.max_in_flight, 15u);
  double busy = 0;
  std::map<std::string, TimeNs> open;
  for (const Line& l : ReadAll(dir.File("p.trace"))) {
    if (l.kind == Kind::kCall) open[l.callid] = l.ts;
    if (l.kind == Kind::kReturn)
      busy += static_cast<double>(l.ts - open[l.callid]);
  }
  EXPECT_NEAR(busy / 100e9, 15, 15 * 0.05);
  // The per-arrival measure counts the arriving call too, so it lies between
  // 1 and N and near the time average.
  EXPECT_GT(sum.gen.MeanParallelism(), 12);
  EXPECT_LT(sum.gen.MeanParallelism(), 18);
}

TEST(GeneratorTest, OpenArrivalsAreAPoissonStream) {
  TempDir dir;
  Config c = MustParse(
      "duration 1000s\n"
      "tracelet t rate=20/s\n"
      "  C -> S proc=200ms±20ms\n");
  RunSummary sum = MustRun(c, dir.File("t.trace"));
  const double n = static_cast<double>(sum.gen.instances_per_tracelet[0]);
  EXPECT_NEAR(n, 20000, kZ * std::sqrt(20000.0));
  // Arrivals do not wait for each other: about rate x latency = 4 in flight.
  EXPECT_NEAR(sum.gen.MeanParallelism(), 5, 0.2);
}

TEST(GeneratorTest, SameSeedSameBytesOtherSeedOtherBytes) {
  TempDir dir;
  Config c = MustParse(std::string(kTree) +
                       "noise oneway=3/s nodes=X|Y|Z timeout=1% "
                       "duplicate=1%\nloss 2%\nsniffer rate=2000/s queue=4\n");
  MustRun(c, dir.File("a.trace"), 42);
  MustRun(c, dir.File("b.trace"), 42);
  MustRun(c, dir.File("c.trace"), 43);
  const std::string a = ReadFile(dir.File("a.trace"));
  EXPECT_GT(a.size(), 100000u);
  EXPECT_EQ(a, ReadFile(dir.File("b.trace")));
  EXPECT_NE(a, ReadFile(dir.File("c.trace")));
}

TEST(GeneratorTest, RandomLossRemovesTheConfiguredFractionOnly) {
  TempDir dir;
  Config c = MustParse(std::string(kTree));
  MustRun(c, dir.File("full.trace"), 5);
  c.loss_probability = 0.1;
  RunSummary sum = MustRun(c, dir.File("lossy.trace"), 5);
  std::vector<Line> full = ReadAll(dir.File("full.trace"));
  std::vector<Line> lossy = ReadAll(dir.File("lossy.trace"));
  const double n = static_cast<double>(full.size());
  EXPECT_EQ(sum.random_drops + lossy.size(), full.size());
  EXPECT_NEAR(static_cast<double>(sum.random_drops), 0.1 * n,
              kZ * std::sqrt(n * 0.1 * 0.9));
  // The lossy trace is the full one with lines removed.
  size_t j = 0;
  for (const Line& l : full) {
    if (j < lossy.size() && l.ts == lossy[j].ts &&
        l.callid == lossy[j].callid && l.pathid == lossy[j].pathid) {
      ++j;
    }
  }
  EXPECT_EQ(j, lossy.size());
}

TEST(GeneratorTest, SnifferDropsWhatOverflowsItsQueue) {
  // 1000 packets/s (1 ms each), room for 2 waiting: a burst of 10 at once
  // keeps 3 (one captured at once, two queued).
  SnifferModel s(1000, 2);
  int kept = 0;
  for (int i = 0; i < 10; ++i) kept += s.Accept(5'000'000'000) ? 1 : 0;
  EXPECT_EQ(kept, 3);
  // 1.5 ms later one slot has freed (the first finished at +1 ms).
  EXPECT_TRUE(s.Accept(5'001'500'000));
  EXPECT_FALSE(s.Accept(5'001'500'000));
  // Once drained, packets at the capture rate are all kept.
  for (int i = 0; i < 100; ++i)
    EXPECT_TRUE(s.Accept(6'000'000'000 + i * 1'000'000));

  // In a trace: below the capture rate nothing is lost; far below the
  // message rate most is.
  TempDir dir;
  Config c = MustParse(kTree);  // about 600 messages/s
  c.sniffer_rate_per_s = 100000;
  c.sniffer_queue = 64;
  EXPECT_EQ(MustRun(c, dir.File("a.trace")).sniffer_drops, 0u);
  c.sniffer_rate_per_s = 300;
  RunSummary sum = MustRun(c, dir.File("b.trace"));
  const double gen = static_cast<double>(sum.gen.messages);
  EXPECT_NEAR(static_cast<double>(sum.written), 300 * 200, 300 * 200 * 0.01);
  EXPECT_GT(static_cast<double>(sum.sniffer_drops), 0.3 * gen);
  std::vector<std::string> meta;
  ReadAll(dir.File("b.trace"), &meta);
  ASSERT_EQ(meta.size(), 2u);
  EXPECT_NE(meta[1].find("sniffer_drops=" + std::to_string(sum.sniffer_drops)),
            std::string::npos);
}

TEST(GeneratorTest, NoiseTimeoutsDuplicatesAndOneWayMessages) {
  TempDir dir;
  Config c = MustParse(std::string(kTree) +
                       "noise timeout=5% duplicate=2% after=100ms±10ms\n"
                       "noise oneway=10/s nodes=X|Y|Z\n");
  RunSummary sum = MustRun(c, dir.File("t.trace"));
  std::vector<Line> lines = ReadAll(dir.File("t.trace"));
  std::map<std::string, int> calls, rets, all;  // by sender>receiver#callid
  uint64_t oneway = 0;
  for (const Line& l : lines) {
    if (l.pathid.empty()) {
      ++oneway;
      EXPECT_EQ(l.kind, Kind::kMessage);
      EXPECT_NE(l.sender, l.receiver);
      continue;
    }
    const std::string key = l.kind == Kind::kCall
                                ? l.sender + ">" + l.receiver + "#" + l.callid
                                : l.receiver + ">" + l.sender + "#" + l.callid;
    (l.kind == Kind::kCall ? calls : rets)[key]++;
  }
  EXPECT_EQ(oneway, sum.gen.oneway_noise);
  EXPECT_NEAR(static_cast<double>(oneway), 2000, kZ * std::sqrt(2000.0));
  uint64_t missing = 0;
  for (auto& [k, n] : calls) missing += rets.count(k) ? 0 : 1;
  const double ncalls = static_cast<double>(calls.size());
  EXPECT_EQ(missing, sum.gen.timeouts);
  EXPECT_NEAR(static_cast<double>(missing), 0.05 * ncalls,
              kZ * std::sqrt(ncalls * 0.05 * 0.95));
  const double msgs = static_cast<double>(
      sum.gen.messages - sum.gen.oneway_noise - sum.gen.duplicates);
  EXPECT_NEAR(static_cast<double>(sum.gen.duplicates), 0.02 * msgs,
              kZ * std::sqrt(msgs * 0.02 * 0.98));
  uint64_t dup_lines = 0;
  for (auto& [k, n] : calls) dup_lines += n - 1;
  for (auto& [k, n] : rets) dup_lines += n - 1;
  EXPECT_EQ(dup_lines, sum.gen.duplicates);
}

TEST(GeneratorTest, CallidModes) {
  TempDir dir;
  Config c = MustParse(std::string(kTree) + "callids reuse=3\n");
  MustRun(c, dir.File("r.trace"));
  std::set<std::string> ids;
  for (const Line& l : ReadAll(dir.File("r.trace"))) ids.insert(l.callid);
  EXPECT_EQ(ids, (std::set<std::string>{"1", "2", "3"}));
  c.callids = CallidMode::kNone;
  MustRun(c, dir.File("n.trace"));
  for (const Line& l : ReadAll(dir.File("n.trace"))) ASSERT_EQ(l.callid, "");
}

TEST(GeneratorTest, MessageTraceletsForwardHopByHop) {
  TempDir dir;
  Config c = MustParse(
      "messages 30000\n"
      "tracelet relay style=message rate=50/s\n"
      "  in -> M1|M2\n"
      "    -> H delay=10s±1s\n"
      "      -> B1 delay=5ms±1ms\n"
      "      -> B2 delay=7ms±1ms\n");
  RunSummary sum = MustRun(c, dir.File("t.trace"));
  // Instances are completed: at least the count asked for, at most one
  // instance's worth more per instance in flight.
  EXPECT_GE(sum.gen.messages, 30000u);
  EXPECT_LE(sum.gen.messages, 30000u + 4 * (sum.gen.max_in_flight + 1));
  auto paths = ByPath(ReadAll(dir.File("t.trace")));
  Sample hop, b1;
  for (auto& [pid, msgs] : paths) {
    ASSERT_EQ(msgs.size(), 4u);
    for (const Line& l : msgs) {
      ASSERT_EQ(l.kind, Kind::kMessage);
      ASSERT_EQ(l.callid, "");
    }
    EXPECT_EQ(msgs[0].sender, "in");
    EXPECT_EQ(msgs[1].sender, msgs[0].receiver);
    EXPECT_EQ(msgs[1].receiver, "H");
    hop.Add(msgs[1].ts - msgs[0].ts);
    const Line& to_b1 = msgs[2].receiver == "B1" ? msgs[2] : msgs[3];
    b1.Add(to_b1.ts - msgs[1].ts);
  }
  ExpectGaussian(hop, 10e9, 1e9, "hop");
  ExpectGaussian(b1, 5e6, 1e6, "B1");
}

// An 'after-return' child is sent its delay after the call into its node
// returned, and does not hold that return back (an asynchronous server).
TEST(GeneratorTest, AfterReturnChildLeavesAfterItsCallerReturned) {
  TempDir dir;
  Config c = MustParse(
      "messages 20000\n"
      "tracelet t instances=4 think=10ms..20ms\n"
      "  client -> S proc=1ms±0.2ms\n"
      "    -> X after-return delay=2ms±0.4ms proc=3ms±0.5ms\n");
  MustRun(c, dir.File("t.trace"));
  Sample gap, latency;
  for (auto& [pid, msgs] : ByPath(ReadAll(dir.File("t.trace")))) {
    ASSERT_EQ(msgs.size(), 4u);
    // In time order: the call into S, its return, then S's call to X and
    // X's return.
    EXPECT_EQ(msgs[0].receiver, "S");
    EXPECT_EQ(msgs[1].kind, Kind::kReturn);
    EXPECT_EQ(msgs[1].receiver, "client");
    EXPECT_EQ(msgs[2].receiver, "X");
    latency.Add(msgs[1].ts - msgs[0].ts);
    gap.Add(msgs[2].ts - msgs[1].ts);
  }
  ExpectGaussian(latency, 1e6, 0.2e6, "S's latency, without X");
  ExpectGaussian(gap, 2e6, 0.4e6, "S's return to its call to X");
  Result<Config> bad = ParseConfig(
      "messages 10\ntracelet m style=message\n  a -> b\n    -> c "
      "after-return\n",
      "m.conf");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("m.conf:4"), std::string::npos)
      << bad.status().message();
}

TEST(GeneratorTest, RootAlternativesFollowTheirWeights) {
  TempDir dir;
  Config c = MustParse(
      "duration 500s\n"
      "tracelet t instances=10 think=10ms..20ms\n"
      "  C -> A proc=1ms weight=3\n"
      "  C -> B proc=1ms\n");
  MustRun(c, dir.File("t.trace"));
  double a = 0, n = 0;
  for (const Line& l : ReadAll(dir.File("t.trace"))) {
    if (l.kind != Kind::kCall) continue;
    n += 1;
    a += l.receiver == "A" ? 1 : 0;
  }
  EXPECT_NEAR(a / n, 0.75, kZ * std::sqrt(0.75 * 0.25 / n));
}

TEST(GeneratorTest, PerHostViewsSeeEveryMessageTwice) {
  TempDir dir;
  Config c =
      MustParse(std::string(kTree) + "network delay=300us±100us min=50us\n");
  c.duration_ns = 20e9;
  const std::string views = dir.File("views");
  RunSummary sum = MustRun(c, dir.File("t.trace"), 9, views);
  std::vector<Line> main = ReadAll(dir.File("t.trace"));
  // key: sender>receiver kind callid pathid -> main trace timestamp
  auto key = [](const Line& l) {
    return l.sender + ">" + l.receiver + " " +
           std::string(trace::KindName(l.kind)) + " " + l.callid + " " +
           l.pathid;
  };
  std::map<std::string, TimeNs> sent;
  for (const Line& l : main) sent[key(l)] = l.ts;
  ASSERT_EQ(sent.size(), main.size());
  std::map<std::string, int> seen_send, seen_recv;
  Sample net;
  size_t files = 0;
  for (const auto& f : std::filesystem::directory_iterator(views)) {
    ++files;
    std::string host = f.path().stem().string();
    ASSERT_EQ(FileNameFor(host), host);
    std::vector<std::string> meta;
    std::vector<Line> lines = ReadAll(f.path().string(), &meta);
    ASSERT_FALSE(meta.empty());
    EXPECT_NE(meta[0].find("capture_host=" + host), std::string::npos);
    for (const Line& l : lines) {
      auto it = sent.find(key(l));
      ASSERT_NE(it, sent.end());
      if (l.sender == host) {
        EXPECT_EQ(l.ts, it->second);
        seen_send[key(l)]++;
      } else {
        ASSERT_EQ(l.receiver, host);
        EXPECT_GE(l.ts - it->second, 50'000);
        net.Add(l.ts - it->second);
        seen_recv[key(l)]++;
      }
    }
  }
  EXPECT_EQ(files, sum.per_host_files);
  EXPECT_EQ(seen_send.size(), main.size());
  EXPECT_EQ(seen_recv.size(), main.size());
  for (auto& [k, n] : seen_send) EXPECT_EQ(n, 1) << k;
  for (auto& [k, n] : seen_recv) EXPECT_EQ(n, 1) << k;
  // Truncation at 50 us (2.5 SD below the mean) moves the mean a little:
  // compare with a generous-but-principled bound of 1% of the mean.
  EXPECT_NEAR(net.Mean(), 300e3, 3e3 + kZ * 100e3 / std::sqrt(net.n));
}

TEST(GeneratorTest, RefusesToOverflowTimestamps) {
  TempDir dir;
  Result<Config> d = ParseConfig(
      "start 4000000000\nmessages 1G\ntracelet t rate=1/h\n  a -> b\n",
      "big.conf");
  ASSERT_TRUE(d.ok());
  RunOptions o;
  o.output = dir.File("t.trace");
  o.quiet = true;
  Result<RunSummary> r = RunMaketrace(*d, o);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().message(),
            "big.conf: the trace would run past the year 2116 (the last "
            "timestamp the trace format holds): lower the length or raise the "
            "tracelets' rates");
  EXPECT_EQ(ReadFile(dir.File("t.trace")), "");
}

TEST(GeneratorTest, HostFileNamesAreEscaped) {
  EXPECT_EQ(FileNameFor("WS1"), "WS1");
  EXPECT_EQ(FileNameFor("10.0.0.1:80"), "10.0.0.1:80");
  EXPECT_EQ(FileNameFor("/mylist.jsp"), "%2Fmylist.jsp");
  EXPECT_EQ(FileNameFor(".."), "%2E.");
}

TEST(GeneratorTest, SamplesParseAndTheMultitierSizesMatchTable1) {
  for (const auto& f : std::filesystem::directory_iterator(
           std::string(BBPROF_SOURCE_DIR) + "/samples")) {
    if (f.path().extension() != ".conf") continue;
    Result<Config> c = LoadConfig(f.path().string());
    EXPECT_TRUE(c.ok()) << c.status().message();
  }
  TempDir dir;
  Result<Config> c = LoadConfig(std::string(BBPROF_SOURCE_DIR) +
                                "/samples/multitier-short.conf");
  ASSERT_TRUE(c.ok());
  RunSummary sum = MustRun(*c, dir.File("t.trace"));
  EXPECT_NEAR(static_cast<double>(sum.gen.messages), 20164, 1000);
}

}  // namespace
}  // namespace bbprof::maketrace

namespace bbprof::maketrace {
namespace {

// The added-delay sample: only WS2 waits 200 ms more between its return from
// AUTH and its call to AP1|AP2 (section 7.2).
TEST(GeneratorTest, AddedDelaySampleDelaysOnlyWs2) {
  TempDir dir;
  Result<Config> c = LoadConfig(std::string(BBPROF_SOURCE_DIR) +
                                "/samples/multitier-added-delay.conf");
  ASSERT_TRUE(c.ok()) << c.status().message();
  c->duration_ns = 60e9;
  MustRun(*c, dir.File("t.trace"));
  Sample ws1, ws2;
  for (auto& [pid, msgs] : ByPath(ReadAll(dir.File("t.trace")))) {
    TimeNs auth_ret = -1, ap_call = -1;
    std::string ws;
    for (const Line& l : msgs) {
      if (l.kind == Kind::kReturn && l.sender == "AUTH") auth_ret = l.ts;
      if (l.kind == Kind::kCall && l.receiver.starts_with("AP")) {
        ap_call = l.ts;
        ws = l.sender;
      }
    }
    if (ap_call < 0) continue;  // login or static
    ASSERT_GE(auth_ret, 0);
    (ws == "WS2" ? ws2 : ws1).Add(static_cast<double>(ap_call - auth_ret));
  }
  ExpectGaussian(ws1, 2e6, 0.5e6, "WS1 gap");
  ExpectGaussian(ws2, 202e6, 0.5e6, "WS2 gap");
}

// op= names a call's operation on its CALL and its RET; clients=N spreads
// the root caller over N addresses, each picked per instance.
TEST(GeneratorTest, OperationsAndClientAddresses) {
  TempDir dir;
  Config c = MustParse(
      "messages 4000\n"
      "tracelet t instances=20 think=1ms..2ms clients=5\n"
      "  client -> web proc=1ms op=http:GET:/item/{n}\n"
      "    -> db delay=1ms proc=1ms op=pg:SELECT:items\n"
      "    -> cache delay=1ms proc=1ms\n");
  MustRun(c, dir.File("o.trace"));
  std::set<std::string> clients;
  size_t lines = 0;
  for (const Line& l : ReadAll(dir.File("o.trace"))) {
    ++lines;
    const std::string& callee = l.kind == Kind::kCall ? l.receiver : l.sender;
    const std::string& caller = l.kind == Kind::kCall ? l.sender : l.receiver;
    if (callee == "web") {
      EXPECT_EQ(l.op, "http:GET:/item/{n}");
      clients.insert(caller);
    } else if (callee == "db") {
      EXPECT_EQ(l.op, "pg:SELECT:items");
    } else {
      EXPECT_EQ(l.op, "");
    }
  }
  EXPECT_GT(lines, 4000u);
  EXPECT_EQ(clients, (std::set<std::string>{"10.9.0.1", "10.9.0.2", "10.9.0.3",
                                            "10.9.0.4", "10.9.0.5"}));
}

}  // namespace
}  // namespace bbprof::maketrace
