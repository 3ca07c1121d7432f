// Spread delays (section 5.2.2): without --tolerance each spike matches
// within its own spread, measured on the correlation (MatchWindows); with
// one, within a fixed +-v.  Exact checks on constructed correlations, a
// hand-made trace with a known Gaussian delay, the streaming search against
// the in-memory one on spread traces, and the email-relay sample's figures.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <nlohmann/json.hpp>
#include <random>
#include <sstream>
#include <string>
#include <tuple>
#include <vector>

#include "convolution/path_graph.h"
#include "convolution/search_steps.h"
#include "tests/util/temp_dir.h"
#include "trace/reader.h"
#include "trace/timestamp.h"

namespace bbprof::convolution {
namespace {

using internal::MatchWindow;
using testing::TempDir;
using trace::TimeNs;

constexpr TimeNs kMs = 1'000'000;
constexpr int64_t kLag = 200;

Params Auto() {
  Params p;
  p.spread_windows = true;
  p.spread_always = true;
  p.quantum_ns = kMs;
  p.max_delay_ns = kLag * kMs;
  EXPECT_TRUE(ResolveParams(p).ok());
  EXPECT_TRUE(p.spread_windows);
  return p;
}

// The default: a spread spike's window only where widening pays.
Params Default() {
  Params p = Auto();
  p.spread_always = false;
  return p;
}

// A flat correlation of 2*kLag+1 points at 10, with a small deterministic
// ripple so that the standard deviation is never zero.
std::vector<double> Flat() {
  std::vector<double> c(2 * kLag + 1);
  for (size_t i = 0; i < c.size(); ++i) c[i] = 10.0 + 0.5 * ((i * 7) % 3);
  return c;
}

void AddGaussian(std::vector<double>& c, double center_delay_q, double sd_q,
                 double height) {
  for (size_t i = 0; i < c.size(); ++i) {
    const double x = static_cast<double>(i) - kLag - center_delay_q;
    c[i] += height * std::exp(-x * x / (2 * sd_q * sd_q));
  }
}

std::vector<MatchWindow> Windows(const std::vector<double>& c,
                                 const Params& p) {
  const std::vector<Spike> spikes = internal::CausalSpikes(c, kLag, p.spikes);
  return internal::MatchWindows(c, kLag, spikes, p);
}

TEST(MatchWindows, SharpSpikeKeepsOneQuantumEitherSide) {
  std::vector<double> c = Flat();
  c[kLag + 30] += 200;
  const auto w = Windows(c, Auto());
  ASSERT_EQ(w.size(), 1u);
  EXPECT_EQ(w[0].delay, 30 * kMs);
  EXPECT_EQ(w[0].lo, 29 * kMs);
  EXPECT_EQ(w[0].hi, 31 * kMs);
}

TEST(MatchWindows, TwoPointSpikeIsStillSharp) {
  // A fixed delay that straddles a quantum boundary shows on two points.
  std::vector<double> c = Flat();
  c[kLag + 30] += 200;
  c[kLag + 31] += 150;
  const auto w = Windows(c, Auto());
  ASSERT_EQ(w.size(), 1u);
  EXPECT_EQ(w[0].delay, 30 * kMs);
  EXPECT_EQ(w[0].lo, 29 * kMs);
  EXPECT_EQ(w[0].hi, 31 * kMs);
}

TEST(MatchWindows, ExplicitToleranceIsFixed) {
  std::vector<double> c = Flat();
  AddGaussian(c, 100, 8, 60);
  Params p = Auto();
  p.spread_windows = false;
  p.tolerance_ns = 3 * kMs;
  const auto w = Windows(c, p);
  ASSERT_EQ(w.size(), 1u);
  // The largest point (99 or 100 with the ripple), +-3 quanta.
  EXPECT_NEAR(static_cast<double>(w[0].delay), 100.0 * kMs, 1.0 * kMs);
  EXPECT_EQ(w[0].lo, w[0].delay - 3 * kMs);
  EXPECT_EQ(w[0].hi, w[0].delay + 3 * kMs);
}

TEST(MatchWindows, GaussianSpikeCoversTwoAndAHalfSd) {
  // sd 8 quanta: the half-height run is 2 * 1.18 * 8 = 19 points; the window
  // must reach +-2.5 sd (20 quanta) and not much further.
  std::vector<double> c = Flat();
  AddGaussian(c, 100, 8, 60);
  const auto w = Windows(c, Auto());
  ASSERT_EQ(w.size(), 1u);
  EXPECT_EQ(w[0].delay, 100 * kMs);
  EXPECT_LE(w[0].lo, 80 * kMs);
  EXPECT_GE(w[0].lo, 75 * kMs);
  EXPECT_GE(w[0].hi, 120 * kMs);
  EXPECT_LE(w[0].hi, 125 * kMs);
}

TEST(MatchWindows, NoisyPeakOnOneFlankStillCentresOnTheBump) {
  // The largest point (the paper's spike position) lies 6 quanta left of
  // the bump's centre, with a dip next to it: the window is centred on the
  // bump, not on that point.
  std::vector<double> c = Flat();
  AddGaussian(c, 100, 10, 30);
  c[kLag + 94] += 25;
  c[kLag + 93] -= 12;
  const auto w = Windows(c, Auto());
  ASSERT_EQ(w.size(), 1u);
  EXPECT_NEAR(static_cast<double>(w[0].delay), 100.0 * kMs, 2.0 * kMs);
  EXPECT_LE(w[0].lo, 80 * kMs);
  EXPECT_GE(w[0].hi, 120 * kMs);
}

TEST(MatchWindows, BumpsOfOneSpreadDelayAreOneSpike) {
  // Two maxima of one bump separated by a noise dip below the valley level:
  // FindSpikes reports two spikes, the spread delay is one window.
  std::vector<double> c = Flat();
  AddGaussian(c, 100, 10, 40);
  c[kLag + 100] -= 15;
  const std::vector<Spike> spikes =
      internal::CausalSpikes(c, kLag, Auto().spikes);
  ASSERT_GE(spikes.size(), 2u);
  const auto w = Windows(c, Auto());
  ASSERT_EQ(w.size(), 1u);
  EXPECT_LE(w[0].lo, 80 * kMs);
  EXPECT_GE(w[0].hi, 120 * kMs);
}

TEST(MatchWindows, NeverNegativeDelays) {
  // A bump at 2 quanta with an sd of 6: half of it lies at negative lags.
  std::vector<double> c = Flat();
  AddGaussian(c, 2, 6, 60);
  const auto w = Windows(c, Auto());
  ASSERT_EQ(w.size(), 1u);
  EXPECT_EQ(w[0].lo, -kMs);  // position 0 pairs delays in (-mu, mu)
  EXPECT_GE(w[0].delay, 0);
  EXPECT_GE(w[0].hi, 10 * kMs);
}

TEST(MatchWindows, NearbyDelaysDoNotOverlap) {
  // A strong spread delay at 100 and a distinct sharp one at 140, outside
  // its +-2.5 sd: two windows, the weaker cut at the stronger's edge.
  std::vector<double> c = Flat();
  AddGaussian(c, 100, 6, 80);
  c[kLag + 140] += 60;
  const auto w = Windows(c, Auto());
  ASSERT_EQ(w.size(), 2u);
  EXPECT_EQ(w[1].delay, 140 * kMs);
  // Positions are disjoint; in ns the windows share at most the boundary
  // quanta (each position spans one quantum either side).
  EXPECT_LE(w[0].hi, w[1].lo + 2 * kMs);
  EXPECT_LT(w[0].hi, 140 * kMs);
}

TEST(MatchWindows, DistinctDelaysOneQuantumApartStaySharp) {
  // Busy RPC traffic at a coarse quantum (the multi-tier sample at 10 ms):
  // a spike right next to a deeper dip and another delay two quanta on.
  std::vector<double> c(2 * kLag + 1, 0.0);
  for (size_t i = 0; i < c.size(); ++i) c[i] = 740 + 30 * ((i * 7) % 3);
  c[kLag - 1] = 1398;
  c[kLag] = 1588;
  c[kLag + 1] = 943;
  c[kLag + 2] = 858;
  c[kLag + 3] = 1111;
  c[kLag + 4] = 970;
  const auto w = Windows(c, Auto());
  ASSERT_EQ(w.size(), 2u);
  EXPECT_EQ(w[0].delay, 0);
  EXPECT_EQ(w[0].lo, -kMs);
  EXPECT_EQ(w[0].hi, kMs);
  EXPECT_EQ(w[1].delay, 3 * kMs);
  EXPECT_EQ(w[1].lo, 2 * kMs);
  EXPECT_EQ(w[1].hi, 4 * kMs);
}

// The default widens a spread bump that stands well above the chance level
// (C's mean): over the added positions the excess averages about half the
// peak's, 30 here against a mean near 10, so most of what the wider window
// catches is caused.  The same bump, low over busy traffic (peak excess 12
// against 10: under half caused), keeps one quantum either side, where
// `auto` widens it alike.
TEST(MatchWindows, DefaultWidensOnlyWhereMostOfTheWideningIsCaused) {
  std::vector<double> c = Flat();
  AddGaussian(c, 100, 6, 60);
  std::vector<MatchWindow> w = Windows(c, Default());
  ASSERT_EQ(w.size(), 1u);
  EXPECT_LE(w[0].lo, 88 * kMs);
  EXPECT_GE(w[0].hi, 112 * kMs);
  EXPECT_EQ(Windows(c, Auto())[0].lo, w[0].lo);

  c = Flat();
  AddGaussian(c, 100, 6, 12);
  w = Windows(c, Default());
  ASSERT_EQ(w.size(), 1u);
  // The spike's largest point (the ripple puts it at 99 ms), +- one quantum.
  EXPECT_NEAR(static_cast<double>(w[0].delay), 100.0 * kMs, 1.0 * kMs);
  EXPECT_EQ(w[0].lo, w[0].delay - kMs);
  EXPECT_EQ(w[0].hi, w[0].delay + kMs);
  const std::vector<MatchWindow> a = Windows(c, Auto());
  ASSERT_EQ(a.size(), 1u);
  EXPECT_LE(a[0].lo, 88 * kMs);
}

// A sharp spike is the same in every mode: d +- one quantum.
TEST(MatchWindows, DefaultKeepsSharpSpikesSharp) {
  std::vector<double> c = Flat();
  c[kLag + 40] += 80;
  const std::vector<MatchWindow> w = Windows(c, Default());
  ASSERT_EQ(w.size(), 1u);
  EXPECT_EQ(w[0].lo, 39 * kMs);
  EXPECT_EQ(w[0].hi, 41 * kMs);
}

TEST(ClaimCaused, WindowBoundsAreInclusiveAndCausesPrecedeEffects) {
  const std::vector<TimeNs> v = {1000, 5000};
  const std::vector<TimeNs> z = {1000 + 300, 1000 + 700, 1000 + 701, 5000 - 1};
  // Delay 500, window [300, 700]: z0 and z1 match v0, z2 is past it; z3
  // is before v1 (a negative delay) and v0 is 3999 before it.
  const std::vector<MatchWindow> w = {{500, 300, 700}};
  std::vector<int> claimed;
  std::vector<TimeNs> diff;
  internal::ClaimCaused(z, v, w, claimed, diff);
  EXPECT_EQ(claimed, (std::vector<int>{0, 0, -1, -1}));
  EXPECT_EQ(diff[0], 300);
  EXPECT_EQ(diff[1], 700);
}

// A -> B at random times, B -> C a Gaussian 3 s +- 0.3 s later (sd six
// quanta of 50 ms), nothing else: every instance is a caused message.
std::string GaussianTrace(const TempDir& dir, int instances) {
  std::mt19937_64 rng(5);
  std::uniform_real_distribution<double> start(10.0, 10.0 + 2.0 * instances);
  std::normal_distribution<double> delay(3.0, 0.3);
  std::vector<std::tuple<TimeNs, std::string, std::string>> msgs;
  for (int i = 0; i < instances; ++i) {
    const double t = start(rng);
    msgs.emplace_back(static_cast<TimeNs>(t * 1e9), "A", "B");
    msgs.emplace_back(static_cast<TimeNs>((t + delay(rng)) * 1e9), "B", "C");
  }
  std::sort(msgs.begin(), msgs.end());
  std::string text = "#bbprof-trace 1\n";
  for (auto& [t, a, b] : msgs)
    text += trace::FormatTimestamp(t) + "\tMSG\t" + a + "\t" + b + "\t-\n";
  return dir.Write("gauss.trace", text);
}

Result<PathGraph> Search(const std::string& path, const Params& p) {
  auto r = trace::OpenTraceReader(path);
  EXPECT_TRUE(r.ok());
  auto m = LoadMessages(**r);
  EXPECT_TRUE(m.ok());
  return FindPaths(*m, p);
}

// The default per-spike choice widens a quiet spread hop's window: nothing
// but the caused messages is there to be caught.
TEST(FindPaths, GaussianDelayIsMatchedWhole) {
  TempDir dir;
  const std::string path = GaussianTrace(dir, 1000);
  Params p;
  p.quantum_ns = 50 * kMs;
  p.max_delay_ns = 10'000 * kMs;
  ASSERT_TRUE(ResolveParams(p).ok());
  auto g = Search(path, p);
  ASSERT_TRUE(g.ok());
  ASSERT_EQ(g->paths.size(), 1u);
  const Path& ab = g->paths[0];
  ASSERT_EQ(ab.nodes, (std::vector<std::string>{"A", "B", "C"}));
  // The matched set covers the instances (+-2.5 sd holds 98.8% of them)
  // and its mean delay is within one quantum of the configured 3 s.
  EXPECT_GE(ab.count, 970u);
  EXPECT_LE(ab.count, 1000u);
  EXPECT_NEAR(ab.delays_s[1], 3.0, 0.05);
  EXPECT_GE(g->widest_tolerance_ns, 600 * kMs);  // at least 2 sd

  // The paper's fixed v of one quantum catches only the messages near the
  // spike's point: about a sixth of them here.
  p.spread_windows = false;
  p.tolerance_ns = p.quantum_ns;
  auto fixed = Search(path, p);
  ASSERT_TRUE(fixed.ok());
  ASSERT_EQ(fixed->paths.size(), 1u);
  EXPECT_LT(fixed->paths[0].count, 400u);
}

// Two front ends F1 and F2, each called by clients 20 times a second, share
// an application server A that queries a database D: client -> Fx -> A ->
// D, D's reply after 15 ms +- 4 ms (sd four quanta of 1 ms), A's reply to
// Fx 10 ms +- 3 ms after it, Fx's to the client.  Every path must leave by
// the front end it came in by.  No single correlation shows the leak this
// guards against: D's replies claimed on F1's path include, by chance, some
// of F2's instances (their calls fell in the windows of F1's), and A's reply
// to F2 follows each of them as surely as A's reply to F1 follows F1's, so
// a window wide enough to hold A's spread reply turns those few into a
// group above chance, client -> F1 -> A -> D -> A -> F2 (docs/convolution.md,
// "Chance members a path carries").
std::string TwoFrontEndsTrace(const TempDir& dir, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::exponential_distribution<double> gap(20.0);
  std::normal_distribution<double> hop(0, 0.0002), db(0.015, 0.004),
      app(0.010, 0.003);
  std::vector<std::tuple<TimeNs, std::string, std::string>> msgs;
  auto add = [&](double t, const std::string& a, const std::string& b) {
    msgs.emplace_back(static_cast<TimeNs>((1000.0 + t) * 1e9), a, b);
  };
  for (const std::string f : {"F1", "F2"}) {
    for (double t = gap(rng); t < 200.0; t += gap(rng)) {
      add(t, "client", f);
      const double t1 = t + 0.001 + std::abs(hop(rng));
      add(t1, f, "A");
      const double t2 = t1 + 0.002 + std::abs(hop(rng));
      add(t2, "A", "D");
      const double t3 = t2 + std::max(0.001, db(rng));
      add(t3, "D", "A");
      const double t4 = t3 + std::max(0.001, app(rng));
      add(t4, "A", f);
      add(t4 + 0.001 + std::abs(hop(rng)), f, "client");
    }
  }
  std::sort(msgs.begin(), msgs.end());
  std::string text = "#bbprof-trace 1\n";
  for (auto& [t, a, b] : msgs)
    text += trace::FormatTimestamp(t) + "\tMSG\t" + a + "\t" + b + "\t-\n";
  return dir.Write("fronts" + std::to_string(seed) + ".trace", text);
}

TEST(FindPaths, ConcurrentInstancesDoNotLeakToTheOtherFrontEnd) {
  TempDir dir;
  for (uint64_t seed = 1; seed <= 4; ++seed) {
    SCOPED_TRACE(seed);
    const std::string path = TwoFrontEndsTrace(dir, seed);
    Params p;
    p.quantum_ns = kMs;
    p.roots = {"client"};
    ASSERT_TRUE(ResolveParams(p).ok());
    auto g = Search(path, p);
    ASSERT_TRUE(g.ok());
    Params fixed = p;
    fixed.spread_windows = false;
    fixed.tolerance_ns = kMs;
    auto q = Search(path, fixed);
    ASSERT_TRUE(q.ok());
    for (const std::string f : {"F1", "F2"}) {
      const std::vector<std::string> full = {"client", f, "A",     "D",
                                             "A",      f, "client"};
      uint64_t found = 0, found_fixed = 0;
      for (const Path& x : g->paths) {
        if (x.nodes[1] != f) continue;
        // Never out by the other front end.
        for (const std::string& n : x.nodes) {
          if (n[0] == 'F') {
            EXPECT_EQ(n, f) << ::testing::PrintToString(x.nodes);
          }
        }
        if (x.nodes == full) found = x.count;
      }
      for (const Path& x : q->paths)
        if (x.nodes == full) found_fixed = x.count;
      // The full path is found, with at least the messages the paper's
      // fixed v of one quantum gives it.
      EXPECT_GE(found, found_fixed) << f;
      EXPECT_GT(found, 0u) << f;
    }
    // The streaming search carries the same chance members.
    auto r = trace::OpenTraceReader(path);
    ASSERT_TRUE(r.ok());
    auto m = LoadMessages(**r);
    ASSERT_TRUE(m.ok());
    StreamOptions o;
    o.chunk_quanta = 97;
    auto s = FindPathsStreaming([path] { return trace::OpenTraceReader(path); },
                                p, o);
    ASSERT_TRUE(s.ok()) << s.status().message();
    EXPECT_EQ(ResultJson(s->summary, p, s->graph, "t"),
              ResultJson(*m, p, *g, "t"));
  }
}

TEST(ResultJson, VarianceIsTheToleranceUsed) {
  TempDir dir;
  const std::string path = GaussianTrace(dir, 300);
  auto r = trace::OpenTraceReader(path);
  ASSERT_TRUE(r.ok());
  auto m = LoadMessages(**r);
  ASSERT_TRUE(m.ok());
  Params p;
  p.spread_windows = true;
  p.quantum_ns = 50 * kMs;
  p.max_delay_ns = 10'000 * kMs;
  ASSERT_TRUE(ResolveParams(p).ok());
  auto g = FindPaths(*m, p);
  ASSERT_TRUE(g.ok());
  auto j = nlohmann::json::parse(ResultJson(*m, p, *g, "t"));
  EXPECT_DOUBLE_EQ(j["params"]["variance_s"].get<double>(),
                   static_cast<double>(g->widest_tolerance_ns) / 1e9);
  EXPECT_GT(j["params"]["variance_s"].get<double>(), 0.05);
  p.spread_windows = false;
  p.tolerance_ns = 70 * kMs;
  g = FindPaths(*m, p);
  ASSERT_TRUE(g.ok());
  j = nlohmann::json::parse(ResultJson(*m, p, *g, "t"));
  EXPECT_DOUBLE_EQ(j["params"]["variance_s"].get<double>(), 0.07);
}

// Random chains with Gaussian delays of several quanta, noise, fan-out:
// the streaming search writes the in-memory document, spread windows and
// all (the default per-spike choice and auto), across windows down to one
// quantum.
TEST(ConvolutionStream, SameJsonWithSpreadDelays) {
  TempDir dir;
  TimeNs widest = 0;
  uint64_t paths = 0;
  for (int seed = 1; seed <= 8; ++seed) {
    std::mt19937_64 rng(static_cast<uint64_t>(seed) * 977);
    std::uniform_real_distribution<double> u(0, 1);
    std::vector<std::tuple<TimeNs, std::string, std::string>> msgs;
    const double mu_s = 0.01;
    const double d1 = 0.1 + u(rng) * 0.4, d2 = 0.05 + u(rng) * 0.3;
    const double sd1 = mu_s * (1 + u(rng) * 6), sd2 = mu_s * (1 + u(rng) * 3);
    std::normal_distribution<double> n1(d1, sd1), n2(d2, sd2);
    for (double t = 1.0; t < 60.0; t += 0.02 + u(rng) * 0.3) {
      msgs.emplace_back(static_cast<TimeNs>(t * 1e9), "r", "a");
      const double ta = t + std::max(0.0, n1(rng));
      msgs.emplace_back(static_cast<TimeNs>(ta * 1e9), "a",
                        u(rng) < 0.7 ? "b" : "c");
      if (u(rng) < 0.8)
        msgs.emplace_back(
            static_cast<TimeNs>((ta + std::max(0.0, n2(rng))) * 1e9), "b", "a");
    }
    for (int i = 0; i < 60; ++i)
      msgs.emplace_back(static_cast<TimeNs>((1.0 + u(rng) * 59.0) * 1e9),
                        u(rng) < 0.5 ? "a" : "b", "c");
    std::sort(msgs.begin(), msgs.end());
    std::string text = "#bbprof-trace 1\n";
    for (auto& [t, a, b] : msgs)
      text += trace::FormatTimestamp(t) + "\tMSG\t" + a + "\t" + b + "\t-\n";
    const std::string path =
        dir.Write("s" + std::to_string(seed) + ".trace", text);
    Params p;
    p.spread_windows = true;
    p.spread_always = seed % 2 == 0;  // auto, else the default choice
    p.quantum_ns = 10 * kMs;
    p.max_delay_ns = 1000 * kMs;
    p.min_count = 3;
    ASSERT_TRUE(ResolveParams(p).ok());
    auto r = trace::OpenTraceReader(path);
    ASSERT_TRUE(r.ok());
    auto m = LoadMessages(**r);
    ASSERT_TRUE(m.ok());
    auto g = FindPaths(*m, p);
    ASSERT_TRUE(g.ok());
    const std::string want = ResultJson(*m, p, *g, "t");
    widest = std::max(widest, g->widest_tolerance_ns);
    paths += g->paths.size();
    for (int64_t chunk : {0, 1, 13, 97}) {
      StreamOptions o;
      o.chunk_quanta = chunk;
      o.spool = chunk % 2 == 1;
      auto s = FindPathsStreaming(
          [path] { return trace::OpenTraceReader(path); }, p, o);
      ASSERT_TRUE(s.ok()) << s.status().message();
      EXPECT_EQ(ResultJson(s->summary, p, s->graph, "t"), want)
          << "seed " << seed << " chunk " << chunk;
      EXPECT_EQ(s->graph.widest_tolerance_ns, g->widest_tolerance_ns);
    }
  }
  // The cases do widen windows and find paths.
  EXPECT_GE(widest, 3 * 10 * kMs);
  EXPECT_GE(paths, 8u);
}

}  // namespace
}  // namespace bbprof::convolution
