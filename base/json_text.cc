#include "base/json_text.h"

#include <cstdio>

namespace bbprof {

void AppendJsonString(std::string* out, std::string_view s) {
  out->push_back('"');
  for (size_t i = 0; i < s.size();) {
    unsigned char c = static_cast<unsigned char>(s[i]);
    if (c < 0x80) {
      if (c == '"' || c == '\\') {
        out->push_back('\\');
        out->push_back(static_cast<char>(c));
      } else if (c < 0x20 || c == 0x7F) {
        char buf[8];
        std::snprintf(buf, sizeof buf, "\\u%04x", c);
        out->append(buf);
      } else {
        out->push_back(static_cast<char>(c));
      }
      ++i;
      continue;
    }
    size_t len = c >= 0xF0 && c < 0xF5   ? 4
                 : c >= 0xE0             ? 3
                 : c >= 0xC2 && c < 0xE0 ? 2
                                         : 0;
    bool ok = len > 0 && i + len <= s.size();
    for (size_t k = 1; ok && k < len; ++k) {
      ok = (static_cast<unsigned char>(s[i + k]) & 0xC0) == 0x80;
    }
    if (ok && len == 3) {  // no overlongs, no surrogates
      unsigned char c1 = static_cast<unsigned char>(s[i + 1]);
      ok = !(c == 0xE0 && c1 < 0xA0) && !(c == 0xED && c1 >= 0xA0);
    }
    if (ok && len == 4) {
      unsigned char c1 = static_cast<unsigned char>(s[i + 1]);
      ok = !(c == 0xF0 && c1 < 0x90) && !(c == 0xF4 && c1 >= 0x90);
    }
    if (ok) {
      out->append(s.substr(i, len));
      i += len;
    } else {
      out->append("\xEF\xBF\xBD");
      ++i;
    }
  }
  out->push_back('"');
}

}  // namespace bbprof
