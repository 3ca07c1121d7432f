// JsonText: the one way bbprof turns a JSON document into text. Readers
// refuse names, callids and pathids that are not UTF-8 (trace/token.h), but
// other strings reach results too (meta lines, file names, user flags), and
// nlohmann's default dump throws type_error.316 on invalid UTF-8 after the
// whole analysis has run. Every writer of JSON goes through here, where
// invalid bytes become U+FFFD instead.
#ifndef BBPROF_TRACE_JSON_TEXT_H_
#define BBPROF_TRACE_JSON_TEXT_H_

#include <nlohmann/json.hpp>
#include <string>

namespace bbprof::trace {

// Two-space indented, with a final newline. A template so that an
// ordered_json keeps its key order (a conversion to json would sort keys).
template <typename Json>
std::string JsonText(const Json& j) {
  return j.dump(2, ' ', false, Json::error_handler_t::replace) + "\n";
}

}  // namespace bbprof::trace

#endif  // BBPROF_TRACE_JSON_TEXT_H_
