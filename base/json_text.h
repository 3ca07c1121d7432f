// The one way bbprof writes JSON text. Readers refuse names, callids and
// pathids that are not UTF-8 (trace/token.h), but other strings reach
// results too (meta lines, file names, user flags, names from packets), and
// nlohmann's default dump throws type_error.316 on invalid UTF-8 after the
// whole analysis has run. Here invalid bytes become U+FFFD instead, whether
// a whole document is dumped (JsonText, JsonCompact) or a string is
// appended to a document streamed by hand (AppendJsonString: the request
// exports, which never hold a whole document).
#ifndef BBPROF_BASE_JSON_TEXT_H_
#define BBPROF_BASE_JSON_TEXT_H_

#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

namespace bbprof {

// Two-space indented, with a final newline. A template so that an
// ordered_json keeps its key order (a conversion to json would sort keys).
template <typename Json>
std::string JsonText(const Json& j) {
  return j.dump(2, ' ', false, Json::error_handler_t::replace) + "\n";
}

// On one line, without a newline: a value shown inside other text.
template <typename Json>
std::string JsonCompact(const Json& j) {
  return j.dump(-1, ' ', false, Json::error_handler_t::replace);
}

// Appends `s` as a JSON string with its quotes: '"' and '\' escaped,
// control bytes and DEL as \u00XX, bytes that are not valid UTF-8 (overlong
// forms and surrogates included) as U+FFFD, so the document always parses.
void AppendJsonString(std::string* out, std::string_view s);

}  // namespace bbprof

#endif  // BBPROF_BASE_JSON_TEXT_H_
