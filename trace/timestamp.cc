#include "trace/timestamp.h"

#include <charconv>
#include <cmath>
#include <cstdlib>

namespace bbprof::trace {

bool ParseTimestamp(std::string_view text, TimeNs* out) {
  const char* p = text.data();
  const char* end = p + text.size();
  if (p == end) return false;
  // Integer seconds: at most 10 digits keeps seconds * 1e9 inside int64
  // (9223372036 s is year 2262).
  int64_t secs = 0;
  int int_digits = 0;
  while (p < end && *p >= '0' && *p <= '9') {
    if (++int_digits > 10) return false;
    secs = secs * 10 + (*p - '0');
    ++p;
  }
  if (int_digits == 0) return false;
  int64_t frac = 0;
  if (p < end) {
    if (*p != '.') return false;
    ++p;
    int frac_digits = 0;
    while (p < end && *p >= '0' && *p <= '9') {
      if (++frac_digits > 9) return false;
      frac = frac * 10 + (*p - '0');
      ++p;
    }
    if (p != end) return false;
    static constexpr int64_t kScale[10] = {1000000000, 100000000, 10000000,
                                           1000000,    100000,    10000,
                                           1000,       100,       10,
                                           1};
    frac *= kScale[frac_digits];
  }
  // The one range rule of timestamp.h, checked before multiplying (ten
  // digits of seconds can exceed int64 nanoseconds).
  if (secs > kMaxTimeNs / kNsPerSecond) return false;
  *out = secs * kNsPerSecond + frac;
  return InTimeRange(*out);
}

size_t FormatTimestamp(TimeNs ns, char* buf) {
  char* p = buf;
  uint64_t mag;
  if (ns < 0) {
    *p++ = '-';
    mag = static_cast<uint64_t>(-(ns + 1)) + 1;
  } else {
    mag = static_cast<uint64_t>(ns);
  }
  uint64_t secs = mag / kNsPerSecond;
  uint64_t frac = mag % kNsPerSecond;
  auto r = std::to_chars(p, p + 21, secs);
  p = r.ptr;
  *p++ = '.';
  for (int i = 8; i >= 0; --i) {
    p[i] = static_cast<char>('0' + frac % 10);
    frac /= 10;
  }
  p += 9;
  return static_cast<size_t>(p - buf);
}

std::string FormatTimestamp(TimeNs ns) {
  char buf[32];
  return std::string(buf, FormatTimestamp(ns, buf));
}

bool ParseSecondsFlag(std::string_view text, TimeNs* out) {
  if (text.empty()) return false;
  std::string s(text);
  char* endp = nullptr;
  double v = std::strtod(s.c_str(), &endp);
  if (endp != s.c_str() + s.size() || !std::isfinite(v)) return false;
  double ns = v * 1e9;
  if (std::fabs(ns) > static_cast<double>(kMaxTimeNs)) return false;
  *out = static_cast<TimeNs>(std::llround(ns));
  return true;
}

std::string FlagSecondsError(std::string_view text) {
  std::string s(text);
  char* endp = nullptr;
  double v = std::strtod(s.c_str(), &endp);
  if (!s.empty() && endp == s.c_str() + s.size() && !std::isnan(v)) {
    return "is out of range (at most 4611686018.427387903 seconds either way)";
  }
  return "is not a number of seconds (e.g. 0.03 or 30e-3)";
}

}  // namespace bbprof::trace
