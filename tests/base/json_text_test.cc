#include "base/json_text.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>

namespace bbprof {
namespace {

std::string Quoted(std::string_view s) {
  std::string out;
  AppendJsonString(&out, s);
  return out;
}

TEST(AppendJsonStringTest, EscapesQuotesBackslashesAndControlBytes) {
  EXPECT_EQ(Quoted("a\"b\\c"), "\"a\\\"b\\\\c\"");
  EXPECT_EQ(Quoted("t\tn\n\x7f"), "\"t\\u0009n\\u000a\\u007f\"");
  EXPECT_EQ(Quoted("caf\xC3\xA9 \xE2\x82\xAC \xF0\x9F\x98\x80"),
            "\"caf\xC3\xA9 \xE2\x82\xAC \xF0\x9F\x98\x80\"");
}

TEST(AppendJsonStringTest, InvalidUtf8BecomesReplacementCharacters) {
  // A lone continuation byte, an overlong '/', a surrogate, a cut sequence.
  const std::string r = "\xEF\xBF\xBD";
  EXPECT_EQ(Quoted("a\x80z"), "\"a" + r + "z\"");
  EXPECT_EQ(Quoted("\xC0\xAF"), "\"" + r + r + "\"");
  EXPECT_EQ(Quoted("\xED\xA0\x80"), "\"" + r + r + r + "\"");
  EXPECT_EQ(Quoted("\xE2\x82"), "\"" + r + r + "\"");
  // What it writes always parses.
  auto doc = nlohmann::json::parse(Quoted("x\xFF\x01y"));
  EXPECT_EQ(doc.get<std::string>(), "x" + r + "\x01y");
}

TEST(JsonTextTest, IndentedWithANewlineOrCompactAndNeverThrows) {
  nlohmann::ordered_json j;
  j["z"] = "bad \xFF byte";
  j["a"] = 1;
  EXPECT_EQ(JsonText(j), "{\n  \"z\": \"bad \xEF\xBF\xBD byte\",\n  \"a\": 1\n}\n");
  EXPECT_EQ(JsonCompact(j), "{\"z\":\"bad \xEF\xBF\xBD byte\",\"a\":1}");
}

}  // namespace
}  // namespace bbprof
