#include "nesting/steps/scoreboards.h"

#include <algorithm>
#include <cstddef>
#include <utility>
#include <vector>

namespace bbprof::nesting {

namespace {

// One child's weight, 1/n, in units of 2^-31 (rounded to nearest).
constexpr int kWeightBits = 31;
uint64_t WeightOf(uint32_t n) {
  return ((uint64_t{1} << kWeightBits) + n / 2) / n;
}

}  // namespace

Scoreboards::Part Scoreboards::ScorePart(const BinScale& scale,
                                         const CallTable& table, size_t begin,
                                         size_t end) {
  const auto bins = static_cast<size_t>(scale.size());
  const Pairs& pairs = table.pairs;
  Part part;
  for (size_t j = begin; j < end; ++j) {
    const uint32_t child = table.ret_order[j];
    const Pair& c = pairs[child];
    const uint32_t n = c.cand_end - c.cand_begin;
    if (n == 0) continue;
    const uint64_t weight = WeightOf(n);
    for (uint32_t k = c.cand_begin; k < c.cand_end; ++k) {
      const uint32_t parent = table.cands[k];
      const auto [row, inserted] =
          part.index.Insert(table.BoardKey(parent, child));
      if (inserted) part.sums.resize(part.sums.size() + bins, 0);
      part.sums[row * bins +
                static_cast<size_t>(scale.Bin(c.call - pairs[parent].call))] +=
          weight;
    }
  }
  return part;
}

Scoreboards::Scoreboards(const Params& params, const BinScale& scale,
                         std::vector<Part>&& parts)
    : scale_(scale),
      raw_(params.raw_bin_scores),
      bins_(static_cast<size_t>(scale.size())) {
  // Keys in the order the parts first met them, part by part: the order
  // of one walk. The first part's boards are taken as they are (on one
  // thread, the only part), and each later part's rows added into theirs.
  std::vector<uint64_t> sums;
  if (!parts.empty()) {
    index_ = std::move(parts[0].index);
    sums = std::move(parts[0].sums);
  }
  for (size_t p = 1; p < parts.size(); ++p) {
    Part& part = parts[p];
    for (uint32_t row = 0; row < part.index.size(); ++row) {
      const auto [to, inserted] = index_.Insert(part.index.key(row));
      if (inserted) sums.resize(sums.size() + bins_, 0);
      const uint64_t* from = &part.sums[row * bins_];
      uint64_t* into = &sums[to * bins_];
      for (size_t b = 0; b < bins_; ++b) into[b] += from[b];
    }
    part = Part{};
  }
  constexpr double kUnit =
      1.0 / static_cast<double>(uint64_t{1} << kWeightBits);
  boards_.resize(sums.size());
  for (size_t i = 0; i < sums.size(); ++i) {
    boards_[i] = static_cast<double>(sums[i]) * kUnit;
  }
  if (params.smooth_bins > 0) {
    const GaussianSmoother smoother(params.smooth_bins);
    std::vector<double> h, out;
    for (size_t row = 0; row < boards_.size(); row += bins_) {
      const auto first = boards_.begin() + static_cast<std::ptrdiff_t>(row);
      h.assign(first, first + static_cast<std::ptrdiff_t>(bins_));
      smoother.Apply(h, out, 1.0);
      std::copy(out.begin(), out.end(), first);
    }
  }
}

}  // namespace bbprof::nesting
