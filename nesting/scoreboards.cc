#include "nesting/scoreboards.h"

#include <utility>

namespace bbprof::nesting {

std::vector<double>& Scoreboards::Board(uint64_t key) {
  auto [it, inserted] = index_.try_emplace(key, boards_.size());
  if (inserted) boards_.emplace_back(static_cast<size_t>(scale_.size()), 0.0);
  return boards_[it->second];
}

Scoreboards::Scoreboards(const Params& params, const BinScale& scale,
                         const CallTable& table)
    : scale_(scale), raw_(params.raw_bin_scores) {
  const std::vector<Pair>& pairs = table.pairs;
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
  std::vector<std::pair<uint64_t, uint32_t>> items;
  items.reserve(index_.size());
  for (const auto& [key, index] : index_) {
    items.emplace_back(key, static_cast<uint32_t>(index));
  }
  flat_.Build(items);
  if (params.smooth_bins > 0) {
    const GaussianSmoother smoother(params.smooth_bins);
    std::vector<double> out;
    for (auto& h : boards_) {
      smoother.Apply(h, out, 1.0);
      h.swap(out);
    }
  }
}

}  // namespace bbprof::nesting
