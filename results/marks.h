// Honesty marks on a nesting result: patterns that are likely artefacts of
// inference rather than paths the system took, and doubts about the whole
// result, each with the reason in words (docs/nesting.md, "Ranking and
// marks"). The nesting algorithm (section 5.1) is probabilistic: a call
// given to the wrong one of several concurrent parents turns one instance of
// a frequent pattern into an instance with one child less and another with
// one child more. Those variants are rare, and their rate grows with the
// trace's parallelism (section 5.1.2; Figure 19 and docs/benchmarks.md,
// "Robustness").
#ifndef BBPROF_RESULTS_MARKS_H_
#define BBPROF_RESULTS_MARKS_H_

#include <cstdint>

#include "nesting/nesting.h"

namespace bbprof::nesting {

// Mean parallelism (InputStats::mean_parallelism) from which the samples
// nest poorly (docs/benchmarks.md, "Robustness"): from 7.5 the pathological
// samples nest most of their requests wrongly and multitier-normal 14%, at
// 14.9 two of its top five patterns are wrong, at 30.4 72% of its
// requests.
inline constexpr double kHighParallelism = 7.5;

// The share of a pattern's instances that misassignment is expected to turn
// into variants, at the given mean parallelism: the instance false negatives
// of docs/benchmarks.md ("Robustness", Figure 19) grow linearly in
// (parallelism - 1), by 2.2% (multitier-normal) to 15.5% (children-parallel,
// the worst sample) per unit; this is the worst slope, 0.16, capped at one
// half. Zero at parallelism 1: a call with one candidate parent cannot be
// misassigned.
double ExpectedMisassignment(double mean_parallelism);

// The smallest k with P(X <= k) >= 0.99 for X ~ Poisson(lambda): how many
// variants misassignment at the expected rate can produce, with 1% left to
// chance.
uint64_t PoissonUpper99(double lambda);

// Fills every pattern's `suspects` and the result's `warnings`. Call it on
// all patterns, before --min-count and --top cut the list, so a variant's
// frequent sibling is seen even when it is not reported.
//
// - "rare-variant": pattern P differs from a pattern Q of the same caller by
//   one child subtree more or less (anywhere in the tree; a misassigned call
//   moves with its own children), Q is more frequent, and
//   count(P) <= PoissonUpper99(ExpectedMisassignment(parallelism) x count(Q)):
//   P's instances are no more than misassigning Q's would produce.
// - "high-parallelism": every pattern of a trace whose mean parallelism is at
//   least kHighParallelism; the result gets a warning too.
void MarkSuspects(NestingResult& result);

}  // namespace bbprof::nesting

#endif  // BBPROF_RESULTS_MARKS_H_
