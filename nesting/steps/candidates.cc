#include "nesting/steps/candidates.h"

#include <cstddef>
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
  // The visits read the pairs by a pointer of their own: part 0 writes
  // table->cands, beside the vector's own members (SweepEnclosingInParts).
  Pair* const pairs = table->pairs.data();
  const bool corrected = !table->call_order.empty();
  // Part 0 lists its candidates in the table as one sweep would; the
  // others in lists of their own, moved in after (their ranges shifted).
  struct alignas(64) Part {
    HugeVector<uint32_t> cands;
    uint64_t total_cands = 0, with_cands = 0;
  };
  SweepParts<Part> parts = SweepEnclosingInParts<Part>(
      *table, params.skew_window, params.threads,
      [&](Part& part, int part_index, uint32_t child,
          const std::vector<uint32_t>& calls) {
        HugeVector<uint32_t>& cands =
            part_index == 0 ? table->cands : part.cands;
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
        if (corrected) {
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
          ++part.with_cands;
          part.total_cands += cm.cand_end - cm.cand_begin;
        }
      });
  const size_t n_parts = parts.states.size();
  uint64_t total_cands = 0, with_cands = 0;
  for (const Part& part : parts.states) {
    total_cands += part.total_cands;
    with_cands += part.with_cands;
  }
  if (n_parts > 1) {
    std::vector<size_t> offset(n_parts + 1, table->cands.size());
    for (size_t p = 1; p < n_parts; ++p) {
      offset[p + 1] = offset[p] + parts.states[p].cands.size();
    }
    table->cands.resize(offset[n_parts]);
    RunParts(static_cast<int>(n_parts) - 1, [&](int q) {
      const auto p = static_cast<size_t>(q) + 1;
      const HugeVector<uint32_t>& own = parts.states[p].cands;
      std::copy(own.begin(), own.end(),
                table->cands.begin() + static_cast<std::ptrdiff_t>(offset[p]));
      const auto shift = static_cast<uint32_t>(offset[p]);
      for (size_t j = parts.bounds[p]; j < parts.bounds[p + 1]; ++j) {
        Pair& c = pairs[table->ret_order[j]];
        c.cand_begin += shift;
        c.cand_end += shift;
      }
    });
  }
  stats->mean_parallelism =
      with_cands ? static_cast<double>(total_cands) / with_cands : 0.0;
}

}  // namespace bbprof::nesting
