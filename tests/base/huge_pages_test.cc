#include "base/huge_pages.h"

#include <gtest/gtest.h>

#include <sys/mman.h>
#include <unistd.h>

#include <cstdint>
#include <new>
#include <numeric>
#include <thread>
#include <vector>

namespace bbprof {
namespace {

uintptr_t Address(const void* p) { return reinterpret_cast<uintptr_t>(p); }

// A large array starts on a huge-page boundary (so that the kernel can back
// it with huge pages from its first byte); a small one comes from the usual
// heap. Each is freed by the branch that made it: a sanitizer build fails
// this test on a mismatched free.
TEST(HugePagesTest, LargeArraysStartOnAHugePage) {
  HugeVector<uint64_t> big(kHugeMinBytes / sizeof(uint64_t));
  EXPECT_EQ(Address(big.data()) % kHugePageBytes, 0u);
  HugeVector<uint64_t> small(16);
  std::iota(small.begin(), small.end(), 0);
  EXPECT_EQ(small[15], 15u);
}

// Growing past the threshold moves the elements from a small allocation
// into a huge one, and back when shrunk to fit.
TEST(HugePagesTest, GrowingAcrossTheThresholdKeepsTheElements) {
  HugeVector<uint32_t> v;
  const size_t n = 3 * kHugeMinBytes / sizeof(uint32_t);
  for (size_t i = 0; i < n; ++i) v.push_back(static_cast<uint32_t>(i * 7));
  EXPECT_EQ(Address(v.data()) % kHugePageBytes, 0u);
  for (size_t i = 0; i < n; i += 4099) ASSERT_EQ(v[i], i * 7) << i;
  v.resize(10);
  v.shrink_to_fit();
  EXPECT_EQ(v[9], 63u);
}

// The pages of [p, p + bytes) (page-aligned) that are in memory.
size_t ResidentPages(const void* p, size_t bytes) {
  const auto page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  std::vector<unsigned char> in((bytes + page - 1) / page);
  if (mincore(const_cast<void*>(p), bytes, in.data()) != 0) return 0;
  size_t n = 0;
  for (unsigned char c : in) n += c & 1;
  return n;
}

// `pages` huge pages of fresh memory starting on a huge page boundary, in
// a mapping of their own (not AllocateHuge: a sanitizer's allocator writes
// the start of what it hands out), unmapped at the end.
class FreshHugePages {
 public:
  explicit FreshHugePages(size_t pages)
      : bytes(pages * kHugePageBytes), mapped_(bytes + kHugePageBytes) {
    map_ = mmap(nullptr, mapped_, PROT_READ | PROT_WRITE,
                MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (map_ == MAP_FAILED) throw std::bad_alloc();
    p = reinterpret_cast<unsigned char*>(
        (Address(map_) + kHugePageBytes - 1) / kHugePageBytes *
        kHugePageBytes);
  }
  ~FreshHugePages() { munmap(map_, mapped_); }
  FreshHugePages(const FreshHugePages&) = delete;
  FreshHugePages& operator=(const FreshHugePages&) = delete;

  const size_t bytes;
  unsigned char* p = nullptr;

 private:
  size_t mapped_;
  void* map_ = nullptr;
};

// What a kernel without madvise(MADV_POPULATE_WRITE) (before 5.14) gives,
// checked where the first step fails: the prefaulter stops for good and
// nothing is made present (the writer then faults its pages itself).
void ExpectStoppedWithNothingPresent(const Prefaulter& prefault,
                                     const FreshHugePages& m) {
  EXPECT_FALSE(prefault.pending());
  EXPECT_EQ(ResidentPages(m.p, m.bytes), 0u);
}

// Prefaulting makes fresh memory present, one huge page's worth a step,
// without writing it: a new mapping's pages are absent until the steps, and
// all present after.
TEST(HugePagesTest, PrefaulterMakesTheRangePresentAHugePageAStep) {
  FreshHugePages m(4);
  const auto page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  EXPECT_EQ(ResidentPages(m.p, m.bytes), 0u);
  Prefaulter prefault(m.p, m.bytes);
  EXPECT_FALSE(prefault.pending());  // nothing is expected to be filled yet
  prefault.Expect(m.bytes);
  ASSERT_TRUE(prefault.pending());
  if (!prefault.Step()) {
    ExpectStoppedWithNothingPresent(prefault, m);
    return;
  }
  int steps = 1;
  while (prefault.Step()) ++steps;
  EXPECT_FALSE(prefault.pending());
  EXPECT_EQ(steps, 4);
  EXPECT_EQ(ResidentPages(m.p, m.bytes), m.bytes / page);
  // Present as a first write would leave them: zeroed.
  for (size_t i = 0; i < m.bytes; i += page / 2) ASSERT_EQ(m.p[i], 0) << i;
}

// As nest uses it: one thread fills an array while another prefaults it
// from the start; every element is what its writer wrote (the steps never
// write), whatever the interleaving. A sanitizer build checks the rest.
TEST(HugePagesTest, PrefaultingWhileAnotherThreadWritesKeepsTheWrites) {
  HugeVector<uint64_t> v;
  const size_t n = 5 * kHugePageBytes / sizeof(uint64_t) + 123;
  v.reserve(n);
  Prefaulter prefault(v.data(), n * sizeof(uint64_t));
  prefault.Expect(n * sizeof(uint64_t));
  std::thread faulter([&] {
    while (prefault.Step()) {
    }
  });
  for (size_t i = 0; i < n; ++i) v.push_back(i * 3 + 1);
  faulter.join();
  EXPECT_FALSE(prefault.pending());
  for (size_t i = 0; i < n; ++i) ASSERT_EQ(v[i], i * 3 + 1) << i;
}

// Steps stop kPrefaultAhead huge pages past what the writer is expected to
// fill, so room reserved for more than is written stays absent; a larger
// expectation lets them go on.
TEST(HugePagesTest, PrefaulterGoesOnlyAFewHugePagesPastWhatIsExpected) {
  const size_t pages = kPrefaultAhead + 4;
  FreshHugePages m(pages);
  const auto page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  Prefaulter prefault(m.p, m.bytes);
  // A little into the second huge page: it, the first, and those ahead.
  prefault.Expect(kHugePageBytes + 100);
  size_t steps = 0;
  while (prefault.Step()) ++steps;
  if (steps == 0) {
    ExpectStoppedWithNothingPresent(prefault, m);
    return;
  }
  EXPECT_EQ(steps, 2 + kPrefaultAhead);
  EXPECT_EQ(ResidentPages(m.p, m.bytes), steps * kHugePageBytes / page);
  // A smaller expectation changes nothing; a larger one goes on, to the end.
  prefault.Expect(10);
  EXPECT_FALSE(prefault.pending());
  prefault.Expect(100 * kHugePageBytes);
  while (prefault.Step()) ++steps;
  EXPECT_EQ(steps, pages);
  EXPECT_EQ(ResidentPages(m.p, m.bytes), m.bytes / page);
}

// A range holding no whole page leaves nothing to do.
TEST(HugePagesTest, PrefaulterOfLessThanAPageHasNothingToDo) {
  std::vector<char> small(100);
  Prefaulter prefault(small.data() + 1, 10);
  prefault.Expect(10);
  EXPECT_FALSE(prefault.pending());
  EXPECT_FALSE(prefault.Step());
  EXPECT_FALSE(Prefaulter().pending());
}

}  // namespace
}  // namespace bbprof
