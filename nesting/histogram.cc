#include "nesting/histogram.h"

#include <algorithm>
#include <array>
#include <bit>
#include <cmath>
#include <limits>

namespace bbprof::nesting {

namespace {
const double kLogStep = std::log(1.01);

// The bin of a positive value, by its definition: what every other way of
// finding it must agree with, to the value.
int BinByLog(trace::TimeNs value) {
  return 1 + static_cast<int>(std::log(static_cast<double>(value)) / kLogStep);
}

// BinByLog without a log, for values below 2^46 ns (19.5 hours): Add runs
// for every call of every request, three times, and a log would be most
// of its cost. The table holds each bin's lowest value, found from
// BinByLog itself, so the two agree on every value: BinByLog never
// descends over whole nanoseconds there (the logs of consecutive integers
// below 2^46 differ by 4 ulps or more, and the C library's log errs by
// under one), which LogHistogramTest checks at every bin's edge. A value's binary exponent and
// next 8 bits (a cell 0.4% wide, narrower than a 1% bin) give the bin of
// the cell's lowest value; a step up where the cell holds a bin's start.
class FastBins {
 public:
  static constexpr int kExponents = 46;
  static constexpr trace::TimeNs kLimit = trace::TimeNs{1} << kExponents;

  FastBins() {
    const int last = BinByLog(kLimit - 1);
    lowest_.assign(static_cast<size_t>(last) + 2, kLimit);
    lowest_[1] = 1;
    for (int b = 2; b <= last; ++b) {
      trace::TimeNs lo = lowest_[b - 1], hi = kLimit - 1;  // BinByLog(hi) >= b
      while (lo < hi) {
        const trace::TimeNs mid = lo + (hi - lo) / 2;
        if (BinByLog(mid) >= b) {
          hi = mid;
        } else {
          lo = mid + 1;
        }
      }
      lowest_[b] = lo;
    }
    for (trace::TimeNs v = 1; v < kDirect; ++v) {
      direct_[static_cast<size_t>(v)] = BinByLog(v);
    }
    for (int e = kDirectBits; e < kExponents; ++e) {
      for (int m = 0; m < 256; ++m) {
        cell_[static_cast<size_t>(e) * 256 + static_cast<size_t>(m)] =
            BinByLog(trace::TimeNs{256 + m} << (e - 8));
      }
    }
  }

  int Bin(trace::TimeNs value) const {  // 0 < value < kLimit
    if (value < kDirect) return direct_[static_cast<size_t>(value)];
    const int e = 63 - std::countl_zero(static_cast<uint64_t>(value));
    const auto m = static_cast<size_t>((value >> (e - 8)) & 255);
    int k = cell_[static_cast<size_t>(e) * 256 + m];
    while (value >= lowest_[static_cast<size_t>(k) + 1]) ++k;
    return k;
  }

 private:
  static constexpr int kDirectBits = 10;
  static constexpr trace::TimeNs kDirect = trace::TimeNs{1} << kDirectBits;
  std::vector<trace::TimeNs> lowest_;  // [b]: bin b's lowest value
  std::array<int, kDirect> direct_{};
  std::array<int, static_cast<size_t>(kExponents) * 256> cell_{};
};

const FastBins& Fast() {
  static const FastBins bins;
  return bins;
}
}  // namespace

int LogHistogram::BinOf(trace::TimeNs value) {
  if (value == 0) return 0;
  if (value < 0) {
    // -INT64_MIN overflows; no clock is that far off.
    return value == std::numeric_limits<trace::TimeNs>::min()
               ? -BinByLog(std::numeric_limits<trace::TimeNs>::max())
               : -BinOf(-value);
  }
  return value < FastBins::kLimit ? Fast().Bin(value) : BinByLog(value);
}

double LogHistogram::BinMid(int bin) {
  if (bin == 0) return 0;
  if (bin < 0) return -BinMid(-bin);
  return std::exp((bin - 0.5) * kLogStep);
}

void LogHistogram::Add(trace::TimeNs value) {
  if (count_ == 0) {
    min_ = max_ = value;
  } else {
    min_ = std::min(min_, value);
    max_ = std::max(max_, value);
  }
  ++count_;
  sum_ns_ += static_cast<double>(value);
  const int bin = BinOf(value);
  // Latencies repeat: many values fall in the bin of the one before, and
  // the bins around it are mostly all present.
  if (last_ < bins_.size()) {
    const int64_t at = static_cast<int64_t>(last_) +
                       (static_cast<int64_t>(bin) - bins_[last_].first);
    if (at >= 0 && at < static_cast<int64_t>(bins_.size()) &&
        bins_[static_cast<size_t>(at)].first == bin) {
      last_ = static_cast<size_t>(at);
      ++bins_[last_].second;
      return;
    }
  }
  auto it = std::lower_bound(
      bins_.begin(), bins_.end(), bin,
      [](const std::pair<int, uint64_t>& e, int b) { return e.first < b; });
  if (it == bins_.end() || it->first != bin) it = bins_.insert(it, {bin, 0});
  ++it->second;
  last_ = static_cast<size_t>(it - bins_.begin());
}

void LogHistogram::Merge(const LogHistogram& other) {
  if (other.count_ == 0) return;
  if (count_ == 0) {
    min_ = other.min_;
    max_ = other.max_;
  } else {
    min_ = std::min(min_, other.min_);
    max_ = std::max(max_, other.max_);
  }
  count_ += other.count_;
  sum_ns_ += other.sum_ns_;
  // Both sorted: one merge of the two runs.
  std::vector<std::pair<int, uint64_t>> merged;
  merged.reserve(bins_.size() + other.bins_.size());
  auto a = bins_.begin();
  auto b = other.bins_.begin();
  while (a != bins_.end() || b != other.bins_.end()) {
    if (b == other.bins_.end() || (a != bins_.end() && a->first < b->first)) {
      merged.push_back(*a++);
    } else if (a == bins_.end() || b->first < a->first) {
      merged.push_back(*b++);
    } else {
      merged.emplace_back(a->first, a->second + b->second);
      ++a;
      ++b;
    }
  }
  bins_ = std::move(merged);
  last_ = 0;
}

double LogHistogram::mean_s() const {
  return count_ ? sum_ns_ / static_cast<double>(count_) / 1e9 : 0.0;
}

void LogHistogram::ForEachBin(
    const std::function<void(double, double, uint64_t)>& f) const {
  for (const auto& [bin, n] : bins_) {
    if (bin == 0) {
      f(0.0, 0.0, n);
    } else if (bin > 0) {
      f(std::exp((bin - 1) * kLogStep), std::exp(bin * kLogStep), n);
    } else {
      f(-std::exp(-bin * kLogStep), -std::exp((-bin - 1) * kLogStep), n);
    }
  }
}

double LogHistogram::Quantile(double q) const {
  if (count_ == 0) return 0;
  if (q <= 0) return trace::NsToSeconds(min_);
  if (q >= 1) return trace::NsToSeconds(max_);
  // Nearest-rank quantile on the binned counts, clamped into [min, max] so a
  // bin's midpoint never lies outside what was observed.
  auto rank = static_cast<uint64_t>(std::ceil(q * static_cast<double>(count_)));
  uint64_t seen = 0;
  for (const auto& [bin, n] : bins_) {
    seen += n;
    if (seen >= rank) {
      double v = BinMid(bin);
      v = std::clamp(v, static_cast<double>(min_), static_cast<double>(max_));
      return v / 1e9;
    }
  }
  return trace::NsToSeconds(max_);
}

Summary LogHistogram::Summarize() const {
  Summary s;
  if (count_ == 0) return s;
  s.mean = mean_s();
  s.p50 = Quantile(0.5);
  s.p90 = Quantile(0.9);
  s.p99 = Quantile(0.99);
  s.min = trace::NsToSeconds(min_);
  s.max = trace::NsToSeconds(max_);
  return s;
}

BinnedCounts LogHistogram::Rebin(int max_bins) const {
  BinnedCounts out;
  if (count_ == 0 || max_bins < 1) return out;
  const double lo = static_cast<double>(min_);
  double hi = static_cast<double>(max_);
  // One value: a bin of 1% (at least 1 ns) starting at it, so edges ascend.
  if (hi <= lo) hi = lo + std::max(1.0, std::fabs(lo) * 0.01);
  // As many bins as the fine histogram has non-empty ones, up to max_bins:
  // three distinct latencies need no forty bins.
  const auto n = static_cast<size_t>(
      std::clamp<size_t>(bins_.size(), 1, static_cast<size_t>(max_bins)));
  const bool log_spaced = lo > 0 && hi >= 8 * lo;
  std::vector<double> edges_ns(n + 1);
  for (size_t i = 0; i <= n; ++i) {
    double f = static_cast<double>(i) / static_cast<double>(n);
    edges_ns[i] =
        log_spaced ? lo * std::exp(f * std::log(hi / lo)) : lo + f * (hi - lo);
  }
  edges_ns.front() = lo;
  edges_ns.back() = hi;
  // Whole nanoseconds (what the trace measures), never descending: short
  // numbers in the JSON.
  for (size_t i = 1; i <= n; ++i)
    edges_ns[i] = std::max(std::round(edges_ns[i]), edges_ns[i - 1]);
  out.counts.assign(n, 0);
  for (const auto& [bin, k] : bins_) {
    double v = std::clamp(BinMid(bin), lo, hi);
    auto it = std::upper_bound(edges_ns.begin(), edges_ns.end(), v);
    size_t i = it == edges_ns.begin()
                   ? 0
                   : static_cast<size_t>(it - edges_ns.begin()) - 1;
    out.counts[std::min(i, n - 1)] += k;
  }
  out.edges_s.reserve(n + 1);
  for (double e : edges_ns) out.edges_s.push_back(e / 1e9);
  return out;
}

}  // namespace bbprof::nesting
