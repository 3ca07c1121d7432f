// Exact conversion between the text form's decimal seconds and integer
// nanoseconds: "1047680084.482205" <-> 1047680084482205000. No floating point
// anywhere, so reading and writing never round.
#ifndef BBPROF_TRACE_TIMESTAMP_H_
#define BBPROF_TRACE_TIMESTAMP_H_

#include <string>
#include <string_view>

#include "trace/record.h"

namespace bbprof::trace {

// Parses "SECONDS[.FRACTION]" with 0 to 9 fraction digits. Returns false on
// anything else (sign, exponent, >9 fraction digits, overflow, empty).
bool ParseTimestamp(std::string_view text, TimeNs* out);

// Formats as "SECONDS.NNNNNNNNN" (always nine fraction digits) into buf,
// which must hold 32 bytes; returns the length. Negative values (possible
// after skew removal near the origin) are written with a leading '-'.
size_t FormatTimestamp(TimeNs ns, char* buf);
std::string FormatTimestamp(TimeNs ns);

// Parses a user-given duration in seconds ("0.03", "30e-3", "1.5") for flags.
// Unlike trace timestamps this accepts scientific notation and a sign.
bool ParseSecondsFlag(std::string_view text, TimeNs* out);

}  // namespace bbprof::trace

#endif  // BBPROF_TRACE_TIMESTAMP_H_
