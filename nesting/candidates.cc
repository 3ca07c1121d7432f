#include "nesting/candidates.h"

#include <tuple>

namespace bbprof::nesting {

using trace::TimeNs;

namespace {

// The windows of a call's edge.
EdgeWindow WindowsOf(const Params& params, const EdgeWindows& windows,
                     const Pair& c) {
  if (!params.skew_auto) return {params.skew_window, params.skew_window};
  auto it = windows.find(CallTable::EdgeKey(c));
  return it == windows.end() ? EdgeWindow{} : it->second;
}

}  // namespace

void FindCandidates(const Params& params, const EdgeWindows& windows,
                    CallTable* table, InputStats* stats) {
  std::vector<Pair>& pairs = table->pairs;
  std::vector<uint32_t>& cands = table->cands;
  uint64_t total_cands = 0, with_cands = 0;
  SweepEnclosing(
      *table, params.skew_window,
      [&](uint32_t child, const std::vector<uint32_t>& calls) {
        Pair& cm = pairs[child];
        const Pair& c = cm;
        const auto [ws, we, overlapping] = WindowsOf(params, windows, c);
        cm.cand_begin = static_cast<uint32_t>(cands.size());
        for (uint32_t p : calls) {
          const Pair& pp = pairs[p];
          // The cheating run: a parent must share the child's path
          // instance (a child without ground truth may take any).
          if (params.use_pathids && c.pathid != 0 && pp.pathid != c.pathid) {
            continue;
          }
          bool starts_before =
              pp.call < c.call || (pp.call == c.call && p < child);
          if (!starts_before && !(ws > 0 && pp.call <= c.call + ws)) continue;
          // Without skew, an active parent has not returned yet by
          // construction; with skew it may have returned up to we before.
          if (pp.ret < c.ret - we) continue;
          if (overlapping && pp.ret < c.call) continue;
          cands.push_back(p);
        }
        // Keep candidates in call order so ties go to the earliest parent
        // (with clocks corrected, by corrected call time: pair indexes
        // are in the order the calls were stamped).
        if (!table->call_order.empty()) {
          std::sort(cands.begin() + cm.cand_begin, cands.end(),
                    [&](uint32_t a, uint32_t b) {
                      return std::tie(pairs[a].call, a) <
                             std::tie(pairs[b].call, b);
                    });
        } else if (params.skew_window > 0) {
          std::sort(cands.begin() + cm.cand_begin, cands.end());
        }
        cm.cand_end = static_cast<uint32_t>(cands.size());
        if (cm.cand_end > cm.cand_begin) {
          ++with_cands;
          total_cands += cm.cand_end - cm.cand_begin;
        }
      });
  stats->mean_parallelism =
      with_cands ? static_cast<double>(total_cands) / with_cands : 0.0;
}

}  // namespace bbprof::nesting
