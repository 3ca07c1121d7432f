#include "nesting/scoreboards.h"

#include <algorithm>
#include <cstddef>
#include <vector>

namespace bbprof::nesting {

double* Scoreboards::Board(uint64_t key) {
  const auto [index, inserted] = index_.Insert(key);
  if (inserted) boards_.resize(boards_.size() + bins_, 0.0);
  return &boards_[static_cast<size_t>(index) * bins_];
}

Scoreboards::Scoreboards(const Params& params, const BinScale& scale,
                         const CallTable& table)
    : scale_(scale),
      raw_(params.raw_bin_scores),
      bins_(static_cast<size_t>(scale.size())) {
  const Pairs& pairs = table.pairs;
  for (uint32_t child : table.ret_order) {
    const Pair& c = pairs[child];
    uint32_t n = c.cand_end - c.cand_begin;
    if (n == 0) continue;
    double weight = 1.0 / n;
    for (uint32_t k = c.cand_begin; k < c.cand_end; ++k) {
      const Pair& p = pairs[table.cands[k]];
      Board(table.BoardKey(table.cands[k],
                           child))[scale_.Bin(c.call - p.call)] += weight;
    }
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
