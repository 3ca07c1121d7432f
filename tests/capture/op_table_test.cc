#include "capture/op_table.h"

#include <gtest/gtest.h>

#include <string>

namespace bbprof::capture {
namespace {

TEST(OpTable, InternsOnceAndNamesIndices) {
  OpTable t;
  EXPECT_EQ(t.Intern(1, ""), 0u);
  EXPECT_EQ(t.Name(0), "");
  uint32_t a = t.Intern(1, "dns:A");
  EXPECT_EQ(t.Intern(2, "dns:A"), a);  // one name for every server
  EXPECT_NE(t.Intern(1, "dns:AAAA"), a);
  EXPECT_EQ(t.Name(a), "dns:A");
  EXPECT_EQ(t.size(), 2u);
  EXPECT_EQ(t.capped(), 0u);
}

TEST(OpTable, CapsDistinctOpsPerServerAndProtocol) {
  OpTable t(2);
  EXPECT_EQ(t.Name(t.Intern(1, "http:GET:/a")), "http:GET:/a");
  EXPECT_EQ(t.Name(t.Intern(1, "http:GET:/b")), "http:GET:/b");
  EXPECT_EQ(t.Name(t.Intern(1, "http:GET:/c")), "http:GET:{other}");
  EXPECT_EQ(t.Name(t.Intern(1, "http:POST:/d")), "http:POST:{other}");
  EXPECT_EQ(t.Name(t.Intern(1, "http:GET:/a")),
            "http:GET:/a");  // admitted stays
  // Another protocol, another server: budgets of their own.
  EXPECT_EQ(t.Name(t.Intern(1, "dns:A")), "dns:A");
  EXPECT_EQ(t.Name(t.Intern(2, "http:GET:/c")), "http:GET:/c");
  // An op without an object caps to its protocol.
  t.Intern(1, "dns:AAAA");
  EXPECT_EQ(t.Name(t.Intern(1, "dns:PTR")), "dns:{other}");
  EXPECT_EQ(t.capped(), 3u);
  // Refused names are never stored.
  EXPECT_EQ(t.size(), 8u);
}

TEST(OpTable, CappedVerbsAreBoundedToo) {
  OpTable t(1);
  t.Intern(1, "generic:A:x");
  for (int i = 0; i < 200; ++i)
    t.Intern(1, "generic:V" + std::to_string(i) + ":x");
  EXPECT_EQ(t.Name(t.Intern(1, "generic:Zzz:x")), "generic:{other}");
  EXPECT_LE(t.size(), 1u + 64u + 1u);
}

}  // namespace
}  // namespace bbprof::capture
