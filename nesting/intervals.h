// The length of a union of intervals: how much of a call's span its
// children cover, counting parallel children once. Own time (a node's
// latency not covered by its children) is computed from means for the text
// and JSON output (output.h) and per instance for the own-time histograms
// (pattern_table.cc); both use this.
#ifndef BBPROF_NESTING_INTERVALS_H_
#define BBPROF_NESTING_INTERVALS_H_

#include <algorithm>
#include <utility>
#include <vector>

namespace bbprof::nesting {

// Sorts `iv` (pairs [start, end) with start < end) and returns the length
// of their union.
template <typename T>
T UnionLength(std::vector<std::pair<T, T>>* iv) {
  std::sort(iv->begin(), iv->end());
  T covered = 0;
  bool open = false;
  T cur_s = 0, cur_e = 0;
  for (const auto& [s, e] : *iv) {
    if (!open || s > cur_e) {
      if (open) covered += cur_e - cur_s;
      cur_s = s;
      cur_e = e;
      open = true;
    } else {
      cur_e = std::max(cur_e, e);
    }
  }
  if (open) covered += cur_e - cur_s;
  return covered;
}

}  // namespace bbprof::nesting

#endif  // BBPROF_NESTING_INTERVALS_H_
