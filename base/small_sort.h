// Sorting the few elements of a hot loop (the children of one call, scored
// millions of times by the timeline passes), exactly as std::sort would.
#ifndef BBPROF_BASE_SMALL_SORT_H_
#define BBPROF_BASE_SMALL_SORT_H_

#include <algorithm>
#include <functional>
#include <iterator>
#include <utility>

namespace bbprof {

namespace small_sort_internal {
template <typename It, typename Less>
void Sort(It first, It last, Less less) {
  constexpr std::ptrdiff_t kStdSortInsertionMax = 16;
  if (last - first > kStdSortInsertionMax) {
    std::sort(first, last, less);
    return;
  }
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
}  // namespace small_sort_internal

// std::sort's result, for any comparator, without its set-up cost on short
// ranges. libstdc++'s std::sort sorts a range of at most 16 elements by a
// plain insertion sort (its introsort loop only starts above that, and its
// final pass is __insertion_sort), which is stable: each element moves
// only past those it is less than. So does this one, and above 16 it calls
// std::sort itself. Elements that compare equal therefore end in the same
// order as under std::sort, which matters where the comparator is not a
// total order: the order then reaches the result.
//
// Inlined for its most common case, nothing to sort (0 or 1 element).
template <typename It, typename Less>
[[gnu::always_inline]] inline void SortSmall(It first, It last, Less less) {
  if (last - first < 2) return;
  small_sort_internal::Sort(first, last, less);
}

template <typename It>
[[gnu::always_inline]] inline void SortSmall(It first, It last) {
  SortSmall(first, last, std::less<>());
}

}  // namespace bbprof

#endif  // BBPROF_BASE_SMALL_SORT_H_
