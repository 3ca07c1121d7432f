#include "convolution/path_graph.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <random>
#include <set>
#include <tuple>

#include "tests/util/temp_dir.h"
#include "trace/timestamp.h"

namespace bbprof::convolution {
namespace {

using testing::TempDir;

using Msg = std::tuple<trace::TimeNs, std::string, std::string>;

MessageSet Load(std::vector<Msg> msgs, const TempDir& dir) {
  std::sort(msgs.begin(), msgs.end());
  std::string text = "#bbprof-trace 1\n";
  for (auto& [t, a, b] : msgs) {
    text += trace::FormatTimestamp(t) + "\tMSG\t" + a + "\t" + b + "\t-\n";
  }
  const std::string path = dir.Write("t.trace", text);
  auto r = trace::OpenTraceReader(path);
  EXPECT_TRUE(r.ok());
  auto m = LoadMessages(**r);
  EXPECT_TRUE(m.ok()) << m.status().message();
  return std::move(*m);
}

constexpr trace::TimeNs kMs = 1'000'000;

Params Defaults() {
  Params p;
  p.quantum_ns = kMs;
  EXPECT_TRUE(ResolveParams(p).ok());
  return p;
}

// Poisson arrivals of A->B; B forwards to C after 30 ms; C to D after 12 ms.
std::vector<Msg> Chain(std::mt19937_64& rng, int n) {
  std::vector<Msg> m;
  std::exponential_distribution<double> gap(20.0);
  double t = 100.0;
  for (int i = 0; i < n; ++i) {
    t += gap(rng);
    const auto ns = static_cast<trace::TimeNs>(t * 1e9);
    m.emplace_back(ns, "A", "B");
    m.emplace_back(ns + 30 * kMs, "B", "C");
    m.emplace_back(ns + 42 * kMs, "C", "D");
  }
  return m;
}

const Path* FindPath(const PathGraph& g, std::vector<std::string> nodes) {
  for (const Path& p : g.paths)
    if (p.nodes == nodes) return &p;
  return nullptr;
}

TEST(FindPaths, ChainWithKnownDelays) {
  TempDir dir;
  std::mt19937_64 rng(1);
  MessageSet m = Load(Chain(rng, 1000), dir);
  auto g = FindPaths(m, Defaults());
  ASSERT_TRUE(g.ok());
  ASSERT_EQ(g->paths.size(), 1u);
  const Path* p = FindPath(*g, {"A", "B", "C", "D"});
  ASSERT_NE(p, nullptr);
  ASSERT_EQ(p->delays_s.size(), 3u);
  EXPECT_EQ(p->delays_s[0], 0.0);
  EXPECT_NEAR(p->delays_s[1], 0.030, 0.001);
  EXPECT_NEAR(p->delays_s[2], 0.012, 0.001);
  EXPECT_EQ(p->count, 1000u);
  EXPECT_EQ(g->roots, std::vector<std::string>{"A"});
}

TEST(FindPaths, FanOut) {
  TempDir dir;
  std::mt19937_64 rng(2);
  std::vector<Msg> m;
  std::exponential_distribution<double> gap(10.0);
  std::bernoulli_distribution coin(0.5);
  double t = 0;
  for (int i = 0; i < 2000; ++i) {
    t += gap(rng);
    const auto ns = static_cast<trace::TimeNs>(t * 1e9);
    m.emplace_back(ns, "client", "web");
    if (coin(rng)) {
      m.emplace_back(ns + 5 * kMs, "web", "db");
    } else {
      m.emplace_back(ns + 80 * kMs, "web", "cache");
    }
  }
  auto g = FindPaths(Load(m, dir), Defaults());
  ASSERT_TRUE(g.ok());
  ASSERT_EQ(g->paths.size(), 2u);
  const Path* db = FindPath(*g, {"client", "web", "db"});
  const Path* cache = FindPath(*g, {"client", "web", "cache"});
  ASSERT_NE(db, nullptr);
  ASSERT_NE(cache, nullptr);
  EXPECT_NEAR(db->delays_s[1], 0.005, 0.001);
  EXPECT_NEAR(cache->delays_s[1], 0.080, 0.001);
  EXPECT_EQ(db->count + cache->count, 2000u);
}

TEST(FindPaths, CycleIsSuppressed) {
  // A->B, B->C, C->B, B->C ... : a ping-pong that would recurse forever.
  TempDir dir;
  std::mt19937_64 rng(3);
  std::vector<Msg> m;
  std::exponential_distribution<double> gap(5.0);
  double t = 0;
  for (int i = 0; i < 1000; ++i) {
    t += gap(rng);
    const auto ns = static_cast<trace::TimeNs>(t * 1e9);
    m.emplace_back(ns, "A", "B");
    for (int k = 0; k < 6; ++k) {
      m.emplace_back(ns + (2 * k + 1) * 3 * kMs, "B", "C");
      m.emplace_back(ns + (2 * k + 2) * 3 * kMs, "C", "B");
    }
  }
  Params p = Defaults();
  auto g = FindPaths(Load(m, dir), p);
  ASSERT_TRUE(g.ok());
  EXPECT_GT(g->suppressed_cycles, 0u);
  for (const Path& path : g->paths) {
    // No edge repeats on a path.
    std::set<std::pair<std::string, std::string>> seen;
    for (size_t h = 1; h < path.nodes.size(); ++h) {
      EXPECT_TRUE(seen.insert({path.nodes[h - 1], path.nodes[h]}).second);
    }
    EXPECT_LE(path.nodes.size(), 4u);
  }
  EXPECT_NE(FindPath(*g, {"A", "B", "C", "B"}), nullptr);
}

TEST(FindPaths, IndependentNoiseProducesNoPaths) {
  TempDir dir;
  std::mt19937_64 rng(4);
  std::uniform_real_distribution<double> u(0, 500);
  std::vector<Msg> m;
  for (int i = 0; i < 5000; ++i) {
    m.emplace_back(static_cast<trace::TimeNs>(u(rng) * 1e9), "A", "B");
    m.emplace_back(static_cast<trace::TimeNs>(u(rng) * 1e9), "B", "C");
    m.emplace_back(static_cast<trace::TimeNs>(u(rng) * 1e9), "C", "D");
  }
  auto g = FindPaths(Load(m, dir), Defaults());
  ASSERT_TRUE(g.ok());
  ASSERT_EQ(g->paths.size(), 1u);
  EXPECT_EQ(g->paths[0].nodes, (std::vector<std::string>{"A", "B"}));
}

TEST(FindPaths, MinCountDropsRareEdges) {
  TempDir dir;
  std::mt19937_64 rng(5);
  MessageSet m = Load(Chain(rng, 8), dir);
  Params p = Defaults();
  p.min_count = 9;
  auto g = FindPaths(m, p);
  ASSERT_TRUE(g.ok());
  EXPECT_TRUE(g->paths.empty());
}

// In RPC traffic every node receives (clients get returns); the default
// roots are then the nodes that make calls and are never called.
TEST(FindPaths, RpcTraceDefaultsToTheCallersThatAreNeverCalled) {
  TempDir dir;
  std::mt19937_64 rng(5);
  std::exponential_distribution<double> gap(20.0);
  std::vector<std::tuple<trace::TimeNs, std::string>> lines;
  double t = 100.0;
  for (int i = 0; i < 400; ++i) {
    t += gap(rng);
    const auto ns = static_cast<trace::TimeNs>(t * 1e9);
    const std::string id = std::to_string(i);
    lines.emplace_back(ns, "CALL\tclient\tweb\t" + id);
    lines.emplace_back(ns + 2 * kMs, "CALL\tweb\tdb\t" + id);
    lines.emplace_back(ns + 7 * kMs, "RET\tdb\tweb\t" + id);
    lines.emplace_back(ns + 9 * kMs, "RET\tweb\tclient\t" + id);
  }
  std::sort(lines.begin(), lines.end());
  std::string text = "#bbprof-trace 1\n";
  for (auto& [ts, rest] : lines) text += trace::FormatTimestamp(ts) + "\t" + rest + "\n";
  auto r = trace::OpenTraceReader(dir.Write("rpc.trace", text));
  ASSERT_TRUE(r.ok());
  auto m = LoadMessages(**r);
  ASSERT_TRUE(m.ok());
  auto g = FindPaths(*m, Defaults());
  ASSERT_TRUE(g.ok()) << g.status().message();
  EXPECT_EQ(g->roots, std::vector<std::string>{"client"});
  EXPECT_NE(FindPath(*g, {"client", "web", "db", "web", "client"}), nullptr);
}

TEST(FindPaths, MaxDepthAndBadRoots) {
  TempDir dir;
  std::mt19937_64 rng(6);
  MessageSet m = Load(Chain(rng, 500), dir);
  Params p = Defaults();
  p.max_depth = 2;
  auto g = FindPaths(m, p);
  ASSERT_TRUE(g.ok());
  ASSERT_EQ(g->paths.size(), 1u);
  EXPECT_EQ(g->paths[0].nodes, (std::vector<std::string>{"A", "B", "C"}));
  p.roots = {"nosuch"};
  EXPECT_FALSE(FindPaths(m, p).ok());
  p.roots = {"D"};
  EXPECT_FALSE(FindPaths(m, p).ok());
  p.roots = {"B"};
  auto gb = FindPaths(m, p);
  ASSERT_TRUE(gb.ok());
  EXPECT_EQ(gb->paths[0].nodes, (std::vector<std::string>{"B", "C", "D"}));
}

TEST(ResolveParams, RejectsBadValues) {
  Params p;
  p.quantum_ns = 0;
  EXPECT_FALSE(ResolveParams(p).ok());
  p = Params{};
  p.spikes.valley_sigma = 5;
  EXPECT_FALSE(ResolveParams(p).ok());
  p = Params{};
  p.quantum_ns = 1;
  p.max_delay_ns = kMaxLagQuanta * 2;
  EXPECT_FALSE(ResolveParams(p).ok());
  p = Params{};
  EXPECT_TRUE(ResolveParams(p).ok());
  EXPECT_EQ(p.max_delay_ns, 1000 * p.quantum_ns);
  // Per spike (section 5.2.2): a spread spike's own window where widening
  // catches more caused messages than coincidences, else one quantum.
  EXPECT_TRUE(p.spread_windows);
  EXPECT_FALSE(p.spread_always);
  p = Params{};
  p.spread_windows = false;
  EXPECT_TRUE(ResolveParams(p).ok());
  EXPECT_EQ(p.tolerance_ns, p.quantum_ns);  // the paper's v, one quantum
}

TEST(LoadMessages, EmptyTraceIsAnError) {
  TempDir dir;
  auto r = trace::OpenTraceReader(dir.Write("e.trace", "#bbprof-trace 1\n"));
  ASSERT_TRUE(r.ok());
  auto m = LoadMessages(**r);
  ASSERT_FALSE(m.ok());
  EXPECT_NE(m.status().message().find("no messages"), std::string::npos);
}

TEST(ResultJson, ShapeFollowsSpec) {
  TempDir dir;
  std::mt19937_64 rng(1);
  MessageSet m = Load(Chain(rng, 300), dir);
  Params p = Defaults();
  auto g = FindPaths(m, p);
  ASSERT_TRUE(g.ok());
  auto j = nlohmann::json::parse(ResultJson(m, p, *g, "t.trace"));
  EXPECT_EQ(j["tool"], "bbprof convolve");
  EXPECT_EQ(j["version"], "0.1.0");
  EXPECT_EQ(j["input"]["path"], "t.trace");
  EXPECT_EQ(j["input"]["messages"], 900);
  EXPECT_TRUE(j["input"]["duration_s"].is_number());
  EXPECT_EQ(j["params"]["quantum_s"], 0.001);
  EXPECT_EQ(j["params"]["spike_sigma"], 4.0);
  EXPECT_EQ(j["params"]["valley_sigma"], 3.0);
  EXPECT_EQ(j["params"]["variance_s"], 0.001);
  EXPECT_EQ(j["roots"], nlohmann::json::array({"A"}));
  ASSERT_EQ(j["vertices"].size(), 4u);
  EXPECT_EQ(j["vertices"][0]["id"], 0);
  EXPECT_EQ(j["vertices"][0]["node"], "A");
  ASSERT_EQ(j["edges"].size(), 3u);
  EXPECT_EQ(j["edges"][0]["from"], 0);
  EXPECT_EQ(j["edges"][0]["to"], 1);
  EXPECT_EQ(j["edges"][0]["count"], 300);
  EXPECT_EQ(j["edges"][0]["delays"][0]["delay_s"], 0.0);
  EXPECT_TRUE(j["edges"][1]["delays"][0]["count"].is_number_integer());
  ASSERT_EQ(j["paths"].size(), 1u);
  EXPECT_EQ(j["paths"][0]["nodes"],
            nlohmann::json::array({"A", "B", "C", "D"}));
  EXPECT_EQ(j["paths"][0]["delays_s"].size(), 3u);
  EXPECT_EQ(j["paths"][0]["count"], 300);
}

}  // namespace
}  // namespace bbprof::convolution
