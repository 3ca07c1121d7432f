#include "nesting/skew.h"

#include <algorithm>

namespace bbprof::nesting {

trace::TimeNs ChooseSkewWindow(std::vector<trace::TimeNs>& needs,
                               uint64_t children) {
  // A clock offset d makes every child whose true gap to its parent's
  // start (or end) is below d miss by d minus that gap: needs spread from
  // 0 up to d, with a sharp upper edge at d. Lost parents (a sniffer drop)
  // also leave children missing, by whatever the distance to another call
  // is, so the edge is read at the 99th percentile, not the maximum. That
  // percentile is low: each miss is measured to the nearest call, which,
  // with other calls in flight, is often nearer than the cause (most of all
  // for a call made after its cause returned, an asynchronous server). So
  // the window is twice it: on the skewed samples a margin of 10% gave 0.0
  // to 0.1 points more false negatives, and the asynchronous fan-in sample
  // 47% against 30% (docs/nesting.md).
  if (needs.size() < 5 || static_cast<double>(needs.size()) <
                              0.005 * static_cast<double>(children)) {
    return 0;
  }
  const size_t k = (needs.size() * 99 + 99) / 100 - 1;
  std::nth_element(needs.begin(),
                   needs.begin() + static_cast<std::ptrdiff_t>(k), needs.end());
  const trace::TimeNs w = needs[k] * 2;
  return std::min(w, kAutoSkewCap);
}

}  // namespace bbprof::nesting
