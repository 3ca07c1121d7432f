// Distribution: a compact summary of many durations (a node's latency or
// call delay over all instances of a path pattern). Exact count, sum, min and
// max; quantiles from a log-binned histogram (base 1.01 from 1 ns, so a
// quantile is within 1% of the true value), which keeps a pattern's memory
// independent of how many instances it has.
#ifndef BBPROF_NESTING_DISTRIBUTION_H_
#define BBPROF_NESTING_DISTRIBUTION_H_

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <map>

namespace bbprof::nesting {

class Distribution {
 public:
  void Add(double seconds) {
    ++count_;
    sum_ += seconds;
    min_ = std::min(min_, seconds);
    max_ = std::max(max_, seconds);
    ++bins_[BinOf(seconds)];
  }
  uint64_t count() const { return count_; }
  double mean() const { return count_ ? sum_ / static_cast<double>(count_) : 0; }
  double sum() const { return sum_; }
  double min() const { return count_ ? min_ : 0; }
  double max() const { return count_ ? max_ : 0; }
  // The q-quantile (0..1), nearest-rank, reported as its bin's geometric
  // centre clamped to [min, max].
  double Quantile(double q) const {
    if (count_ == 0) return 0;
    uint64_t rank = static_cast<uint64_t>(std::ceil(q * static_cast<double>(count_)));
    rank = std::clamp<uint64_t>(rank, 1, count_);
    uint64_t seen = 0;
    for (const auto& [bin, n] : bins_) {
      seen += n;
      if (seen >= rank) return std::clamp(ValueOf(bin), min(), max());
    }
    return max();
  }

 private:
  static constexpr double kLogBase = 0.00995033085316808;  // ln(1.01)
  static int BinOf(double s) {
    if (!(s > 1e-9)) return 0;  // zero, negative (under skew) or NaN
    return 1 + static_cast<int>(std::log(s / 1e-9) / kLogBase);
  }
  static double ValueOf(int bin) {
    if (bin == 0) return 0;
    return 1e-9 * std::exp((bin - 0.5) * kLogBase);
  }
  uint64_t count_ = 0;
  double sum_ = 0;
  double min_ = std::numeric_limits<double>::infinity();
  double max_ = -std::numeric_limits<double>::infinity();
  std::map<int, uint64_t> bins_;
};

}  // namespace bbprof::nesting

#endif  // BBPROF_NESTING_DISTRIBUTION_H_
