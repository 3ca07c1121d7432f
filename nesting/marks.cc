#include "nesting/marks.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

namespace bbprof::nesting {

namespace {

std::string NodeLabel(const PatternNode& n) {
  return n.op.empty() ? n.node : n.node + "[" + n.op + "]";
}

// The tree's canonical key (children sorted by their own keys, as the
// pattern's shape), leaving out the subtree rooted at `skip`.
std::string CanonicalKey(const PatternNode& n, const PatternNode* skip) {
  std::vector<std::string> kids;
  for (const PatternNode& c : n.children) {
    if (&c != skip) kids.push_back(CanonicalKey(c, skip));
  }
  std::sort(kids.begin(), kids.end());
  std::string key = NodeLabel(n);
  if (!kids.empty()) {
    key += '(';
    for (size_t i = 0; i < kids.size(); ++i) key += (i ? "," : "") + kids[i];
    key += ')';
  }
  return key;
}

void CollectNonRoot(const PatternNode& n,
                    std::vector<const PatternNode*>& out) {
  for (const PatternNode& c : n.children) {
    out.push_back(&c);
    CollectNonRoot(c, out);
  }
}

std::string Fixed(double v, const char* format) {
  char buf[32];
  std::snprintf(buf, sizeof buf, format, v);
  return buf;
}

}  // namespace

double ExpectedMisassignment(double mean_parallelism) {
  return std::clamp(0.16 * (mean_parallelism - 1.0), 0.0, 0.5);
}

uint64_t PoissonUpper99(double lambda) {
  if (!(lambda > 0)) return 0;
  if (lambda > 1000) {
    // Normal approximation (error far below one count at this size).
    return static_cast<uint64_t>(
        std::ceil(lambda + 2.3263 * std::sqrt(lambda)));
  }
  double p = std::exp(-lambda), cdf = p;
  uint64_t k = 0;
  while (cdf < 0.99) {
    ++k;
    p *= lambda / static_cast<double>(k);
    cdf += p;
  }
  return k;
}

void MarkSuspects(NestingResult& result) {
  auto& pats = result.patterns;
  for (Pattern& p : pats) p.suspects.clear();
  result.warnings.clear();
  const double parallelism = result.input.mean_parallelism;
  const double eps = ExpectedMisassignment(parallelism);

  // Every pattern by its full key, and every pattern's one-subtree-less
  // variants with the subtree left out.
  std::unordered_map<std::string, size_t> by_key;
  for (size_t i = 0; i < pats.size(); ++i) {
    by_key.emplace(pats[i].caller + "->" + CanonicalKey(pats[i].root, nullptr),
                   i);
  }
  for (size_t i = 0; i < pats.size(); ++i) {
    Pattern& big = pats[i];  // the one with a child more
    std::vector<const PatternNode*> nodes;
    CollectNonRoot(big.root, nodes);
    std::vector<size_t> seen;
    for (const PatternNode* n : nodes) {
      auto it = by_key.find(big.caller + "->" + CanonicalKey(big.root, n));
      if (it == by_key.end()) continue;
      const size_t j = it->second;
      if (std::find(seen.begin(), seen.end(), j) != seen.end()) continue;
      seen.push_back(j);
      Pattern& small = pats[j];  // the one with a child less
      const bool big_rare = big.count < small.count;
      Pattern& rare = big_rare ? big : small;
      const Pattern& frequent = big_rare ? small : big;
      if (rare.count >= frequent.count) continue;
      const double expected = eps * static_cast<double>(frequent.count);
      if (rare.count > PoissonUpper99(expected)) continue;
      rare.suspects.push_back(
          {"rare-variant",
           "one child " + std::string(big_rare ? "more" : "fewer") + " (" +
               NodeLabel(*n) + ") than " + frequent.signature + ", seen " +
               std::to_string(rare.count) + " times against " +
               std::to_string(frequent.count) + ": no more than misassigning " +
               Fixed(100.0 * eps, "%.1f%%") +
               " of its instances would give (the rate expected at mean "
               "parallelism " +
               Fixed(parallelism, "%.2f") + ")"});
    }
  }

  if (parallelism >= kHighParallelism) {
    char buf[320];
    std::snprintf(
        buf, sizeof buf,
        "mean parallelism %.2f is in the range where nesting was measured to "
        "be "
        "inaccurate (%.1f and above: 14%% to 93%% of requests nested wrongly "
        "on "
        "the maketrace samples, docs/nesting.md); patterns may be fragments or "
        "mixtures of others",
        parallelism, kHighParallelism);
    result.warnings.emplace_back(buf);
    const std::string reason = "inferred from a trace of mean parallelism " +
                               Fixed(parallelism, "%.2f") +
                               ", where nesting is inaccurate (at " +
                               Fixed(kHighParallelism, "%.1f") + " and above)";
    for (Pattern& p : pats) p.suspects.push_back({"high-parallelism", reason});
  }
}

}  // namespace bbprof::nesting
