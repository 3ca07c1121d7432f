// Offset estimation from per-host traces with known clocks
// (skewer/estimate.h).
#include "skewer/estimate.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <random>
#include <sstream>

#include "tests/util/temp_dir.h"
#include "trace/timestamp.h"

namespace bbprof::skewer {
namespace {

using testing::TempDir;

struct Clock {
  double offset_s = 0;
  double drift_ppm = 0;
};

// Simulates RPCs A->B (B then calls C) and a few A->D, with transit times
// uniform in [100, 300] us, and writes what each host saw, stamped by its
// own clock, as HOST.trace with '#meta capture_host=HOST'.
std::vector<EstimateInput> MakeViews(const TempDir& dir,
                                     const std::map<std::string, Clock>& clocks,
                                     double seconds, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> net(100e-6, 300e-6), proc(1e-3, 5e-3);
  const double t0 = 1000.0;
  std::map<std::string, std::vector<std::pair<TimeNs, std::string>>> lines;
  auto stamp = [&](const std::string& host, double t) {
    const Clock& c = clocks.at(host);
    return static_cast<TimeNs>(
        std::llround((t + c.offset_s + c.drift_ppm * 1e-6 * (t - t0)) * 1e9));
  };
  uint64_t id = 0;
  auto message = [&](double t, const char* kind, const std::string& s,
                     const std::string& r, uint64_t callid) {
    const double arrive = t + net(rng);
    const std::string body =
        std::string(kind) + "\t" + s + "\t" + r + "\t" + std::to_string(callid);
    lines[s].emplace_back(stamp(s, t), body);
    lines[r].emplace_back(stamp(r, arrive), body);
    return arrive;
  };
  int n = 0;
  for (double t = t0; t < t0 + seconds; t += 0.02, ++n) {
    const uint64_t c1 = ++id, c2 = ++id;
    double at_b = message(t, "CALL", "A", "B", c1);
    double at_c = message(at_b + proc(rng), "CALL", "B", "C", c2);
    double back_b = message(at_c + proc(rng), "RET", "C", "B", c2);
    message(back_b + proc(rng), "RET", "B", "A", c1);
    if (n % 400 == 0) {  // a handful of calls to D: not enough to estimate
      const uint64_t c3 = ++id;
      double at_d = message(t + 0.001, "CALL", "A", "D", c3);
      message(at_d + proc(rng), "RET", "D", "A", c3);
    }
  }
  std::vector<EstimateInput> inputs;
  for (auto& [host, v] : lines) {
    std::stable_sort(v.begin(), v.end(), [](const auto& x, const auto& y) {
      return x.first < y.first;
    });
    std::ostringstream out;
    out << "#meta capture_host=" << host << "\n";
    for (const auto& [ts, body] : v)
      out << trace::FormatTimestamp(ts) << "\t" << body << "\n";
    inputs.push_back({dir.Write(host + ".trace", out.str()), host});
  }
  return inputs;
}

const NodeEstimate& Node(const EstimateResult& r, const std::string& name) {
  for (const auto& n : r.nodes) {
    if (n.node == name) return n;
  }
  static NodeEstimate none;
  ADD_FAILURE() << "no node " << name;
  return none;
}

TEST(EstimateTest, RecoversOffsetsRelativeToTheReference) {
  TempDir dir;
  std::map<std::string, Clock> clocks = {{"A", {0.020, 0}},
                                         {"B", {-0.050, 0}},
                                         {"C", {0.080, 0}},
                                         {"D", {0.001, 0}}};
  auto inputs = MakeViews(dir, clocks, 60, 1);
  EstimateOptions o;
  o.reference = "A";
  o.fit_drift = false;
  auto r = EstimateOffsets(inputs, o);
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->reference_node, "A");
  const NodeEstimate& b = Node(*r, "B");
  const NodeEstimate& c = Node(*r, "C");
  ASSERT_TRUE(b.estimated);
  ASSERT_TRUE(c.estimated);
  // True offsets from A: B -70 ms, C +60 ms (C reached through B).
  EXPECT_NEAR(static_cast<double>(b.offset_ns), -70e6, 30e3);
  EXPECT_NEAR(static_cast<double>(c.offset_ns), 60e6, 60e3);
  EXPECT_EQ(c.via, "B");
  // The interval is [-70 ms - 100 us, -70 ms + 100 us] at best.
  EXPECT_GE(b.uncertainty_ns, 90'000);
  EXPECT_LE(b.uncertainty_ns, 130'000);
  EXPECT_GE(c.uncertainty_ns, b.uncertainty_ns);
  // The true offset lies inside the reported interval.
  EXPECT_LE(std::abs(static_cast<double>(b.offset_ns) + 70e6),
            static_cast<double>(b.uncertainty_ns));
  // D answered 8 calls: reported, not guessed.
  EXPECT_FALSE(Node(*r, "D").estimated);
  EXPECT_EQ(Node(*r, "D").matched, 16u);
  // The offsets file a --remove would use.
  SkewTable t = ToSkewTable(*r);
  EXPECT_EQ(t.nodes.count("D"), 0u);
  EXPECT_EQ(t.nodes.at("A").offset_ns, 0);
  EXPECT_EQ(t.stamp, Stamp::kHost);
}

TEST(EstimateTest, FitsDriftOverALongTrace) {
  TempDir dir;
  std::map<std::string, Clock> clocks = {
      {"A", {0, 0}}, {"B", {0.010, 40}}, {"C", {-0.030, -25}}, {"D", {0, 0}}};
  auto inputs = MakeViews(dir, clocks, 400, 2);
  EstimateOptions o;  // reference: the most traffic, B
  auto r = EstimateOffsets(inputs, o);
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->reference_node, "B");
  const NodeEstimate& a = Node(*r, "A");
  const NodeEstimate& c = Node(*r, "C");
  ASSERT_TRUE(a.estimated && c.estimated);
  EXPECT_NEAR(static_cast<double>(a.drift_ppt) / kPptPerPpm, -40, 2);
  EXPECT_NEAR(static_cast<double>(c.drift_ppt) / kPptPerPpm, -65, 2);
  // Offsets at the reference time (the first timestamp's second, ~1000 s
  // true time): A - B = -10 ms - 40 ppm * (ref - 1000 s).
  const double ref_s = static_cast<double>(r->reference_time) / 1e9;
  EXPECT_NEAR(static_cast<double>(a.offset_ns) / 1e9,
              -0.010 - 40e-6 * (ref_s - 1000), 200e-6);
  EXPECT_NEAR(static_cast<double>(c.offset_ns) / 1e9,
              -0.040 - 65e-6 * (ref_s - 1000), 300e-6);
}

TEST(EstimateTest, OneHostPerTrace) {
  TempDir dir;
  std::map<std::string, Clock> clocks = {
      {"A", {}}, {"B", {}}, {"C", {}}, {"D", {}}};
  auto inputs = MakeViews(dir, clocks, 2, 3);
  inputs[1].host = inputs[0].host;
  auto r = EstimateOffsets(inputs, {});
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("are both captured at"),
            std::string::npos);
}

}  // namespace
}  // namespace bbprof::skewer
