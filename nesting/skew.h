// Automatic clock-skew windows for the nesting algorithm (section 7.5.6,
// made automatic; docs/nesting.md, "Clock skew").
//
// Under skew a call B->C can seem to start before every call into B that
// caused it, or to end after it. For each such child, the engine measures
// how far the nearest call into B misses enclosing it at the start and at
// the end ("needs"). This file turns one edge's needs into that edge's
// start and end windows.
#ifndef BBPROF_NESTING_SKEW_H_
#define BBPROF_NESTING_SKEW_H_

#include <cstdint>
#include <vector>

#include "trace/record.h"

namespace bbprof::nesting {

// The largest skew the automatic mode looks for: 10 ms, five times the 2 ms
// that NTP-synchronised hosts are seen to disagree by. Pairing waits twice
// this for a call whose return came first (two clocks, each off).
inline constexpr trace::TimeNs kAutoSkewCap = 10'000'000;

// One side's window for an edge with `children` calls that had some call
// into their caller within kAutoSkewCap, `needs` holding the positive
// needs among them (nanoseconds; reordered). Zero when too few children
// miss (fewer than 5, or fewer than 0.5% of them): without skew no child
// misses, and a handful that do are lost calls, not clocks.
trace::TimeNs ChooseSkewWindow(std::vector<trace::TimeNs>& needs,
                               uint64_t children);

}  // namespace bbprof::nesting

#endif  // BBPROF_NESTING_SKEW_H_
