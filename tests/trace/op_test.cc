// Operation names (trace field 7): MakeOp builds tokens every reader accepts,
// and CheckOpToken names what is wrong with one that is not.
#include "trace/op.h"

#include <gtest/gtest.h>

#include <string>

namespace bbprof::trace {
namespace {

TEST(OpTest, JoinsPartsWithColonsAndSkipsEmptyOnes) {
  EXPECT_EQ(MakeOp({"http", "GET", "/item/{n}"}), "http:GET:/item/{n}");
  EXPECT_EQ(MakeOp({"dns", "", "A"}), "dns:A");
  EXPECT_EQ(MakeOp({}), "");
  EXPECT_EQ(MakeOp({"", ""}), "");
}

TEST(OpTest, PercentEncodesWhatATokenCannotHold) {
  std::string op = MakeOp({"http", "GET", "/a b(c),d;e%f\t\x01\x7f"});
  EXPECT_EQ(op, "http:GET:/a%20b%28c%29%2Cd%3Be%25f%09%01%7F");
  EXPECT_EQ(CheckOpToken(op), "");
  EXPECT_EQ(MakeOp({"http", "GET", "/caf\xc3\xa9\xff"}),
            "http:GET:/caf%C3%A9%FF");
  // Brackets delimit ops in path signatures (node[op]).
  EXPECT_EQ(MakeOp({"http", "GET", "/a[1]"}), "http:GET:/a%5B1%5D");
  // A lone "-" would read back as "no op".
  EXPECT_EQ(MakeOp({"-"}), "%2D");
}

TEST(OpTest, LongOpsAreCutAtAWholeEscapeAndMarked) {
  std::string op = MakeOp({"http", "GET", std::string(1000, ' ')});
  EXPECT_LE(op.size(), kMaxOpBytes);
  EXPECT_EQ(op.back(), '~');
  EXPECT_EQ(CheckOpToken(op), "");
  // Cut before an escape that does not fit whole: no dangling '%'.
  std::string::size_type pct = op.rfind('%');
  ASSERT_NE(pct, std::string::npos);
  EXPECT_EQ(op.size() - pct, 4u);  // "%20" then "~"
}

TEST(OpTest, CheckNamesTheProblem) {
  EXPECT_EQ(CheckOpToken("redis:GET"), "");
  EXPECT_EQ(CheckOpToken(""), "empty op");
  EXPECT_EQ(CheckOpToken("-"), "'-' is the absent op, not an op");
  EXPECT_EQ(CheckOpToken(std::string(256, 'x')), "op longer than 255 bytes");
  EXPECT_EQ(CheckOpToken("a\x01"),
            "op contains whitespace, a control byte or one of '( ) , ;' "
            "(byte 0x01)");
  EXPECT_EQ(CheckOpToken("http:GET:/\xff"), "op is not valid UTF-8");
}

}  // namespace
}  // namespace bbprof::trace
