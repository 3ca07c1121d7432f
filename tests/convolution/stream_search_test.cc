// The streaming path search against the in-memory one: the same result
// document, byte for byte, on random and hand-made traces cut into many
// windows; its memory bound; its errors.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <random>
#include <string>
#include <tuple>
#include <vector>

#include "convolution/path_graph.h"
#include "tests/util/temp_dir.h"
#include "trace/reader.h"
#include "trace/timestamp.h"

namespace bbprof::convolution {
namespace {

using testing::TempDir;
using trace::TimeNs;

constexpr TimeNs kMs = 1'000'000;

struct Line {
  TimeNs ts;
  std::string kind, from, to;
  bool operator<(const Line& o) const {
    return std::tie(ts, kind, from, to) < std::tie(o.ts, o.kind, o.from, o.to);
  }
};

std::string TraceText(std::vector<Line> lines) {
  std::stable_sort(lines.begin(), lines.end());
  std::string text = "#bbprof-trace 1\n";
  for (const Line& l : lines) {
    text += trace::FormatTimestamp(l.ts) + "\t" + l.kind + "\t" + l.from +
            "\t" + l.to + "\t-\n";
  }
  return text;
}

ReaderFactory Opener(const std::string& path) {
  return [path] { return trace::OpenTraceReader(path); };
}

struct Both {
  std::string memory_json, stream_json;
  PathGraph memory, stream;
};

// Runs both searches on the trace at path; the JSON names the input "t".
// When the in-memory search fails (a bad --root), the streaming one must
// fail with the same message; the documents are then the messages.
Both RunBoth(const std::string& path, const Params& p,
             const StreamOptions& o) {
  Both b;
  auto r = trace::OpenTraceReader(path);
  EXPECT_TRUE(r.ok());
  auto m = LoadMessages(**r);
  EXPECT_TRUE(m.ok()) << m.status().message();
  auto g = FindPaths(*m, p);
  auto s = FindPathsStreaming(Opener(path), p, o);
  EXPECT_EQ(g.ok(), s.ok()) << s.status().message();
  if (!g.ok() || !s.ok()) {
    b.memory_json = g.status().message();
    b.stream_json = s.status().message();
    return b;
  }
  b.memory = *g;
  b.memory_json = ResultJson(*m, p, *g, "t");
  b.stream = s->graph;
  b.stream_json = ResultJson(s->summary, p, s->graph, "t");
  return b;
}

void ExpectSameWork(const PathGraph& a, const PathGraph& b) {
  EXPECT_EQ(a.correlations, b.correlations);
  EXPECT_EQ(a.sparse_correlations, b.sparse_correlations);
  EXPECT_EQ(a.fft_correlations, b.fft_correlations);
  EXPECT_EQ(a.suppressed_cycles, b.suppressed_cycles);
  EXPECT_EQ(a.suppressed_rare, b.suppressed_rare);
}

// Random causal traffic: roots send to the nodes of a random forwarding
// table, each node forwards with some probability after a fixed delay plus
// jitter (a few hops at most, cycles allowed), plus independent noise.
// Times sit on a 100 us grid so that equal timestamps occur.  dense: busy
// traffic at a coarse quantum, where the search picks FFT blocks.
std::vector<Line> RandomTraffic(std::mt19937_64& rng, bool dense) {
  std::uniform_int_distribution<int> nodes_d(3, 6);
  const int nodes = nodes_d(rng);
  auto name = [](int n) { return "n" + std::to_string(n); };
  struct Hop {
    int to;
    double delay_s, prob;
  };
  std::vector<std::vector<Hop>> table(static_cast<size_t>(nodes));
  std::uniform_int_distribution<int> node_d(1, nodes - 1);
  std::uniform_real_distribution<double> delay_d(dense ? 0.05 : 0.001,
                                                 dense ? 1.5 : 0.15);
  std::uniform_real_distribution<double> u(0, 1);
  for (auto& hops : table) {
    const int n = 1 + static_cast<int>(u(rng) * 2);
    for (int h = 0; h < n; ++h)
      hops.push_back({node_d(rng), delay_d(rng), 0.4 + 0.6 * u(rng)});
  }
  const double duration = dense ? 40.0 : 30.0;
  const double rate = dense ? 60.0 : 40.0;
  const double jitter = dense ? 0.003 : 0.0003 * u(rng);
  std::normal_distribution<double> jit(0, 1);
  std::exponential_distribution<double> gap(rate);
  std::vector<Line> out;
  auto grid = [](double t) {
    return static_cast<TimeNs>(std::llround(t * 1e4)) * 100'000;
  };
  const bool calls = u(rng) < 0.3;
  std::vector<std::tuple<double, int, int>> pending;  // time, node, hops left
  for (double t = 1.0 + u(rng); t < duration; t += gap(rng)) {
    const Hop& h = table[0][static_cast<size_t>(u(rng) * table[0].size())];
    out.push_back({grid(t), calls ? "CALL" : "MSG", name(0), name(h.to)});
    pending.emplace_back(t, h.to, 4);
  }
  while (!pending.empty()) {
    auto [t, n, left] = pending.back();
    pending.pop_back();
    if (left == 0) continue;
    for (const Hop& h : table[static_cast<size_t>(n)]) {
      if (u(rng) >= h.prob) continue;
      const double te = t + std::max(0.0, h.delay_s + jitter * jit(rng));
      out.push_back({grid(te), "MSG", name(n), name(h.to)});
      pending.emplace_back(te, h.to, left - 1);
    }
  }
  const size_t noise = out.size() / 5;
  for (size_t i = 0; i < noise; ++i) {
    const int a = node_d(rng), b = node_d(rng);
    out.push_back({grid(1.0 + u(rng) * duration), "MSG", name(a), name(b)});
  }
  return out;
}

Params RandomParams(std::mt19937_64& rng, bool dense) {
  std::uniform_real_distribution<double> u(0, 1);
  Params p;
  const TimeNs mus[] = {kMs / 2, kMs, 2 * kMs};
  p.quantum_ns = dense ? 10 * kMs : mus[static_cast<int>(u(rng) * 3)];
  p.max_delay_ns = p.quantum_ns * (dense ? 200 : 20 + static_cast<TimeNs>(u(rng) * 280));
  const double t = u(rng);
  p.spread_windows = t < 0.4;
  p.spread_always = t < 0.2;  // auto; else the default per-spike choice
  p.tolerance_ns = t < 0.6 ? 0 : static_cast<TimeNs>(u(rng) * 3.0 * static_cast<double>(p.quantum_ns));
  const uint64_t counts[] = {1, 3, 5};
  p.min_count = counts[static_cast<int>(u(rng) * 3)];
  p.max_depth = 2 + static_cast<int>(u(rng) * 6);
  p.spikes.spike_sigma = u(rng) < 0.5 ? 3.0 : 4.0;
  p.spikes.valley_sigma = u(rng) < 0.5 ? 2.0 : 2.5;
  // Now and then explicit roots, one of which may send nothing (an error
  // both searches must report alike).
  if (u(rng) < 0.25) p.roots = {"n1", "n0", "n2"};
  EXPECT_TRUE(ResolveParams(p).ok());
  return p;
}

TEST(ConvolutionStream, SameJsonAsInMemoryOnRandomTraces) {
  TempDir dir;
  uint64_t sparse = 0, fft = 0, edges = 0, paths = 0;
  for (int seed = 1; seed <= 24; ++seed) {
    std::mt19937_64 rng(static_cast<uint64_t>(seed));
    const bool dense = seed % 4 == 0;
    const std::string path =
        dir.Write("r" + std::to_string(seed) + ".trace",
                  TraceText(RandomTraffic(rng, dense)));
    const Params p = RandomParams(rng, dense);
    StreamOptions o;
    // Windows of down to one quantum; the dense traces (long FFT blocks,
    // so wide margins) get fewer, longer ones to keep the test quick.
    const int64_t chunks[] = {0, 13, 97, 500, 1};
    const int64_t dense_chunks[] = {0, 41, 97, 500};
    o.chunk_quanta = dense ? dense_chunks[seed / 4 % 4] : chunks[seed % 5];
    if (seed % 3 == 0) o.correlation_bytes = 1;  // one vertex per pass
    o.spool = seed % 2 == 1;
    SCOPED_TRACE("seed " + std::to_string(seed) + " chunk " +
                 std::to_string(o.chunk_quanta));
    const Both b = RunBoth(path, p, o);
    EXPECT_EQ(b.stream_json, b.memory_json);
    ExpectSameWork(b.stream, b.memory);
    // Without a correlation (no root sends) the scan is the only pass.
    EXPECT_EQ(b.stream.passes > 1, b.memory.correlations > 0);
    sparse += b.memory.sparse_correlations;
    fft += b.memory.fft_correlations;
    edges += b.memory.edges.size();
    paths += b.memory.paths.size();
  }
  // The cases cover both correlation methods and find real paths.
  EXPECT_GT(sparse, 0u);
  EXPECT_GT(fft, 0u);
  EXPECT_GT(edges, 48u);
  EXPECT_GT(paths, 24u);
}

// The repository's RPC sample (samples/multitier-small.trace), cut into
// windows of 700 quanta (0.7 s and 7 s, against a 1000-quantum delay
// range): 16 paths at 1 ms, 6 at 10 ms.
TEST(ConvolutionStream, SameJsonOnTheMultitierSample) {
  const std::string path =
      std::string(BBPROF_SOURCE_DIR) + "/samples/multitier-small.trace";
  for (TimeNs mu : {kMs, 10 * kMs}) {
    Params p;
    p.quantum_ns = mu;
    ASSERT_TRUE(ResolveParams(p).ok());
    for (int64_t chunk : {0, 700}) {
      StreamOptions o;
      o.chunk_quanta = chunk;
      o.spool = chunk == 700;
      const Both b = RunBoth(path, p, o);
      EXPECT_EQ(b.stream_json, b.memory_json) << mu << " " << chunk;
      ExpectSameWork(b.stream, b.memory);
      EXPECT_GE(b.memory.paths.size(), 6u);
    }
  }
}

// A -> B, B forwards to C 30 ms later; with 100-quantum windows starting at
// the first message (t = 0), every cause lies just before a window boundary
// and its effect just after (or exactly on it).
TEST(ConvolutionStream, CauseAndEffectOnEitherSideOfAWindowBoundary) {
  TempDir dir;
  std::vector<Line> lines;
  lines.push_back({0, "MSG", "A", "B"});
  for (int i = 1; i <= 200; ++i) {
    const TimeNs boundary = i * 100 * kMs;
    const TimeNs cause = boundary - (i % 2 == 0 ? 30 * kMs : 10 * kMs);
    lines.push_back({cause, "MSG", "A", "B"});
    lines.push_back({cause + 30 * kMs, "MSG", "B", "C"});
  }
  lines.push_back({0 + 30 * kMs, "MSG", "B", "C"});
  const std::string path = dir.Write("edge.trace", TraceText(lines));
  Params p;
  p.quantum_ns = kMs;
  p.max_delay_ns = 50 * kMs;
  ASSERT_TRUE(ResolveParams(p).ok());
  for (int64_t chunk : {100, 1, 3, 0}) {
    StreamOptions o;
    o.chunk_quanta = chunk;
    SCOPED_TRACE(chunk);
    const Both b = RunBoth(path, p, o);
    EXPECT_EQ(b.stream_json, b.memory_json);
    ASSERT_EQ(b.stream.paths.size(), 1u);
    EXPECT_EQ(b.stream.paths[0].nodes,
              (std::vector<std::string>{"A", "B", "C"}));
    EXPECT_EQ(b.stream.paths[0].count, 201u);
    EXPECT_DOUBLE_EQ(b.stream.paths[0].delays_s[1], 0.030);
  }
}

// Three hops whose claims chain across boundaries: level 2's messages are
// decided from level 1's in the previous window.
TEST(ConvolutionStream, ChainedClaimsAcrossBoundaries) {
  TempDir dir;
  std::mt19937_64 rng(7);
  std::exponential_distribution<double> gap(15.0);
  std::vector<Line> lines;
  double t = 0.5;
  for (int i = 0; i < 1500; ++i) {
    t += gap(rng);
    const auto ns = static_cast<TimeNs>(t * 1e9);
    lines.push_back({ns, "MSG", "A", "B"});
    lines.push_back({ns + 37 * kMs, "MSG", "B", "C"});
    lines.push_back({ns + 81 * kMs, "MSG", "C", "D"});
    lines.push_back({ns + 90 * kMs, "MSG", "D", "A"});
  }
  const std::string path = dir.Write("chain.trace", TraceText(lines));
  Params p;
  p.quantum_ns = kMs;
  p.max_delay_ns = 60 * kMs;
  ASSERT_TRUE(ResolveParams(p).ok());
  for (int64_t chunk : {5, 41, 250}) {
    StreamOptions o;
    o.chunk_quanta = chunk;
    const Both b = RunBoth(path, p, o);
    EXPECT_EQ(b.stream_json, b.memory_json);
    ExpectSameWork(b.stream, b.memory);
  }
  const Both b = RunBoth(path, p, {});
  // Every node receives, so every sender is a root (docs/convolution.md).
  ASSERT_EQ(b.stream.paths.size(), 4u);
  EXPECT_EQ(b.stream.paths[0].nodes,
            (std::vector<std::string>{"A", "B", "C", "D", "A"}));
  EXPECT_EQ(b.stream.paths[0].count, 1500u);
  EXPECT_NEAR(b.stream.paths[0].delays_s[2], 0.044, 1e-9);
}

// Few messages over a long time at epoch timestamps (the email traces of
// Table 1): windows are skipped over the quiet stretches and never
// overflow the time range.
TEST(ConvolutionStream, SparseTraceOverMonths) {
  TempDir dir;
  std::mt19937_64 rng(5);
  std::uniform_real_distribution<double> when(0, 5.1e6);
  std::normal_distribution<double> jit(0, 1);
  std::vector<Line> lines;
  const TimeNs epoch = 1'000'000'000 * trace::kNsPerSecond;
  for (int i = 0; i < 600; ++i) {
    const double t = when(rng);
    auto at = [&](double s) {
      return epoch + static_cast<TimeNs>(s * 1e9);
    };
    lines.push_back({at(t), "MSG", "A", "B"});
    lines.push_back({at(t + 10 + jit(rng)), "MSG", "B", "C"});
    lines.push_back({at(t + 40 + jit(rng)), "MSG", "C", "D"});
  }
  const std::string path = dir.Write("mail.trace", TraceText(lines));
  Params p;
  p.quantum_ns = 5 * trace::kNsPerSecond;
  p.max_delay_ns = 3600 * trace::kNsPerSecond;
  ASSERT_TRUE(ResolveParams(p).ok());
  for (int64_t chunk : {0, 1, 1000}) {
    StreamOptions o;
    o.chunk_quanta = chunk;
    o.chunk_messages = 100;
    const Both b = RunBoth(path, p, o);
    EXPECT_EQ(b.stream_json, b.memory_json);
    EXPECT_NE(b.memory.paths.size(), 0u);
  }
}

// The point of streaming: the messages held at once depend on the rate and
// the delay range, not on the duration.
TEST(ConvolutionStream, HoldsAWindowNotTheTrace) {
  TempDir dir;
  auto make = [&](int n, const std::string& name) {
    std::mt19937_64 rng(11);
    std::exponential_distribution<double> gap(50.0);
    std::vector<Line> lines;
    double t = 0;
    for (int i = 0; i < n; ++i) {
      t += gap(rng);
      const auto ns = static_cast<TimeNs>(t * 1e9);
      lines.push_back({ns, "MSG", "lb", "web"});
      lines.push_back({ns + 2 * kMs, "MSG", "web", "app"});
      lines.push_back({ns + 3 * kMs, "MSG", "app", "db"});
    }
    return dir.Write(name, TraceText(lines));
  };
  const std::string one = make(30000, "one.trace");  // 90,000 messages
  const std::string two = make(60000, "two.trace");  // twice as long
  Params p;
  p.quantum_ns = kMs / 10;
  p.max_delay_ns = 100 * kMs;
  ASSERT_TRUE(ResolveParams(p).ok());
  StreamOptions o;
  o.chunk_messages = 2000;
  const Both a = RunBoth(one, p, o);
  const Both b = RunBoth(two, p, o);
  EXPECT_EQ(a.stream_json, a.memory_json);
  EXPECT_EQ(b.stream_json, b.memory_json);
  EXPECT_EQ(a.memory.peak_buffered_messages, 90000u);
  EXPECT_EQ(b.memory.peak_buffered_messages, 180000u);
  EXPECT_LT(a.stream.peak_buffered_messages, 4000u);
  EXPECT_LT(b.stream.peak_buffered_messages, 4000u);
  // Scan, level 1's costs, then correlate + claim for web and for app.
  EXPECT_EQ(a.stream.passes, 6u);
}

TEST(ConvolutionStream, ErrorsAreTheInMemoryOnes) {
  TempDir dir;
  std::string text = "#bbprof-trace 1\n";
  for (int i = 0; i < 50; ++i)
    text += trace::FormatTimestamp(i * kMs) + "\tMSG\tA\tB\t-\n";
  text += "1.0\tMSGX\tA\tB\t-\n";
  const std::string bad = dir.Write("bad.trace", text);
  Params p;
  ASSERT_TRUE(ResolveParams(p).ok());
  auto r = trace::OpenTraceReader(bad);
  ASSERT_TRUE(r.ok());
  auto m = LoadMessages(**r);
  ASSERT_FALSE(m.ok());
  auto s = FindPathsStreaming(Opener(bad), p);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.status().message(), m.status().message());
  EXPECT_NE(s.status().message().find("bad.trace:52"), std::string::npos)
      << s.status().message();

  const std::string empty = dir.Write("empty.trace", "#bbprof-trace 1\n");
  auto e = FindPathsStreaming(Opener(empty), p);
  ASSERT_FALSE(e.ok());
  EXPECT_NE(e.status().message().find("no messages"), std::string::npos);

  auto missing = FindPathsStreaming(Opener(dir.File("missing.trace")), p);
  EXPECT_FALSE(missing.ok());

  const std::string good = dir.Write(
      "good.trace", TraceText({{0, "MSG", "A", "B"}, {kMs, "MSG", "B", "C"}}));
  p.roots = {"nosuch"};
  auto nr = FindPathsStreaming(Opener(good), p);
  ASSERT_FALSE(nr.ok());
  EXPECT_NE(nr.status().message().find("no such node"), std::string::npos);
}

// A file rewritten between two passes is reported, not half-read.
TEST(ConvolutionStream, InputThatChangesBetweenPassesIsAnError) {
  TempDir dir;
  std::mt19937_64 rng(3);
  std::vector<Line> lines;
  for (int i = 0; i < 100; ++i) {
    lines.push_back({i * 50 * kMs, "MSG", "A", "B"});
    lines.push_back({i * 50 * kMs + 5 * kMs, "MSG", "B", "C"});
  }
  const std::string full = dir.Write("full.trace", TraceText(lines));
  lines.resize(150);
  const std::string cut = dir.Write("cut.trace", TraceText(lines));
  int opened = 0;
  const ReaderFactory open = [&] {
    return trace::OpenTraceReader(opened++ == 0 ? full : cut);
  };
  Params p;
  ASSERT_TRUE(ResolveParams(p).ok());
  auto s = FindPathsStreaming(open, p);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.status().message().find("changed"), std::string::npos)
      << s.status().message();
}

// With a spool the input is read once, even when it could not be read
// again, and the passes after the first read the spooled copy.
TEST(ConvolutionStream, SpoolReadsTheInputOnce) {
  TempDir dir;
  std::mt19937_64 rng(21);
  const std::string path =
      dir.Write("spool.trace", TraceText(RandomTraffic(rng, false)));
  Params p;
  p.quantum_ns = kMs;
  p.max_delay_ns = 150 * kMs;
  ASSERT_TRUE(ResolveParams(p).ok());
  int opened = 0;
  const ReaderFactory open = [&] {
    ++opened;
    return trace::OpenTraceReader(path);
  };
  SearchOptions o;
  o.mode = SearchMode::kStream;
  o.stream.spool = true;
  o.stream.chunk_quanta = 50;
  auto s = Convolve(open, /*reopenable=*/false, p, o);
  ASSERT_TRUE(s.ok()) << s.status().message();
  EXPECT_EQ(opened, 1);
  EXPECT_GT(s->graph.passes, 2u);
  const Both b = RunBoth(path, p, o.stream);
  EXPECT_EQ(ResultJson(s->summary, p, s->graph, "t"), b.memory_json);
  EXPECT_FALSE(b.memory.paths.empty());
}

TEST(ConvolutionStream, SpoolThatCannotBeCreatedIsAnError) {
  TempDir dir;
  const std::string path = dir.Write(
      "s.trace", TraceText({{0, "MSG", "A", "B"}, {kMs, "MSG", "B", "C"}}));
  const char* old = std::getenv("TMPDIR");
  const std::string saved = old != nullptr ? old : "";
  setenv("TMPDIR", dir.File("no/such/folder").c_str(), 1);
  Params p;
  ASSERT_TRUE(ResolveParams(p).ok());
  StreamOptions o;
  o.spool = true;
  auto s = FindPathsStreaming(Opener(path), p, o);
  if (old != nullptr) {
    setenv("TMPDIR", saved.c_str(), 1);
  } else {
    unsetenv("TMPDIR");
  }
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.status().message().find("spool"), std::string::npos);
  EXPECT_NE(s.status().message().find("no/such/folder"), std::string::npos)
      << s.status().message();
}

TEST(ConvolutionStream, AutoChoosesBySizeAndNeverStreamsWhatCannotBeReread) {
  TempDir dir;
  std::vector<Line> lines;
  for (int i = 0; i < 400; ++i) {
    lines.push_back({i * 37 * kMs, "MSG", "A", "B"});
    lines.push_back({i * 37 * kMs + 4 * kMs, "MSG", "B", "C"});
  }
  const std::string path = dir.Write("auto.trace", TraceText(lines));
  Params p;
  ASSERT_TRUE(ResolveParams(p).ok());
  SearchOptions o;
  o.stream_above_messages = 1000;
  auto small = Convolve(Opener(path), true, p, o);
  ASSERT_TRUE(small.ok());
  EXPECT_EQ(small->graph.passes, 1u);
  o.stream_above_messages = 799;
  auto big = Convolve(Opener(path), true, p, o);
  ASSERT_TRUE(big.ok());
  // The read given up at 799 messages, then the streaming passes.
  EXPECT_GT(big->graph.passes, 2u);
  EXPECT_GE(big->graph.peak_buffered_messages, 799u);
  EXPECT_EQ(ResultJson(big->summary, p, big->graph, "t"),
            ResultJson(small->summary, p, small->graph, "t"));
  o.mode = SearchMode::kStream;
  auto once = Convolve(Opener(path), false, p, o);
  ASSERT_TRUE(once.ok());
  EXPECT_EQ(once->graph.passes, 1u);
  auto forced = Convolve(Opener(path), true, p, o);
  ASSERT_TRUE(forced.ok());
  EXPECT_GT(forced->graph.passes, 1u);
  o.mode = SearchMode::kMemory;
  o.stream_above_messages = 1;
  auto memory = Convolve(Opener(path), true, p, o);
  ASSERT_TRUE(memory.ok());
  EXPECT_EQ(memory->graph.passes, 1u);
}

}  // namespace
}  // namespace bbprof::convolution
