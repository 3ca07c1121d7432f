// Small helpers shared by the line-oriented decoders (Redis RESP, memcached
// text protocol): finding a line in a StreamBuffer and parsing integers.
#ifndef BBPROF_CAPTURE_DECODERS_LINE_UTIL_H_
#define BBPROF_CAPTURE_DECODERS_LINE_UTIL_H_

#include <charconv>
#include <cstdint>
#include <string_view>

#include "capture/decoders/stream_buffer.h"

namespace bbprof::capture {

// The next line of `buf` without its LF (and CR), and how many bytes it
// occupies with the terminator; false if no complete line is buffered.
inline bool NextBufferedLine(const StreamBuffer& buf, std::string_view* line,
                             size_t* consumed) {
  auto d = buf.data();
  std::string_view text(reinterpret_cast<const char*>(d.data()), d.size());
  size_t nl = text.find('\n');
  if (nl == std::string_view::npos) return false;
  *consumed = nl + 1;
  *line = text.substr(0, nl);
  if (!line->empty() && line->back() == '\r') line->remove_suffix(1);
  return true;
}

// A whole decimal integer (optionally negative), nothing else.
inline bool ParseInt(std::string_view s, int64_t* out) {
  if (s.empty()) return false;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), *out);
  return ec == std::errc() && p == s.data() + s.size();
}

}  // namespace bbprof::capture

#endif  // BBPROF_CAPTURE_DECODERS_LINE_UTIL_H_
