// Clock models for skewer/ (paper sections 6.5 and 7.5.6): how far a node's
// clock is from true time, as an offset plus a drift, in integer arithmetic
// so that adding skew and removing it again is exact.
//
// A node's clock reads, at true time t (integer nanoseconds),
//
//   C(t) = t + S(t),   S(t) = offset + floor(drift * k(t) * 1000 / 10^12)
//                      k(t) = floor((t - reference) / 1000)
//
// with `drift` in parts per 10^12 (ppm with six decimals, kept as an integer)
// and `reference` a whole second (by default the trace's first timestamp
// rounded down to a second). The drift term moves in whole microsecond
// blocks, so within a block C is t plus a constant, and between blocks the
// shift changes by at most 1 ns when |drift| <= 1000 ppm. Hence C is
// non-decreasing (sorting survives), strictly increasing when drift >= 0
// (every timestamp comes back exactly), and when drift < 0 (a slow clock
// loses one nanosecond value per step) the only values that collide are a
// block's last nanosecond, t - reference = 999 (mod 1000), with the next
// block's first. The inverse returns the largest t with C(t) <= u, so a trace
// of microsecond resolution (every packet capture) round-trips exactly at any
// drift, and a nanosecond trace exactly whenever drift >= 0; ApplySkew counts
// the timestamps that fell on a lost value. See docs/skewer.md.
#ifndef BBPROF_SKEWER_CLOCK_MODEL_H_
#define BBPROF_SKEWER_CLOCK_MODEL_H_

#include <map>
#include <string>
#include <string_view>

#include "base/status.h"
#include "trace/record.h"

namespace bbprof::skewer {

using trace::TimeNs;

// |drift| limit: 1000 ppm (a clock 1 ms per second off is broken, not
// drifting; NTP gives up on 500 ppm). It keeps the shift step <= 1 ns per
// microsecond block, which the exactness argument above needs.
inline constexpr int64_t kMaxDriftPpt = 1'000'000'000;  // 1000 ppm in 1e-12
inline constexpr int64_t kPptPerPpm = 1'000'000;

struct ClockModel {
  TimeNs offset_ns = 0;
  int64_t drift_ppt = 0;  // parts per 10^12 of elapsed time since reference

  bool identity() const { return offset_ns == 0 && drift_ppt == 0; }
  bool operator==(const ClockModel&) const = default;
};

// The shift S(t) (see above) and the clock reading C(t) = t + S(t).
TimeNs Shift(const ClockModel& m, TimeNs reference, TimeNs t);
TimeNs ToClock(const ClockModel& m, TimeNs reference, TimeNs t);
// The exact inverse: the largest t with ToClock(t) <= u.
TimeNs FromClock(const ClockModel& m, TimeNs reference, TimeNs u);
// True when ToClock(t) == ToClock(t + 1): a slow clock's lost nanosecond, so
// FromClock(ToClock(t)) is t + 1, not t.
bool IsLostValue(const ClockModel& m, TimeNs reference, TimeNs t);

// Whose clock stamped a record (section 6.5: a sniffer on each host stamps
// what it sees with that host's clock).
enum class Stamp {
  kSender,    // each message at its sender's clock (each host sniffs what it
              // sends)
  kReceiver,  // at its receiver's clock
  kHost,      // a per-host capture: every line at the capture_host's clock
};
bool ParseStamp(std::string_view text, Stamp* out);
std::string_view StampName(Stamp s);

// Per-node clock models plus the reference time they share.
struct SkewTable {
  std::map<std::string, ClockModel> nodes;
  TimeNs reference = 0;
  bool has_reference = false;
  Stamp stamp = Stamp::kSender;
  bool has_stamp = false;
  // Per node, from an estimate: the half-width of its bound interval (ns)
  // and how many matched messages support it; -1 when not known.
  std::map<std::string, TimeNs> uncertainty_ns;

  bool has_drift() const;
};

// Parses "-0.0123" / "+5" / "30e-3" seconds into nanoseconds: decimals of up
// to 9 fraction digits exactly, other forms through ParseSecondsFlag.
bool ParseOffsetSeconds(std::string_view text, TimeNs* out);
// Parses a drift in ppm, "-12.5", up to 6 fraction digits, |d| <= 1000 ppm.
bool ParseDriftPpm(std::string_view text, int64_t* ppt);
// "+0.012000000" (always a sign and 9 digits) and "-12.500000".
std::string FormatOffset(TimeNs ns);
std::string FormatDrift(int64_t ppt);

// Parses one "NODE=VALUE" flag. `what` is "--offset" or "--drift" for the
// error message.
Status ParseNodeValue(std::string_view flag_value, std::string_view what,
                      std::string* node, std::string* value);

// The offsets file (docs/formats.md):
//   # comments and blank lines
//   #reference=SECONDS      optional: the drift reference time
//   #stamp=sender|receiver|host   optional
//   NODE OFFSET_SECONDS [DRIFT_PPM] [# comment]
// Errors read "FILE:LINE: what is wrong".
Result<SkewTable> ParseOffsetsFile(const std::string& path,
                                   std::string_view text);
Result<SkewTable> LoadOffsetsFile(const std::string& path);
// The file text; `comments` go first as '#' lines; per-node trailing
// comments come from `node_notes`.
std::string FormatOffsetsFile(
    const SkewTable& table, const std::string& header_comment,
    const std::map<std::string, std::string>& node_notes = {});

// The body of the "#meta skewer ..." line recording an operation:
//   skewer op=add stamp=sender reference=R offset A=+0.01 drift A=+1.000000
std::string SkewMetaBody(std::string_view op, const SkewTable& table);

}  // namespace bbprof::skewer

#endif  // BBPROF_SKEWER_CLOCK_MODEL_H_
