// Exact conversion between the text form's decimal seconds and integer
// nanoseconds: "1047680084.482205" <-> 1047680084482205000. No floating point
// anywhere, so reading and writing never round.
#ifndef BBPROF_TRACE_TIMESTAMP_H_
#define BBPROF_TRACE_TIMESTAMP_H_

#include <string>
#include <string_view>

#include "trace/record.h"

namespace bbprof::trace {

// The valid range of a trace timestamp, the one rule every reader and writer
// applies (text, binary, capture): 0 (the epoch, or a relative origin) to
// 2^62 - 1 ns (4611686018.427387903 s, the year 2116). Leaving the top
// quarter of int64 unused means the sum or difference of two valid
// timestamps (or a timestamp and a delay of the same size) never overflows,
// so the analysis may add windows and timeouts to them freely. Out of range
// is a named error or a counted reason, never undefined behaviour.
inline constexpr TimeNs kMinTimeNs = 0;
inline constexpr TimeNs kMaxTimeNs = (TimeNs{1} << 62) - 1;
inline constexpr const char* kTimeRangeText =
    "0 to 4611686018.427387903 seconds since the epoch";

constexpr bool InTimeRange(TimeNs t) {
  return t >= kMinTimeNs && t <= kMaxTimeNs;
}

// a + b, false if the sum overflows or leaves the valid range.
inline bool CheckedTimeAdd(TimeNs a, TimeNs b, TimeNs* out) {
  return !__builtin_add_overflow(a, b, out) && InTimeRange(*out);
}

// seconds * kNsPerSecond + sub * sub_unit_ns (a pcap header's two fields),
// false if any step overflows or the result leaves the valid range.
inline bool CheckedTimeFromParts(int64_t seconds, int64_t sub,
                                 int64_t sub_unit_ns, TimeNs* out) {
  TimeNs whole, part;
  return !__builtin_mul_overflow(seconds, kNsPerSecond, &whole) &&
         !__builtin_mul_overflow(sub, sub_unit_ns, &part) &&
         CheckedTimeAdd(whole, part, out);
}

// Parses "SECONDS[.FRACTION]" with 0 to 9 fraction digits. Returns false on
// anything else (sign, exponent, >9 fraction digits, empty) and for values
// beyond kMaxTimeNs.
bool ParseTimestamp(std::string_view text, TimeNs* out);

// Formats as "SECONDS.NNNNNNNNN" (always nine fraction digits) into buf,
// which must hold 32 bytes; returns the length. Negative values (possible
// after skew removal near the origin) are written with a leading '-'.
size_t FormatTimestamp(TimeNs ns, char* buf);
std::string FormatTimestamp(TimeNs ns);

// Parses a user-given duration in seconds ("0.03", "30e-3", "1.5") for flags.
// Unlike trace timestamps this accepts scientific notation and a sign.
// Magnitudes beyond kMaxTimeNs are refused (FlagSecondsError says which).
bool ParseSecondsFlag(std::string_view text, TimeNs* out);

// Why `text` is not a flag's seconds value: "is not a number of seconds" or
// "is out of range (at most 4611686018.427387903 seconds)"; for messages
// after a failed ParseSecondsFlag, e.g. "--dedup-window '1e300' " + this.
std::string FlagSecondsError(std::string_view text);

}  // namespace bbprof::trace

#endif  // BBPROF_TRACE_TIMESTAMP_H_
