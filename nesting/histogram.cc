#include "nesting/histogram.h"

#include <algorithm>
#include <cmath>

namespace bbprof::nesting {

namespace {
const double kLogStep = std::log(1.01);
}

int LogHistogram::BinOf(trace::TimeNs value) {
  if (value == 0) return 0;
  if (value < 0) return -BinOf(-value);
  return 1 + static_cast<int>(std::log(static_cast<double>(value)) / kLogStep);
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
  // Latencies repeat: many values fall in the bin of the one before.
  if (last_ < bins_.size() && bins_[last_].first == bin) {
    ++bins_[last_].second;
    return;
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
