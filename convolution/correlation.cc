#include "convolution/correlation.h"

#include <fftw3.h>

#include <algorithm>
#include <cassert>
#include <cmath>
#include <complex>
#include <limits>

namespace bbprof::convolution {

namespace {
// Floor division so negative times (after skew removal) bin correctly.
int64_t BinOf(int64_t ts, int64_t mu) { return ts / mu - ((ts % mu) < 0 ? 1 : 0); }
}  // namespace

SparseSignal MakeSignal(std::span<const int64_t> ts, int64_t mu) {
  assert(mu > 0);
  // Count the bins first and allocate once: signals of long traces are the
  // largest objects the search holds, and growing by doubling would hold up
  // to twice the room, copied at every step.
  size_t bins = 0;
  for (size_t i = 0; i < ts.size(); ++i) {
    if (i == 0 || BinOf(ts[i], mu) != BinOf(ts[i - 1], mu)) ++bins;
  }
  SparseSignal out;
  out.reserve(bins);
  size_t i = 0;
  while (i < ts.size()) {
    int64_t t = BinOf(ts[i], mu);
    size_t n = 0;
    while (i < ts.size()) {
      if (BinOf(ts[i], mu) != t) break;
      ++n;
      ++i;
    }
    // Section 5.2.1: the square root compensates for the product of two
    // equal counts in the correlation.
    out.push_back({t, std::sqrt(static_cast<double>(n))});
  }
  return out;
}

size_t FftLengthFor(int64_t max_lag) {
  size_t need = 2 * (2 * static_cast<size_t>(max_lag) + 1);
  size_t n = 16;
  while (n < need) n *= 2;
  return n;
}

// FFTW_ESTIMATE: the lag window, hence the sizes, vary with every run and
// FFTW_MEASURE costs seconds per new size -- more than the transforms it
// would speed up for traces of this size.  Power-of-two sizes are the ones
// ESTIMATE plans well.
struct Correlator::Plan {
  size_t n = 0;
  double* real = nullptr;
  fftw_complex* x = nullptr;
  fftw_complex* y = nullptr;
  fftw_plan forward = nullptr;
  fftw_plan backward = nullptr;
  ~Plan() {
    if (forward) fftw_destroy_plan(forward);
    if (backward) fftw_destroy_plan(backward);
    fftw_free(real);
    fftw_free(x);
    fftw_free(y);
  }
};

Correlator::Correlator() = default;
Correlator::~Correlator() = default;

Correlator::Plan& Correlator::PlanFor(size_t n) {
  auto it = plans_.find(n);
  if (it != plans_.end()) return *it->second;
  auto p = std::make_unique<Plan>();
  p->n = n;
  p->real = static_cast<double*>(fftw_malloc(sizeof(double) * n));
  p->x = static_cast<fftw_complex*>(
      fftw_malloc(sizeof(fftw_complex) * (n / 2 + 1)));
  p->y = static_cast<fftw_complex*>(
      fftw_malloc(sizeof(fftw_complex) * (n / 2 + 1)));
  p->forward =
      fftw_plan_dft_r2c_1d(static_cast<int>(n), p->real, p->x, FFTW_ESTIMATE);
  p->backward =
      fftw_plan_dft_c2r_1d(static_cast<int>(n), p->x, p->real, FFTW_ESTIMATE);
  Plan& ref = *p;
  plans_.emplace(n, std::move(p));
  return ref;
}

uint64_t Correlator::CountPairs(const SparseSignal& a, const SparseSignal& b,
                                int64_t max_lag) {
  uint64_t pairs = 0;
  size_t lo = 0, hi = 0;
  for (const Bin& x : a) {
    while (lo < b.size() && b[lo].index < x.index - max_lag) ++lo;
    if (hi < lo) hi = lo;
    while (hi < b.size() && b[hi].index <= x.index + max_lag) ++hi;
    pairs += hi - lo;
  }
  return pairs;
}

void Correlator::AddDirect(const Bin& x, std::span<const Bin> b, size_t& lo,
                           int64_t max_lag, std::vector<double>& out) {
  while (lo < b.size() && b[lo].index < x.index - max_lag) ++lo;
  for (size_t k = lo; k < b.size() && b[k].index <= x.index + max_lag; ++k) {
    out[static_cast<size_t>(b[k].index - x.index + max_lag)] +=
        x.value * b[k].value;
  }
}

void Correlator::CorrelateSparse(const SparseSignal& a, const SparseSignal& b,
                                 int64_t max_lag,
                                 std::vector<double>& out) const {
  size_t lo = 0;
  for (const Bin& x : a) AddDirect(x, b, lo, max_lag, out);
}

int64_t Correlator::BlockLength(int64_t max_lag) {
  return static_cast<int64_t>(FftLengthFor(max_lag)) - 2 * max_lag;
}

// Overlap-save style blocks: a's bins are cut into blocks of L quanta
// starting at s; for each non-empty block, x = a[s, s+L) and
// y = b[s-D, s+L+D) go through one real FFT of length N >= L + 2D, so the
// circular correlation r(e) = sum_t x(t) y(t+e), e = d + D in [0, 2D], never
// wraps (t + e <= L-1+2D < N).  Blocks without any bin of a are skipped, so
// cost follows the busy part of the trace, not its duration.
void Correlator::AddFftBlock(int64_t s, std::span<const Bin> a_block,
                             std::span<const Bin> b_block, int64_t max_lag,
                             std::vector<double>& out) {
  if (b_block.empty()) return;
  const size_t n = FftLengthFor(max_lag);
  const int64_t window = 2 * max_lag + 1;
  Plan& p = PlanFor(n);
  const size_t nc = n / 2 + 1;
  std::fill(p.real, p.real + n, 0.0);
  for (const Bin& x : a_block) p.real[x.index - s] = x.value;
  fftw_execute_dft_r2c(p.forward, p.real, p.x);
  std::fill(p.real, p.real + n, 0.0);
  for (const Bin& y : b_block) p.real[y.index - (s - max_lag)] = y.value;
  fftw_execute_dft_r2c(p.forward, p.real, p.y);
  auto* x = reinterpret_cast<std::complex<double>*>(p.x);
  const auto* y = reinterpret_cast<const std::complex<double>*>(p.y);
  for (size_t k = 0; k < nc; ++k) x[k] = std::conj(x[k]) * y[k];
  fftw_execute_dft_c2r(p.backward, p.x, p.real);
  const double scale = 1.0 / static_cast<double>(n);
  for (int64_t e = 0; e < window; ++e)
    out[static_cast<size_t>(e)] += p.real[e] * scale;
}

void Correlator::CorrelateFft(const SparseSignal& a, const SparseSignal& b,
                              int64_t max_lag, std::vector<double>& out) {
  AddFftBlocks(a, b, max_lag, std::numeric_limits<int64_t>::min(),
               std::numeric_limits<int64_t>::max(), out);
}

int64_t Correlator::AddFftBlocks(const SparseSignal& a, std::span<const Bin> b,
                                 int64_t max_lag, int64_t from, int64_t until,
                                 std::vector<double>& out) {
  const int64_t block = BlockLength(max_lag);
  int64_t next = from;
  size_t ai = 0, blo = 0;
  while (ai < a.size() && a[ai].index < from) ++ai;
  while (ai < a.size() && a[ai].index < until) {
    // Block start aligned to the first pending bin of a.
    const int64_t s = a[ai].index;
    const size_t a_begin = ai;
    while (ai < a.size() && a[ai].index < s + block) ++ai;
    while (blo < b.size() && b[blo].index < s - max_lag) ++blo;
    size_t b_end = blo;
    while (b_end < b.size() && b[b_end].index < s + block + max_lag) ++b_end;
    AddFftBlock(s, std::span<const Bin>(a).subspan(a_begin, ai - a_begin),
                b.subspan(blo, b_end - blo), max_lag, out);
    next = s + block;
  }
  return next;
}

CorrelationMethod Correlator::ChooseMethod(uint64_t pairs, uint64_t blocks,
                                           int64_t max_lag) {
  // Estimated cost: one multiply-add per bin pair for the direct method;
  // for the blocks, three transforms of length N per busy block of a, at
  // ~N log2 N butterflies each.
  const size_t n = FftLengthFor(max_lag);
  const double log_n = std::log2(static_cast<double>(n));
  const double fft_cost =
      static_cast<double>(blocks) * 3.0 * static_cast<double>(n) * log_n;
  return static_cast<double>(pairs) <= fft_cost ? CorrelationMethod::kSparse
                                                : CorrelationMethod::kFft;
}

std::vector<double> Correlator::Correlate(const SparseSignal& a,
                                          const SparseSignal& b,
                                          int64_t max_lag,
                                          CorrelationMethod method) {
  assert(max_lag >= 0);
  std::vector<double> out(static_cast<size_t>(2 * max_lag + 1), 0.0);
  if (a.empty() || b.empty()) return out;
  if (method == CorrelationMethod::kAuto) {
    const uint64_t pairs = CountPairs(a, b, max_lag);
    const int64_t block = BlockLength(max_lag);
    uint64_t blocks = 0;
    int64_t end = 0;
    for (const Bin& x : a) {
      if (blocks == 0 || x.index >= end) {
        ++blocks;
        end = x.index + block;
      }
    }
    method = ChooseMethod(pairs, blocks, max_lag);
  }
  last_method_ = method;
  if (method == CorrelationMethod::kSparse) {
    ++sparse_calls_;
    CorrelateSparse(a, b, max_lag, out);
  } else {
    ++fft_calls_;
    CorrelateFft(a, b, max_lag, out);
  }
  return out;
}

std::vector<Spike> FindSpikes(std::span<const double> c, const SpikeParams& p) {
  std::vector<Spike> spikes;
  if (c.size() < 2) return spikes;
  double sum = 0, sum2 = 0;
  for (double v : c) sum += v;
  const double mean = sum / static_cast<double>(c.size());
  for (double v : c) sum2 += (v - mean) * (v - mean);
  const double sd = std::sqrt(sum2 / static_cast<double>(c.size()));
  // Floating-point noise from the FFT path must not count as signal.
  if (!(sd > 1e-9 * std::max(1.0, std::fabs(mean)))) return spikes;
  const double hi = mean + p.spike_sigma * sd;
  const double lo = mean + p.valley_sigma * sd;
  bool open = false;  // a candidate spike is pending and no valley seen since
  Spike best{0, 0};
  for (size_t i = 0; i < c.size(); ++i) {
    const double v = c[i];
    if (v < lo) {
      if (open) spikes.push_back(best);
      open = false;
      continue;
    }
    const bool local_max =
        (i == 0 || v >= c[i - 1]) && (i + 1 == c.size() || v >= c[i + 1]);
    if (local_max && v >= hi) {
      if (!open || v > best.value) best = {static_cast<int64_t>(i), v};
      open = true;
    }
  }
  if (open) spikes.push_back(best);
  return spikes;
}

}  // namespace bbprof::convolution
