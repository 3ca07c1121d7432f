// SortSmall leaves a range exactly as std::sort does, ties included: the
// timeline passes' results depend on the order of children that compare
// equal, so swapping one sort for the other must not move them.
#include "base/small_sort.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <utility>
#include <vector>

namespace bbprof {
namespace {

TEST(SmallSortTest, OrdersAsStdSortDoesTiesIncluded) {
  std::mt19937 rng(7);
  // (key, tag): compared by key only, so equal keys are ties whose final
  // order the tags show. Lengths on both sides of std::sort's insertion
  // threshold (16), few distinct keys so that ties are many.
  using Item = std::pair<int, int>;
  auto by_key = [](const Item& a, const Item& b) { return a.first < b.first; };
  for (int n = 0; n <= 40; ++n) {
    for (int round = 0; round < 200; ++round) {
      std::vector<Item> items(static_cast<size_t>(n));
      const int keys = 1 + round % 5;
      for (int i = 0; i < n; ++i) {
        items[i] = {static_cast<int>(rng() % keys), i};
      }
      std::vector<Item> expected = items;
      std::sort(expected.begin(), expected.end(), by_key);
      SortSmall(items.begin(), items.end(), by_key);
      ASSERT_EQ(items, expected) << "n " << n << " round " << round;
    }
  }
  std::vector<int> plain = {5, 3, 9, 1, 3};
  SortSmall(plain.begin(), plain.end());
  EXPECT_EQ(plain, (std::vector<int>{1, 3, 3, 5, 9}));
}

}  // namespace
}  // namespace bbprof
