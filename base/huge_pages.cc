#include "base/huge_pages.h"

#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>

namespace bbprof {

void* AllocateHuge(size_t bytes) {
  // Whole huge pages, so that the last one is not shared with other data
  // (posix_memalign, not mmap: a sanitizer build still sees the array).
  const size_t rounded =
      (bytes + kHugePageBytes - 1) / kHugePageBytes * kHugePageBytes;
  void* p = nullptr;
  if (posix_memalign(&p, kHugePageBytes, rounded) != 0) throw std::bad_alloc();
  // Advice only: where THP is off or unsupported this fails, harmlessly.
  madvise(p, rounded, MADV_HUGEPAGE);
  return p;
}

void FreeHuge(void* p) noexcept { std::free(p); }

Prefaulter::Prefaulter(void* begin, size_t bytes)
    : begin_(static_cast<char*>(begin)) {
  const auto page = static_cast<uintptr_t>(sysconf(_SC_PAGESIZE));
  const auto b = reinterpret_cast<uintptr_t>(begin);
  const uintptr_t first = (b + page - 1) / page * page;
  const uintptr_t last = (b + bytes) / page * page;
  if (first < last) {
    next_ = limit_ = reinterpret_cast<char*>(first);
    end_ = reinterpret_cast<char*>(last);
  }
}

void Prefaulter::Expect(size_t bytes) {
  if (end_ == nullptr) return;
  // The end of the huge page that holds the last byte filled, and
  // kPrefaultAhead more.
  const auto point = reinterpret_cast<uintptr_t>(begin_) + bytes;
  const uintptr_t ahead =
      (point / kHugePageBytes + 1 + kPrefaultAhead) * kHugePageBytes;
  const auto end = reinterpret_cast<uintptr_t>(end_);
  limit_ = std::max(limit_, reinterpret_cast<char*>(std::min(ahead, end)));
}

bool Prefaulter::Step() {
  if (!pending()) return false;
#ifdef MADV_POPULATE_WRITE
  // Up to the next huge page boundary, so that each step is one huge page
  // where the kernel gives them.
  const auto at = reinterpret_cast<uintptr_t>(next_);
  const uintptr_t stop =
      std::min(reinterpret_cast<uintptr_t>(limit_),
               (at / kHugePageBytes + 1) * kHugePageBytes);
  if (madvise(next_, stop - at, MADV_POPULATE_WRITE) == 0) {
    next_ = reinterpret_cast<char*>(stop);
    return true;
  }
#endif
  next_ = limit_ = end_;
  return false;
}

}  // namespace bbprof
