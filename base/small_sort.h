// Sorting the few elements of a hot loop (the children of one call, scored
// millions of times by the timeline passes), exactly as std::sort would.
#ifndef BBPROF_BASE_SMALL_SORT_H_
#define BBPROF_BASE_SMALL_SORT_H_

#include <algorithm>
#include <functional>
#include <iterator>
#include <utility>

namespace bbprof {

// std::sort's result, for any comparator, without its set-up cost on short
// ranges. libstdc++'s std::sort sorts a range of at most 16 elements by a
// plain insertion sort (its introsort loop only starts above that, and its
// final pass is __insertion_sort), which is stable: each element moves
// only past those it is less than. So does this one, and above 16 it calls
// std::sort itself. Elements that compare equal therefore end in the same
// order as under std::sort, which matters where the comparator is not a
// total order: the order then reaches the result.
template <typename It, typename Less>
inline void SortSmall(It first, It last, Less less) {
  constexpr std::ptrdiff_t kStdSortInsertionMax = 16;
  if (last - first > kStdSortInsertionMax) {
    std::sort(first, last, less);
    return;
  }
  if (first == last) return;
  for (It i = std::next(first); i != last; ++i) {
    auto value = std::move(*i);
    It j = i;
    for (It k = std::prev(j); less(value, *k); --k) {
      *j = std::move(*k);
      j = k;
      if (k == first) break;
    }
    *j = std::move(value);
  }
}

template <typename It>
inline void SortSmall(It first, It last) {
  SortSmall(first, last, std::less<>());
}

}  // namespace bbprof

#endif  // BBPROF_BASE_SMALL_SORT_H_
