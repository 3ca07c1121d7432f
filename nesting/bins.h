// The histograms of the nesting algorithm: the log-binned delay scale of
// the scoreboards (section 5.1.1.2), the Gaussian that smooths them (7.5.6)
// and the timeline densities (timeline.h), and a flat read-only hash index
// for the lookups the parent choice and the timeline passes make per
// candidate. Header-only: these sit in the hottest loops of steps 3 and 4.
#ifndef BBPROF_NESTING_BINS_H_
#define BBPROF_NESTING_BINS_H_

#include <bit>
#include <cmath>
#include <cstdint>
#include <utility>
#include <vector>

#include "trace/record.h"

namespace bbprof::nesting {

// Scoreboard bins (5.1.1.2): histograms indexed by log_base(delta). The
// paper's 340 bins cover 1 ms to 2 hours; LAN RPCs take microseconds, so our
// range starts at 1 us (delays below it share the first bin) and, because a
// skew window admits parents that start after their child, negative delays
// get a mirrored range.
class BinScale {
 public:
  explicit BinScale(double base) : inv_log_base_(1.0 / std::log(base)) {
    constexpr double kMinNs = 1e3;               // 1 us
    constexpr double kMaxNs = 2.0 * 3600 * 1e9;  // 2 hours
    positive_bins_ =
        1 +
        static_cast<int>(std::ceil(std::log(kMaxNs / kMinNs) * inv_log_base_));
    // lower_[k]: the smallest magnitude in positive bin k >= 1.
    lower_.resize(static_cast<size_t>(positive_bins_) + 2);
    for (int k = 1; k <= positive_bins_ + 1; ++k) {
      lower_[k] = kMinNs * std::exp((k - 1) / inv_log_base_);
    }
    // cell_bin_[e * 256 + j]: for the magnitudes x in
    // [2^(e+9) * (1 + j / 256), 2^(e+9) * (1 + (j + 1) / 256)) ns, twice the
    // bin of the cell's smallest, plus one if a later bin starts inside it.
    cell_bin_.resize(static_cast<size_t>(kCellExponents) * kCellsPerOctave);
    int k = 1;  // cells ascend, so their first bins do too
    for (int e = 0; e < kCellExponents; ++e) {
      for (int j = 0; j < kCellsPerOctave; ++j) {
        const double lo = std::ldexp(
            1.0 + static_cast<double>(j) / kCellsPerOctave, e + kFirstExponent);
        const double hi =
            std::ldexp(1.0 + static_cast<double>(j + 1) / kCellsPerOctave,
                       e + kFirstExponent);
        while (k < positive_bins_ && lo >= lower_[k + 1]) ++k;
        const bool split = k < positive_bins_ && lower_[k + 1] < hi;
        cell_bin_[static_cast<size_t>(e) * kCellsPerOctave + j] =
            2 * k + (split ? 1 : 0);
      }
    }
    // Scores are densities (scoreboards.h): a bin's weight over its width.
    inv_width_.resize(static_cast<size_t>(size()));
    for (int b = 0; b < size(); ++b) inv_width_[b] = 1.0 / Width(b);
  }
  int size() const { return 2 * positive_bins_ + 1; }
  // 1 / Width(bin), from a table.
  double InvWidth(int bin) const { return inv_width_[bin]; }
  // Width of a bin in nanoseconds (the first bin spans -1 us to 1 us).
  double Width(int bin) const {
    int k = bin >= positive_bins_ ? bin - positive_bins_ : positive_bins_ - bin;
    if (k == 0) return 2e3;
    double lo = 1e3 * std::exp((k - 1) / inv_log_base_);
    return lo * (std::exp(1.0 / inv_log_base_) - 1.0);
  }
  // Bin k holds magnitudes in [1 us * base^(k-1), 1 us * base^k). Called
  // tens of millions of times by the timeline passes, so instead of a log
  // it reads the magnitude's binary exponent and top 8 mantissa bits (a
  // cell 0.4% wide, narrower than a bin at the default base) off the
  // double, exactly, and takes the cell's bin from a table. Only in a cell
  // where a bin starts (about one in twelve at the default base) is the
  // magnitude compared with that bin's lower bound (more than once only at
  // bases below 1.004). The cell is read off the nanoseconds' double, not
  // a rounded magnitude in microseconds, so no call needs to step up and
  // down a bin to check. The bins are the log formula's: each is the k
  // with lower_[k] <= x < lower_[k + 1].
  int Bin(trace::TimeNs delta) const {
    trace::TimeNs mag = delta < 0 ? -delta : delta;
    int k;
    if (mag < 1000) {
      k = 0;
    } else {
      const double x = static_cast<double>(mag);
      const uint64_t bits = std::bit_cast<uint64_t>(x);  // x >= 1000 > 2^9
      const int e = static_cast<int>(bits >> 52) - 1023 - kFirstExponent;
      if (e >= kCellExponents) {
        k = positive_bins_;
      } else {
        const int cell =
            cell_bin_[static_cast<size_t>(e) * kCellsPerOctave +
                      ((bits >> (52 - kCellBits)) & (kCellsPerOctave - 1))];
        k = cell >> 1;
        if (cell & 1) {
          while (k < positive_bins_ && x >= lower_[k + 1]) ++k;
        }
      }
    }
    return delta < 0 ? positive_bins_ - k : positive_bins_ + k;
  }

 private:
  double inv_log_base_;
  static constexpr int kCellBits = 8;
  static constexpr int kCellsPerOctave = 1 << kCellBits;
  // Cells start at 2^9 ns (1 us lies in the first octave) and end at 2^44
  // ns: past that, and past 2 hours, every magnitude is in the last bin.
  static constexpr int kFirstExponent = 9;
  static constexpr int kCellExponents = 44 - kFirstExponent;
  int positive_bins_;
  std::vector<double> lower_;
  std::vector<int> cell_bin_;
  std::vector<double> inv_width_;
};

// A Gaussian of sd bins (out to 3 sd) run over a histogram: the scoreboards'
// optional smoothing (7.5.6) and the timeline densities' (timeline.h).
class GaussianSmoother {
 public:
  explicit GaussianSmoother(double sd)
      : radius_(static_cast<int>(std::ceil(3 * sd))), kernel_(2 * radius_ + 1) {
    for (int i = -radius_; i <= radius_; ++i) {
      kernel_[i + radius_] = std::exp(-0.5 * (i / sd) * (i / sd));
      sum_ += kernel_[i + radius_];
    }
  }
  // The sum of the kernel's weights (dividing by it keeps a histogram's mass).
  double sum() const { return sum_; }
  // out = h smoothed, every contribution divided by `divisor`.
  void Apply(const std::vector<double>& h, std::vector<double>& out,
             double divisor) const {
    const int size = static_cast<int>(h.size());
    out.assign(h.size(), 0.0);
    for (int b = 0; b < size; ++b) {
      if (h[b] == 0) continue;
      for (int i = -radius_; i <= radius_; ++i) {
        int t = b + i;
        if (t >= 0 && t < size) out[t] += h[b] * kernel_[i + radius_] / divisor;
      }
    }
  }

 private:
  int radius_;
  std::vector<double> kernel_;
  double sum_ = 0;
};

// splitmix64's finaliser: the hash that the timeline passes' gap and set
// keys, step 5's shapes and the request export's keys are mixed with.
inline uint64_t Mix64(uint64_t h) {
  h ^= h >> 30;
  h *= 0xBF58476D1CE4E5B9ULL;
  h ^= h >> 27;
  h *= 0x94D049BB133111EBULL;
  return h ^ (h >> 31);
}

// A read-only map from 64-bit keys to small values, built once per
// timeline pass and looked up tens of millions of times: open addressing
// with linear probing in one array, so a lookup is one or two cache lines
// where std::unordered_map chases a pointer per lookup.
class FlatIndex {
 public:
  static constexpr uint32_t kMissing = 0xFFFFFFFFu;
  // At least `min_slots` slots (KeyIndex leaves room to insert).
  void Build(const std::vector<std::pair<uint64_t, uint32_t>>& items,
             size_t min_slots = 0) {
    size_t cap = 16;
    while (cap < 2 * items.size() || cap < min_slots) cap *= 2;
    mask_ = cap - 1;
    slots_.assign(cap, Slot{0, kMissing});
    for (const auto& [k, v] : items) FindOrInsert(k, v);
  }
  uint32_t Find(uint64_t key) const {
    for (size_t i = Hash(key) & mask_;; i = (i + 1) & mask_) {
      const Slot& s = slots_[i];
      if (s.value == kMissing) return kMissing;
      if (s.key == key) return s.value;
    }
  }
  // The key's value, or (true) `value` newly stored under it; the caller
  // keeps an empty slot: at most slots() - 1 keys.
  std::pair<uint32_t, bool> FindOrInsert(uint64_t key, uint32_t value) {
    size_t i = Hash(key) & mask_;
    for (; slots_[i].value != kMissing; i = (i + 1) & mask_) {
      if (slots_[i].key == key) return {slots_[i].value, false};
    }
    slots_[i] = {key, value};
    return {value, true};
  }
  size_t slots() const { return slots_.size(); }

 private:
  struct Slot {
    uint64_t key;
    uint32_t value;
  };
  static size_t Hash(uint64_t k) {
    return static_cast<size_t>((k * 0x9E3779B97F4A7C15ULL) >> 17);
  }
  size_t mask_ = 0;
  std::vector<Slot> slots_{Slot{0, kMissing}};  // empty: value kMissing
};

// A growing map from 64-bit keys to dense indices 0, 1, 2... in the order
// the keys were first inserted, where what each key counts lives in the
// caller's arrays under its index. The timeline passes count into three of
// these once per gap and per child set of every call (the
// std::unordered_maps they replace allocated a node per key and chased a
// pointer per lookup). Iteration is by index: insertion order, the input's.
// A FlatIndex of key -> index, rebuilt twice as large when half full.
class KeyIndex {
 public:
  static constexpr uint32_t kMissing = FlatIndex::kMissing;
  // The key's index, and whether the key was new. Inlined into the
  // timeline passes' counting loops, where it runs tens of millions of
  // times and the call itself cost as much as the lookup.
  [[gnu::always_inline]] std::pair<uint32_t, bool> Insert(uint64_t key) {
    if (2 * (keys_.size() + 1) > table_.slots()) Grow();
    const auto result =
        table_.FindOrInsert(key, static_cast<uint32_t>(keys_.size()));
    if (result.second) keys_.push_back(key);
    return result;
  }
  uint32_t Find(uint64_t key) const { return table_.Find(key); }
  size_t size() const { return keys_.size(); }
  uint64_t key(uint32_t index) const { return keys_[index]; }

 private:
  [[gnu::noinline]] void Grow() {
    std::vector<std::pair<uint64_t, uint32_t>> items;
    items.reserve(keys_.size());
    for (uint32_t index = 0; index < keys_.size(); ++index) {
      items.emplace_back(keys_[index], index);
    }
    table_.Build(items, 2 * table_.slots());
  }
  FlatIndex table_;
  std::vector<uint64_t> keys_;
};

}  // namespace bbprof::nesting

#endif  // BBPROF_NESTING_BINS_H_
