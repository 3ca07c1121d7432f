// Step 5 of the nesting algorithm (section 5.1.1.4, Figure 4's "find call
// paths"): a causal tree from every root call, and the pattern table that
// aggregates trees of one shape: per node the latency, call delay and own
// time distributions (nesting/histogram.h), per pattern its count, total
// latency, median and slowest instance (Example) and a timeline of
// buckets (section 8's sliding windows), then each pattern's display
// order and signature (shared/spec/results-json.md). Memory per pattern,
// not per instance. The ordering of patterns (SortPatterns, nesting.h) is
// here too.
#ifndef BBPROF_NESTING_STEPS_PATTERN_TABLE_H_
#define BBPROF_NESTING_STEPS_PATTERN_TABLE_H_

#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

#include "base/status.h"
#include "nesting/call_table.h"
#include "nesting/nesting.h"

namespace bbprof::nesting {

// The patterns of every complete root call of `table` (parents assigned,
// observed times), in the order they were first seen; root_pattern gets,
// per call, the index of the pattern its instance was counted under
// (kNone: not a complete root). Counts stats->unfinished_roots; fails on
// a causal chain deeper than kMaxDepth (naming stats->path). On `threads`
// threads, with the same result for every count (see pattern_table.cc).
Status FindCallPaths(const CallTable& table, bool group_by_op, int threads,
                     InputStats* stats, std::vector<Pattern>* patterns,
                     std::vector<uint32_t>* root_pattern);

// Step 5 for a driver that holds the trace a segment at a time (the stream
// driver, docs/nesting.md "The stream driver"): the patterns of the complete
// roots of `table` called in [from, until), the roots the segment owns, in
// canonical order and without signatures, for a PatternMerger. Counts the
// owned roots that are unfinished into stats->unfinished_roots. With
// `root_pattern`, every owned complete root's index into `patterns` (else
// kNone), as FindCallPaths gives it: for the requests export.
Status FindOwnedCallPaths(const CallTable& table, bool group_by_op,
                          trace::TimeNs from, trace::TimeNs until,
                          InputStats* stats, std::vector<Pattern>* patterns,
                          std::vector<uint32_t>* root_pattern = nullptr);

// Segments' patterns added up in segment order: counts and distributions
// add exactly; the total latency is summed per segment, then over
// segments; the slowest instance is the earliest of the slowest; the median
// instance is, of the segments' own medians, the one nearest the p50 of the
// segments merged so far; timelines are moved to the coarsest bucket.
class PatternMerger {
 public:
  explicit PatternMerger(bool group_by_op) : group_by_op_(group_by_op) {}
  void Add(std::vector<Pattern>&& part);
  // The patterns in the order first seen, in display order with signatures.
  std::vector<Pattern> Finish();

 private:
  bool group_by_op_;
  std::vector<Pattern> patterns_;
  std::unordered_map<std::string, size_t> index_;  // by shape
};

}  // namespace bbprof::nesting

#endif  // BBPROF_NESTING_STEPS_PATTERN_TABLE_H_
