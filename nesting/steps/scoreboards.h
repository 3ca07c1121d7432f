// Step 3 of the nesting algorithm (section 5.1.1.2, Figure 4's "score
// nestings"): every candidate nesting (A->B encloses B->C) adds
// 1/|candidates| to the (A, B, C) histogram at the bin of the delay
// between the two calls. Optionally each histogram is then smoothed with a
// Gaussian (7.5.6). Its size follows the system's shape (one board per
// triple of nodes that nest), not the trace's length.
//
// The weights are added as integers (1/n in units of 2^-31, rounded), not
// as doubles: a sum of doubles depends on the order of its terms in its
// last bits, a sum of integers does not. So the boards can be built in
// parts of the return order, each on a thread of its own, and merged by
// addition into the very boards one walk gives (docs/nesting.md, "Passes
// and their state"), and a driver that builds them from windows or ranks
// can do the same. No sum overflows: a child's n weights add up to at most
// 2^31 + n/2 <= 2^32, and a table has fewer than 2^32 calls. The rounding
// moves a weight by at most 2^-32, far below the differences between
// boards that decide a parent, but for near-ties.
#ifndef BBPROF_NESTING_STEPS_SCOREBOARDS_H_
#define BBPROF_NESTING_STEPS_SCOREBOARDS_H_

#include <cstddef>
#include <cstdint>
#include <vector>

#include "nesting/bins.h"
#include "nesting/call_table.h"
#include "nesting/nesting.h"

namespace bbprof::nesting {

class Scoreboards {
 public:
  // The weights of the children at return positions [begin, end) of
  // table.ret_order: boards numbered in the order the part first scores
  // them, one row of scale.size() integer sums each.
  struct Part {
    KeyIndex index;
    std::vector<uint64_t> sums;
  };
  static Part ScorePart(const BinScale& scale, const CallTable& table,
                        size_t begin, size_t end);

  // The boards of `parts`, which cover the return order in order (one
  // part of the whole order on one thread): the same boards, numbered the
  // same, however the order is cut.
  Scoreboards(const Params& params, const BinScale& scale,
              std::vector<Part>&& parts);

  size_t size() const { return index_.size(); }
  // The score of `parent` as the cause of `child` (5.1.1.3, before the
  // penalties): the board's value at their delay. Scores are densities: a
  // bin's weight divided by its width. With log bins a wide bin at a long
  // delay collects the accidental nestings of a whole stretch of time,
  // while the true, short delay is spread over narrow bins; compared raw,
  // the accidental bin wins as soon as a node has more than a few calls in
  // flight. Per unit of delay the comparison is fair at every scale.
  // Params::raw_bin_scores scores by the raw value, as the paper does.
  double Score(const CallTable& table, uint32_t parent, uint32_t child) const {
    const Pair& c = table.pairs[child];
    const Pair& p = table.pairs[parent];
    const int bin = scale_.Bin(c.call - p.call);
    const size_t row = index_.Find(table.BoardKey(parent, child));
    return boards_[row * bins_ + static_cast<size_t>(bin)] *
           (raw_ ? 1.0 : scale_.InvWidth(bin));
  }

 private:
  const BinScale& scale_;
  bool raw_;
  size_t bins_;
  // Board keys numbered in the order they are first scored, and the
  // boards, one row of bins_ each, end to end under those numbers: a flat
  // lookup and one memory access per candidate scored, the hottest lookup
  // of step 4.
  KeyIndex index_;
  std::vector<double> boards_;
};

}  // namespace bbprof::nesting

#endif  // BBPROF_NESTING_STEPS_SCOREBOARDS_H_
