// The one token rule (trace/token.h) and its escaping for messages.
#include "trace/token.h"

#include <gtest/gtest.h>

#include <string>

namespace bbprof::trace {
namespace {

TEST(TokenTest, Utf8ValidatorFollowsRfc3629) {
  for (const char* good : {"", "abc", "caf\xc3\xa9", "\xe2\x82\xac",
                           "\xf0\x9f\x98\x80", "\xf4\x8f\xbf\xbf"}) {
    EXPECT_TRUE(IsValidUtf8(good)) << EscapeForMessage(good);
  }
  for (const char* bad : {"\xff", "\xc3", "\xc0\xaf",  // truncated, overlong
                          "\xe0\x80\xaf",              // overlong
                          "\xed\xa0\x80",              // surrogate
                          "\xf4\x90\x80\x80",          // beyond U+10FFFF
                          "\xf8\x88\x80\x80\x80", "a\x80"}) {
    EXPECT_FALSE(IsValidUtf8(bad)) << EscapeForMessage(bad);
  }
}

TEST(TokenTest, OneRuleForNamesCallidsAndPathids) {
  EXPECT_EQ(CheckToken("WS1", TokenKind::kNodeName), "");
  EXPECT_EQ(CheckToken("caf\xc3\xa9", TokenKind::kNodeName), "");
  EXPECT_EQ(CheckToken("tcp:10.0.0.1:5#3", TokenKind::kCallid), "");
  EXPECT_EQ(CheckToken("f(x)", TokenKind::kCallid),
            "");  // reserved: names only
  EXPECT_EQ(CheckToken("f(x)", TokenKind::kNodeName),
            "node name 'f(x)' contains reserved character '('");
  EXPECT_EQ(CheckToken("http:GET:/item/{n}", TokenKind::kOp), "");
  EXPECT_EQ(CheckToken("f(x)", TokenKind::kOp),
            "op 'f(x)' contains reserved character '('");
  EXPECT_EQ(CheckToken("-", TokenKind::kOp),
            "op '-' (that spelling means unknown)");
  EXPECT_EQ(CheckToken("", TokenKind::kNodeName), "empty node name");
  EXPECT_EQ(CheckToken("-", TokenKind::kPathid),
            "pathid '-' (that spelling means unknown)");
  EXPECT_EQ(CheckToken("a\tb", TokenKind::kCallid),
            "callid 'a\\x09b' contains whitespace or control byte 0x09");
  EXPECT_EQ(CheckToken("a\xff", TokenKind::kPathid),
            "pathid 'a\\xff' is not valid UTF-8");
  EXPECT_EQ(CheckToken(std::string(255, 'n'), TokenKind::kNodeName), "");
  EXPECT_NE(CheckToken(std::string(256, 'n'), TokenKind::kNodeName), "");
  EXPECT_EQ(CheckToken(std::string(kMaxTokenBytes, 'c'), TokenKind::kCallid),
            "");
  EXPECT_NE(
      CheckToken(std::string(kMaxTokenBytes + 1, 'c'), TokenKind::kCallid), "");
}

TEST(TokenTest, MessagesNeverEchoRawControlBytes) {
  EXPECT_EQ(EscapeForMessage("a\x1b[2Jb\x7f"), "'a\\x1b[2Jb\\x7f'");
  EXPECT_EQ(EscapeForMessage("caf\xc3\xa9\xc3"), "'caf\xc3\xa9\\xc3'");
  EXPECT_EQ(EscapeForMessage("abcdef", 3), "'abc...'");
}

}  // namespace
}  // namespace bbprof::trace
