#include "results/marks.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <functional>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "nesting/bins.h"

namespace bbprof::nesting {

namespace {

std::string NodeLabel(const PatternNode& n) {
  return n.op.empty() ? n.node : n.node + "[" + n.op + "]";
}

// A whole splitmix64 step: its increment, then its finaliser (bins.h).
uint64_t Mix(uint64_t x) { return Mix64(x + 0x9e3779b97f4a7c15ULL); }

// A node's shape hash from its label and the multiset of its children's
// shape hashes. The multiset is a sum of mixed hashes, so it does not
// depend on the children's order, and one child can be taken out or
// replaced by subtraction: the shape without any one subtree costs one step
// per ancestor, not a walk of the tree.
uint64_t ShapeHash(uint64_t label, uint64_t children_sum) {
  return Mix(label ^ Mix(children_sum));
}

struct FlatNode {
  const PatternNode* node;
  size_t parent;  // index; SIZE_MAX for the root
  uint64_t label = 0, children_sum = 0, hash = 0;
};

// Depth first, parents before children; hashes filled bottom-up.
std::vector<FlatNode> Flatten(const PatternNode& root) {
  std::vector<FlatNode> out;
  std::vector<std::pair<const PatternNode*, size_t>> stack = {
      {&root, SIZE_MAX}};
  while (!stack.empty()) {
    auto [n, parent] = stack.back();
    stack.pop_back();
    out.push_back({n, parent, std::hash<std::string>()(NodeLabel(*n)), 0, 0});
    const size_t me = out.size() - 1;
    for (const PatternNode& c : n->children) stack.emplace_back(&c, me);
  }
  for (size_t i = out.size(); i-- > 0;) {
    out[i].hash = ShapeHash(out[i].label, out[i].children_sum);
    if (out[i].parent != SIZE_MAX)
      out[out[i].parent].children_sum += Mix(out[i].hash);
  }
  return out;
}

// The root's hash with the subtree at index `cut` taken out.
uint64_t HashWithout(const std::vector<FlatNode>& t, size_t cut) {
  uint64_t old_child = t[cut].hash;
  size_t at = t[cut].parent;
  uint64_t sum = t[at].children_sum - Mix(old_child);
  uint64_t h = ShapeHash(t[at].label, sum);
  while (t[at].parent != SIZE_MAX) {
    old_child = t[at].hash;
    at = t[at].parent;
    h = ShapeHash(t[at].label, t[at].children_sum - Mix(old_child) + Mix(h));
  }
  return h;
}

uint64_t PatternKey(const std::string& caller, uint64_t root_hash) {
  return Mix(std::hash<std::string>()(caller) ^ Mix(root_hash));
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
  if (lambda > 200) {
    // Normal approximation, within a count of the exact quantile here (and
    // exp(-lambda) below would underflow past 745).
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

  // Every pattern by its shape hash; then every pattern's shapes with one
  // child subtree taken out, looked up among them.
  std::vector<std::vector<FlatNode>> flat;
  std::unordered_map<uint64_t, size_t> by_key;
  for (size_t i = 0; i < pats.size(); ++i) {
    flat.push_back(Flatten(pats[i].root));
    by_key.emplace(PatternKey(pats[i].caller, flat[i][0].hash), i);
  }
  for (size_t i = 0; i < pats.size(); ++i) {
    Pattern& big = pats[i];  // the one with a child more
    std::vector<size_t> seen;
    for (size_t k = 1; k < flat[i].size(); ++k) {
      auto it = by_key.find(PatternKey(big.caller, HashWithout(flat[i], k)));
      if (it == by_key.end() || it->second == i) continue;
      const PatternNode* n = flat[i][k].node;
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
