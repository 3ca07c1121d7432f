#include "base/duration.h"

#include <cmath>
#include <cstdio>

namespace bbprof {

std::string FormatSeconds(double seconds, SecondsFormat format) {
  char buf[48];
  const char* f = format.sign ? "%+.3f %s" : "%.3f %s";
  double a = std::fabs(seconds);
  if (a >= 1.0) {
    std::snprintf(buf, sizeof buf, f, seconds, "s");
  } else if (a >= 1e-3 || (format.zero_in_ms && a == 0)) {
    std::snprintf(buf, sizeof buf, f, seconds * 1e3, "ms");
  } else {
    std::snprintf(buf, sizeof buf, format.sign ? "%+.1f %s" : "%.1f %s",
                  seconds * 1e6, "us");
  }
  return buf;
}

std::string FormatDuration(double seconds) {
  double a = std::fabs(seconds);
  if (a == 0) return "0 s";
  auto three = [](double v, const char* unit) {
    const char* fmt = std::fabs(v) >= 100  ? "%.0f %s"
                      : std::fabs(v) >= 10 ? "%.1f %s"
                                           : "%.2f %s";
    char buf[64];
    std::snprintf(buf, sizeof buf, fmt, v, unit);
    return std::string(buf);
  };
  if (a >= 1) return three(seconds, "s");
  if (a >= 1e-3) return three(seconds * 1e3, "ms");
  if (a >= 1e-6) return three(seconds * 1e6, "\xC2\xB5s");
  return three(seconds * 1e9, "ns");
}

}  // namespace bbprof
