// Step 5 of the nesting algorithm (section 5.1.1.4, Figure 4's "find call
// paths"): a causal tree from every root call, and the pattern table that
// aggregates trees of one shape: per node the latency, call delay and own
// time distributions (nesting/histogram.h), per pattern its count, total
// latency, median and slowest instance (Example) and a timeline of
// buckets (section 8's sliding windows), then each pattern's display
// order and signature (shared/spec/results-json.md). Memory per pattern,
// not per instance. The ordering of patterns (SortPatterns, nesting.h) is
// here too.
#ifndef BBPROF_NESTING_PATTERN_TABLE_H_
#define BBPROF_NESTING_PATTERN_TABLE_H_

#include <cstdint>
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

}  // namespace bbprof::nesting

#endif  // BBPROF_NESTING_PATTERN_TABLE_H_
