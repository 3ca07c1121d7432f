#include "base/huge_pages.h"

#include <sys/mman.h>

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

}  // namespace bbprof
