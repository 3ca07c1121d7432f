// An allocator for the few arrays with an element per call (the nesting
// engine's call table): large ones are placed on 2 MB boundaries and
// advised to the kernel as wanting transparent huge pages
// (madvise(MADV_HUGEPAGE)). Debian's kernels give huge pages only where a
// program asks ("madvise" in /sys/kernel/mm/transparent_hugepage/enabled).
//
// Why: the passes read the calls by index all over the table (a call's
// candidates, their children, a root's tree), and with 4 KB pages a table of
// a few million calls outgrows the TLB; filling it also takes a page fault
// every 4 KB. On huge pages the pairs and candidates take a fault and a
// TLB entry every 2 MB instead.
//
// Small arrays (below kHugeMinBytes) come from operator new as usual.
// Where the kernel has no huge page to give, or THP is off, the advice is
// ignored and nothing else changes.
#ifndef BBPROF_BASE_HUGE_PAGES_H_
#define BBPROF_BASE_HUGE_PAGES_H_

#include <cstddef>
#include <new>
#include <vector>

namespace bbprof {

inline constexpr size_t kHugePageBytes = size_t{2} << 20;
// Below this an array's last huge page would be mostly padding.
inline constexpr size_t kHugeMinBytes = size_t{4} << 20;

// Memory for `bytes` (at least kHugeMinBytes) on a kHugePageBytes boundary,
// advised for huge pages; throws std::bad_alloc when there is none.
void* AllocateHuge(size_t bytes);
void FreeHuge(void* p) noexcept;

template <class T>
struct HugePageAllocator {
  using value_type = T;
  HugePageAllocator() = default;
  template <class U>
  HugePageAllocator(const HugePageAllocator<U>&) noexcept {}  // NOLINT

  T* allocate(size_t n) {
    if (n > static_cast<size_t>(-1) / sizeof(T)) throw std::bad_alloc();
    const size_t bytes = n * sizeof(T);
    if (bytes < kHugeMinBytes) {
      return static_cast<T*>(
          ::operator new(bytes, std::align_val_t{alignof(T)}));
    }
    return static_cast<T*>(AllocateHuge(bytes));
  }
  // The same n as its allocate(), so both take the same branch.
  void deallocate(T* p, size_t n) noexcept {
    if (n * sizeof(T) < kHugeMinBytes) {
      ::operator delete(p, std::align_val_t{alignof(T)});
    } else {
      FreeHuge(p);
    }
  }
  template <class U>
  bool operator==(const HugePageAllocator<U>&) const noexcept {
    return true;
  }
};

// A vector with an element per call.
template <class T>
using HugeVector = std::vector<T, HugePageAllocator<T>>;

// Faults in, ahead of its writer, memory that a thread is about to fill,
// one huge page's worth a step (madvise(MADV_POPULATE_WRITE), Linux 5.14):
// the pages are made present and writable as a first write would, but
// nothing in them is read or written, so a step may run while another
// thread writes the same range. Why: the kernel zeroes each page at its
// first write, and for the call table that zeroing would run on the
// pairing thread, the one thread every other waits for while a trace is
// read. A thread with time to spare (the reader, while it is ahead) takes
// it on instead. Where the kernel
// cannot (older kernels, or the range was freed and unmapped since), a step
// fails and the prefaulter stops; the writer then faults its pages itself,
// as without one.
//
// Steps go only as far as the writer is expected to fill (Expect), and
// kPrefaultAhead huge pages further: room reserved for more than is ever
// written (the pairs of a trace of mostly free-form messages or lost
// returns) is not made present, beyond those few pages, as long as the
// expectation holds.
inline constexpr size_t kPrefaultAhead = 4;

class Prefaulter {
 public:
  Prefaulter() = default;
  // [begin, begin + bytes): only the whole pages inside are touched.
  Prefaulter(void* begin, size_t bytes);
  // The writer is expected to fill [begin, begin + bytes); a smaller
  // expectation than an earlier one changes nothing.
  void Expect(size_t bytes);
  bool pending() const { return next_ < limit_; }
  // Faults in the next huge page's worth; false once nothing is left up
  // to the limit, or the kernel refused (then nothing more is done).
  bool Step();

 private:
  char* begin_ = nullptr;  // as given, for Expect
  char* next_ = nullptr;
  char* limit_ = nullptr;  // as far as Expect allows, at most end_
  char* end_ = nullptr;
};

}  // namespace bbprof

#endif  // BBPROF_BASE_HUGE_PAGES_H_
