#include "base/huge_pages.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <numeric>

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

}  // namespace
}  // namespace bbprof
