// LogHistogram: a compact latency distribution with exact count, sum, min and
// max and log-binned counts for quantiles (1% relative resolution), so that
// every node of every path pattern can keep its whole distribution (p50, p90,
// p99) at a few kilobytes, not a list of samples.
#ifndef BBPROF_NESTING_HISTOGRAM_H_
#define BBPROF_NESTING_HISTOGRAM_H_

#include <cstdint>
#include <functional>
#include <map>
#include <utility>
#include <vector>

#include "trace/record.h"

namespace bbprof::nesting {

struct Summary {
  double mean = 0, p50 = 0, p90 = 0, p99 = 0, min = 0, max = 0;  // seconds
};

// A distribution cut into a few bins for drawing (the result JSON's
// latency_hist and own_time_hist): edges_s holds counts.size() + 1 ascending
// bounds in seconds, bin i is [edges_s[i], edges_s[i+1]) (the last one closed).
// Both are empty when nothing was added.
struct BinnedCounts {
  std::vector<double> edges_s;
  std::vector<uint64_t> counts;
};

class LogHistogram {
 public:
  void Add(trace::TimeNs value);
  // Adds every value of `other` (the stream driver's segments: counts and
  // bins add exactly; the sum in nanoseconds is a double, added whole).
  void Merge(const LogHistogram& other);
  // Every non-empty fine bin in ascending order, as f(lo_ns, hi_ns, count):
  // [lo, hi) for bins of positive values, (lo, hi] for negative ones and
  // lo == hi == 0 for zero. Two histograms share one grid, so their bins
  // line up (what the rank test of results/diff/diff.h relies on).
  void ForEachBin(const std::function<void(double, double, uint64_t)>& f) const;
  uint64_t count() const { return count_; }
  double mean_s() const;
  Summary Summarize() const;
  // The distribution in at most max_bins bins between min and max: log-spaced
  // when every value is positive and max is at least 8 times min (latencies
  // span decades), evenly spaced otherwise (own time under skew can be
  // negative). Each fine bin (1%) goes whole to the bin holding its midpoint,
  // so the counts add up to count().
  BinnedCounts Rebin(int max_bins) const;
  // Quantile q in [0, 1], in seconds; exact at the extremes, within 1%
  // elsewhere.
  double Quantile(double q) const;

  // Everything a histogram holds, to move it between processes (the MPI
  // driver sends segments' patterns to rank 0) and back, exactly.
  struct State {
    std::map<int, uint64_t> bins;
    uint64_t count = 0;
    double sum_ns = 0;
    trace::TimeNs min = 0, max = 0;
  };
  State state() const {
    return {std::map<int, uint64_t>(bins_.begin(), bins_.end()), count_,
            sum_ns_, min_, max_};
  }
  // The fine bin of a value: k >= 1 holds values in [1.01^(k-1), 1.01^k)
  // ns, -k the same negative values (possible only under clock skew), 0
  // holds 0. Exactly 1 + floor(ln(value) / ln(1.01)) as the C library's log
  // computes it, without calling it below 2^46 ns.
  static int BinOf(trace::TimeNs value);

  static LogHistogram FromState(State s) {
    LogHistogram h;
    h.bins_.assign(s.bins.begin(), s.bins.end());
    h.count_ = s.count;
    h.sum_ns_ = s.sum_ns;
    h.min_ = s.min;
    h.max_ = s.max;
    return h;
  }

 private:
  static double BinMid(int bin);
  // (bin, count), bins ascending, only the non-empty ones: a node's latency
  // spans few bins. A sorted vector, not a std::map: Add runs for every
  // call of every request (three histograms each), and a search of a
  // contiguous array of at most a few hundred entries, after a check of
  // the bin the previous value fell in and of where the bin would be if
  // the bins from there on were all present (as they are where a busy
  // histogram's values gather), costs a fraction of a tree walk and a
  // third of its memory.
  std::vector<std::pair<int, uint64_t>> bins_;
  size_t last_ = 0;  // where the previous Add's bin is in bins_
  uint64_t count_ = 0;
  double sum_ns_ = 0;
  trace::TimeNs min_ = 0, max_ = 0;
};

}  // namespace bbprof::nesting

#endif  // BBPROF_NESTING_HISTOGRAM_H_
