// Durations as people read them: the one formatter of seconds for every
// text report, table and picture label, so a latency reads the same way in
// `nest`, `diff`, `render` and `report`.
#ifndef BBPROF_BASE_DURATION_H_
#define BBPROF_BASE_DURATION_H_

#include <string>

namespace bbprof {

// How FormatSeconds writes a duration.
struct SecondsFormat {
  bool sign = false;        // a change: "+1.500 ms", "-20.0 us"
  bool zero_in_ms = false;  // zero as "0.000 ms" rather than "0.0 us"
};

// Fixed decimals, for text reports whose columns line up: "1.234 s",
// "12.345 ms", "456.7 us" (below a millisecond).
std::string FormatSeconds(double seconds, SecondsFormat format = {});

// Three significant digits, for picture labels and page cells: "812 s",
// "12.3 ms", "2.50 µs", "4.00 ns"; zero is "0 s".
std::string FormatDuration(double seconds);

}  // namespace bbprof

#endif  // BBPROF_BASE_DURATION_H_
