// Signals and cross-correlation for the convolution algorithm (section 5.2).
//
// Place in the pipeline: the path-graph search (path_graph.h) turns message
// timestamps into SparseSignals, asks a Correlator for C(d) over the lag
// window [-D, D] quanta, and finds spikes in it with FindSpikes.
//
// Section 5.2.5 stores whole-duration signal vectors (size T/mu) and computes
// one whole-trace FFT per output edge; past ~1e5 quanta that was too slow for
// the paper.  Only delays within the user's bound matter, so we never build a
// whole-duration vector: a signal is the sorted list of its non-empty bins,
// and C(d) for |d| <= D is computed either directly from pairs of bins within
// D of each other (cheap when signals are sparse) or by overlap-save blocks
// of FFT length ~4D (cheap when dense).  Memory is O(D + messages) whatever
// the duration.
#ifndef BBPROF_CONVOLUTION_CORRELATION_H_
#define BBPROF_CONVOLUTION_CORRELATION_H_

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <span>
#include <vector>

namespace bbprof::convolution {

// One non-empty time quantum: bin index t (time / mu) and s(t), the square
// root of the number of messages in it (section 5.2.1).
struct Bin {
  int64_t index;
  double value;
};

// A discretized indicator function: non-empty bins in increasing index order.
using SparseSignal = std::vector<Bin>;

// Builds the signal of sorted timestamps ts (any integer time unit) with
// quantum mu (same unit, > 0): s(t) = sqrt(#messages with floor(ts/mu) = t).
SparseSignal MakeSignal(std::span<const int64_t> ts, int64_t mu);

enum class CorrelationMethod { kAuto, kSparse, kFft };

// Computes C(d) = sum_t a(t) * b(t + d) for d in [-max_lag, max_lag]; the
// result has 2*max_lag+1 entries, entry max_lag + d holding C(d).  With
// a = messages i->j and b = messages from j, a spike at d > 0 says j sends
// d quanta after receiving (Figure 6, FindCorrelation).
class Correlator {
 public:
  Correlator();
  ~Correlator();
  Correlator(const Correlator&) = delete;
  Correlator& operator=(const Correlator&) = delete;

  std::vector<double> Correlate(
      const SparseSignal& a, const SparseSignal& b, int64_t max_lag,
      CorrelationMethod method = CorrelationMethod::kAuto);

  // Which method the last kAuto call chose (for tests and statistics).
  CorrelationMethod last_method() const { return last_method_; }
  uint64_t sparse_calls() const { return sparse_calls_; }
  uint64_t fft_calls() const { return fft_calls_; }

  // Number of (a, b) bin pairs within max_lag of each other: the work of the
  // direct method.  O(|a| + |b|).
  static uint64_t CountPairs(const SparseSignal& a, const SparseSignal& b,
                             int64_t max_lag);

  // The pieces Correlate is made of, for a caller that sees the signals a
  // stretch of time at a time (the streaming search of path_graph.h).
  // Correlate is built from the same pieces, so feeding them the same bins
  // in the same order gives the same sums, bit for bit.
  //
  // kAuto's choice from the two cost figures: `pairs` as CountPairs counts
  // them, `blocks` the overlap-save blocks a's bins fall into (see
  // CorrelateFft: a block starts at the first bin not yet covered and spans
  // BlockLength quanta).
  static CorrelationMethod ChooseMethod(uint64_t pairs, uint64_t blocks,
                                        int64_t max_lag);
  // Quanta of a covered by one overlap-save block.
  static int64_t BlockLength(int64_t max_lag);
  // The direct method for one bin x of a: out[e - x.index + max_lag] +=
  // x.value * b[e] for the bins of b within max_lag of x.  `lo` is a cursor
  // into b, advanced past the bins below x.index - max_lag (so callers feed
  // a's bins in increasing order).  Each bin of b lands in its own entry of
  // out, so the order of b's bins does not change the sums.
  static void AddDirect(const Bin& x, std::span<const Bin> b, size_t& lo,
                        int64_t max_lag, std::vector<double>& out);
  // One overlap-save block starting at bin s: a_block holds a's bins in
  // [s, s + BlockLength), b_block b's bins in [s - max_lag,
  // s + BlockLength + max_lag).  Adds nothing when b_block is empty.
  void AddFftBlock(int64_t s, std::span<const Bin> a_block,
                   std::span<const Bin> b_block, int64_t max_lag,
                   std::vector<double>& out);
  // The overlap-save blocks of a that start at its bins in [from, until):
  // each block starts at the first bin of a not yet covered (the last one
  // may reach past until).  Returns where the next block could start: the
  // end of the last block, or from when there was none.
  int64_t AddFftBlocks(const SparseSignal& a, std::span<const Bin> b,
                       int64_t max_lag, int64_t from, int64_t until,
                       std::vector<double>& out);

 private:
  struct Plan;
  Plan& PlanFor(size_t n);
  void CorrelateSparse(const SparseSignal& a, const SparseSignal& b,
                       int64_t max_lag, std::vector<double>& out) const;
  void CorrelateFft(const SparseSignal& a, const SparseSignal& b,
                    int64_t max_lag, std::vector<double>& out);
  // FFT plans are created once per transform size and reused (FFTW's
  // new-array execute interface with buffers owned by the plan).
  std::map<size_t, std::unique_ptr<Plan>> plans_;
  CorrelationMethod last_method_ = CorrelationMethod::kSparse;
  uint64_t sparse_calls_ = 0;
  uint64_t fft_calls_ = 0;
};

// FFT length used for a lag window of max_lag: a power of two at least
// 2 * (2*max_lag + 1), so each block covers >= 2*max_lag+1 input quanta.
size_t FftLengthFor(int64_t max_lag);

struct SpikeParams {
  double spike_sigma = 4.0;  // N: a spike is >= mean + N sd
  double valley_sigma =
      3.0;  // S: spikes are separated by a point < mean + S sd
};

struct Spike {
  int64_t position;  // index into the correlation array
  double value;
};

// Section 5.2: a spike is a local maximum at least N standard deviations
// above the mean of c; consecutive spikes must be separated by a point less
// than S standard deviations above the mean; among the candidates of one
// spike the largest represents it (the earliest on ties).  Mean and sd are
// over all of c (the whole lag window).  A flat c has no spikes.
std::vector<Spike> FindSpikes(std::span<const double> c, const SpikeParams& p);

}  // namespace bbprof::convolution

#endif  // BBPROF_CONVOLUTION_CORRELATION_H_
