#include "convolution/correlation.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>

namespace bbprof::convolution {
namespace {

std::vector<double> Direct(const SparseSignal& a, const SparseSignal& b,
                           int64_t lag) {
  std::vector<double> out(2 * lag + 1, 0.0);
  for (const Bin& x : a)
    for (const Bin& y : b) {
      const int64_t d = y.index - x.index;
      if (d >= -lag && d <= lag) out[d + lag] += x.value * y.value;
    }
  return out;
}

SparseSignal Random(std::mt19937_64& rng, int64_t span, double density) {
  std::vector<int64_t> ts;
  std::uniform_real_distribution<double> u(0, 1);
  for (int64_t t = 0; t < span; ++t) {
    const int n = u(rng) < density ? 1 + static_cast<int>(u(rng) * 3) : 0;
    for (int k = 0; k < n; ++k) ts.push_back(t * 10 + k);
  }
  return MakeSignal(ts, 10);
}

TEST(MakeSignal, SquareRootOfCountsPerQuantum) {
  std::vector<int64_t> ts = {-5, 0, 3, 9, 10, 25, 25, 25, 25};
  SparseSignal s = MakeSignal(ts, 10);
  ASSERT_EQ(s.size(), 4u);
  EXPECT_EQ(s[0].index, -1);
  EXPECT_DOUBLE_EQ(s[0].value, 1.0);
  EXPECT_EQ(s[1].index, 0);
  EXPECT_DOUBLE_EQ(s[1].value, std::sqrt(3.0));
  EXPECT_EQ(s[2].index, 1);
  EXPECT_EQ(s[3].index, 2);
  EXPECT_DOUBLE_EQ(s[3].value, 2.0);
}

TEST(Correlator, BothMethodsMatchDirectComputation) {
  std::mt19937_64 rng(7);
  Correlator c;
  for (int64_t lag : {0, 1, 3, 7, 8, 31, 64, 100}) {
    // Spans around the FFT block length exercise block boundaries.
    const int64_t block = static_cast<int64_t>(FftLengthFor(lag)) - 2 * lag;
    for (int64_t span :
         {int64_t{1}, block - 1, block, block + 1, 3 * block + 5}) {
      for (double density : {0.05, 0.5, 1.0}) {
        SparseSignal a = Random(rng, span, density);
        SparseSignal b = Random(rng, span + lag, density);
        const auto want = Direct(a, b, lag);
        for (auto m : {CorrelationMethod::kSparse, CorrelationMethod::kFft,
                       CorrelationMethod::kAuto}) {
          const auto got = c.Correlate(a, b, lag, m);
          ASSERT_EQ(got.size(), want.size());
          for (size_t i = 0; i < got.size(); ++i) {
            ASSERT_NEAR(got[i], want[i], 1e-9 * (1 + std::fabs(want[i])))
                << "lag " << lag << " span " << span << " method "
                << static_cast<int>(m) << " at " << i;
          }
        }
      }
    }
  }
}

TEST(Correlator, FarApartBinsAndEmptySignals) {
  Correlator c;
  SparseSignal a = {{0, 1.0}, {1'000'000'000, 2.0}};
  SparseSignal b = {{3, 1.0}, {1'000'000'005, 1.0}};
  for (auto m : {CorrelationMethod::kSparse, CorrelationMethod::kFft}) {
    auto r = c.Correlate(a, b, 10, m);
    EXPECT_DOUBLE_EQ(r[10 + 3], 1.0);
    EXPECT_NEAR(r[10 + 5], 2.0, 1e-12);
    double total = 0;
    for (double v : r) total += v;
    EXPECT_NEAR(total, 3.0, 1e-9);
    EXPECT_EQ(c.Correlate({}, b, 10, m), std::vector<double>(21, 0.0));
  }
  EXPECT_EQ(Correlator::CountPairs(a, b, 10), 2u);
  EXPECT_EQ(Correlator::CountPairs(a, b, 2), 0u);
}

TEST(Correlator, AutoPicksDirectForSparseAndFftForDense) {
  std::mt19937_64 rng(3);
  Correlator c;
  SparseSignal sparse_a = Random(rng, 100000, 0.001),
               sparse_b = Random(rng, 100000, 0.001);
  c.Correlate(sparse_a, sparse_b, 500);
  EXPECT_EQ(c.last_method(), CorrelationMethod::kSparse);
  SparseSignal dense_a = Random(rng, 20000, 0.9),
               dense_b = Random(rng, 20000, 0.9);
  c.Correlate(dense_a, dense_b, 500);
  EXPECT_EQ(c.last_method(), CorrelationMethod::kFft);
}

std::vector<double> Flat(size_t n) { return std::vector<double>(n, 1.0); }

TEST(FindSpikes, SingleSpikeAtExactPosition) {
  auto c = Flat(100);
  c[37] = 50;
  auto s = FindSpikes(c, {});
  ASSERT_EQ(s.size(), 1u);
  EXPECT_EQ(s[0].position, 37);
}

TEST(FindSpikes, FlatAndShortSignalsHaveNone) {
  EXPECT_TRUE(FindSpikes(Flat(100), {}).empty());
  EXPECT_TRUE(FindSpikes(std::vector<double>{5.0}, {}).empty());
}

TEST(FindSpikes, MaximaWithoutValleyBetweenAreOneSpike) {
  auto c = Flat(200);
  // Two local maxima, the second higher, with no point below the valley
  // threshold in between: one spike, at the larger.
  c[50] = 40;
  c[51] = 30;
  c[52] = 45;
  auto s = FindSpikes(c, {});
  ASSERT_EQ(s.size(), 1u);
  EXPECT_EQ(s[0].position, 52);
  // A valley between them splits them.
  c[51] = 1;
  s = FindSpikes(c, {});
  ASSERT_EQ(s.size(), 2u);
  EXPECT_EQ(s[0].position, 50);
  EXPECT_EQ(s[1].position, 52);
}

TEST(FindSpikes, TiesGoToTheEarliestPoint) {
  auto c = Flat(200);
  c[80] = 40;
  c[81] = 40;
  auto s = FindSpikes(c, {});
  ASSERT_EQ(s.size(), 1u);
  EXPECT_EQ(s[0].position, 80);
}

TEST(FindSpikes, ThresholdsAreMeanPlusSigmas) {
  // Mean and sd over the whole window: a value just below N sd is no spike.
  std::vector<double> c(1000, 0.0);
  for (size_t i = 0; i < c.size(); i += 2) c[i] = 2.0;  // mean 1, sd 1
  c[501] = 4.9;  // below mean + 4 sd (~5) after it shifts the statistics
  EXPECT_TRUE(FindSpikes(c, {}).empty());
  c[501] = 8.0;
  auto s = FindSpikes(c, {});
  ASSERT_EQ(s.size(), 1u);
  EXPECT_EQ(s[0].position, 501);
  EXPECT_TRUE(FindSpikes(c, {.spike_sigma = 8.0, .valley_sigma = 3.0}).empty());
}

}  // namespace
}  // namespace bbprof::convolution
