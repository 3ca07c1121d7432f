#include "skewer/clock_model.h"

#include <charconv>
#include <sstream>

#include "base/atomic_file.h"
#include "trace/node_table.h"
#include "trace/timestamp.h"

namespace bbprof::skewer {

namespace {

__extension__ typedef __int128
    i128;  // GCC/Clang; __extension__ keeps -Wpedantic quiet

// Floor division for a positive divisor (C++ '/' truncates toward zero).
i128 FloorDiv(i128 a, i128 b) {
  i128 q = a / b;
  if ((a % b) != 0 && a < 0) {
    --q;
  }
  return q;
}

i128 Shift128(const ClockModel& m, TimeNs reference, i128 t) {
  if (m.drift_ppt == 0) {
    return m.offset_ns;
  }
  const i128 k = FloorDiv(t - reference, 1000);
  // drift * (k * 1000 ns) / 1e12 = drift * k / 1e9.
  return static_cast<i128>(m.offset_ns) +
         FloorDiv(static_cast<i128>(m.drift_ppt) * k, 1'000'000'000);
}

bool ParseUnsignedDecimal(std::string_view text, int max_fraction,
                          int64_t* whole, int64_t* fraction, int* digits) {
  size_t dot = text.find('.');
  std::string_view w = text.substr(0, dot);
  std::string_view f =
      dot == std::string_view::npos ? std::string_view() : text.substr(dot + 1);
  if (w.empty() && f.empty()) {
    return false;
  }
  if (dot != std::string_view::npos && f.empty() && w.empty()) {
    return false;
  }
  if (static_cast<int>(f.size()) > max_fraction) {
    return false;
  }
  for (char c : w) {
    if (c < '0' || c > '9') {
      return false;
    }
  }
  for (char c : f) {
    if (c < '0' || c > '9') {
      return false;
    }
  }
  *whole = 0;
  if (!w.empty()) {
    auto r = std::from_chars(w.data(), w.data() + w.size(), *whole);
    if (r.ec != std::errc() || r.ptr != w.data() + w.size()) {
      return false;
    }
  }
  *fraction = 0;
  for (char c : f) {
    *fraction = *fraction * 10 + (c - '0');
  }
  *digits = static_cast<int>(f.size());
  return true;
}

}  // namespace

TimeNs Shift(const ClockModel& m, TimeNs reference, TimeNs t) {
  return static_cast<TimeNs>(Shift128(m, reference, t));
}

TimeNs ToClock(const ClockModel& m, TimeNs reference, TimeNs t) {
  return static_cast<TimeNs>(t + Shift128(m, reference, t));
}

TimeNs FromClock(const ClockModel& m, TimeNs reference, TimeNs u) {
  if (m.drift_ppt == 0) {
    return u - m.offset_ns;
  }
  // C is non-decreasing (see the header), so binary-search the largest t
  // with C(t) <= u. |S| <= |offset| + |t - reference| * 1e-3 + 1, so the
  // answer lies within that of u; widen generously and stay in 128 bits.
  const i128 span = (u > reference ? static_cast<i128>(u) - reference
                                   : static_cast<i128>(reference) - u);
  const i128 reach =
      (m.offset_ns < 0 ? -static_cast<i128>(m.offset_ns) : m.offset_ns) +
      span / 500 + 4'000'000;
  i128 lo = static_cast<i128>(u) - 2 * reach;  // C(lo) <= u
  i128 hi = static_cast<i128>(u) + 2 * reach;  // C(hi) > u
  while (hi - lo > 1) {
    const i128 mid = lo + (hi - lo) / 2;
    if (mid + Shift128(m, reference, mid) <= u) {
      lo = mid;
    } else {
      hi = mid;
    }
  }
  return static_cast<TimeNs>(lo);
}

bool IsLostValue(const ClockModel& m, TimeNs reference, TimeNs t) {
  return m.drift_ppt < 0 &&
         ToClock(m, reference, t) == ToClock(m, reference, t + 1);
}

bool ParseStamp(std::string_view text, Stamp* out) {
  if (text == "sender") {
    *out = Stamp::kSender;
  } else if (text == "receiver") {
    *out = Stamp::kReceiver;
  } else if (text == "host") {
    *out = Stamp::kHost;
  } else {
    return false;
  }
  return true;
}

std::string_view StampName(Stamp s) {
  switch (s) {
    case Stamp::kSender:
      return "sender";
    case Stamp::kReceiver:
      return "receiver";
    case Stamp::kHost:
      return "host";
  }
  return "?";
}

bool SkewTable::has_drift() const {
  for (const auto& [name, m] : nodes) {
    if (m.drift_ppt != 0) {
      return true;
    }
  }
  return false;
}

namespace {

// Parses [+-]WHOLE[.FRAC] with at most `decimals` fraction digits into the
// value times 10^decimals. kTooLarge when WHOLE exceeds max_whole.
enum class Fixed { kOk, kNotFixed, kTooLarge };
Fixed ParseSignedFixed(std::string_view text, int decimals, int64_t max_whole,
                       int64_t* scaled) {
  std::string_view body = text;
  bool neg = false;
  if (!body.empty() && (body[0] == '+' || body[0] == '-')) {
    neg = body[0] == '-';
    body.remove_prefix(1);
  }
  int64_t whole, frac;
  int digits;
  if (!ParseUnsignedDecimal(body, decimals, &whole, &frac, &digits)) {
    return Fixed::kNotFixed;
  }
  if (whole > max_whole) return Fixed::kTooLarge;
  int64_t scale = 1;
  for (int i = 0; i < decimals; ++i) scale *= 10;
  for (int i = digits; i < decimals; ++i) frac *= 10;
  const int64_t v = whole * scale + frac;
  *scaled = neg ? -v : v;
  return Fixed::kOk;
}

}  // namespace

bool ParseOffsetSeconds(std::string_view text, TimeNs* out) {
  if (text.empty()) return false;
  switch (ParseSignedFixed(text, 9, 9'000'000'000LL, out)) {
    case Fixed::kOk:
      return true;
    case Fixed::kTooLarge:
      return false;
    case Fixed::kNotFixed:
      break;
  }
  return trace::ParseSecondsFlag(text, out);  // other forms, e.g. 30e-3
}

bool ParseDriftPpm(std::string_view text, int64_t* ppt) {
  int64_t v;
  if (text.empty() || ParseSignedFixed(text, 6, 1000, &v) != Fixed::kOk ||
      v > kMaxDriftPpt || v < -kMaxDriftPpt) {
    return false;
  }
  *ppt = v;
  return true;
}

std::string FormatOffset(TimeNs ns) {
  std::string s = trace::FormatTimestamp(ns < 0 ? -ns : ns);
  return (ns < 0 ? "-" : "+") + s;
}

std::string FormatDrift(int64_t ppt) {
  const int64_t mag = ppt < 0 ? -ppt : ppt;
  std::string frac = std::to_string(mag % kPptPerPpm);
  frac.insert(0, 6 - frac.size(), '0');
  return std::string(ppt < 0 ? "-" : "+") + std::to_string(mag / kPptPerPpm) +
         "." + frac;
}

Status ParseNodeValue(std::string_view flag_value, std::string_view what,
                      std::string* node, std::string* value) {
  const size_t eq = flag_value.rfind('=');
  if (eq == std::string_view::npos || eq == 0) {
    return Status::Error(std::string(what) + " expects NODE=VALUE, not '" +
                         std::string(flag_value) + "'");
  }
  *node = std::string(flag_value.substr(0, eq));
  *value = std::string(flag_value.substr(eq + 1));
  std::string why = trace::CheckNodeName(*node);
  if (!why.empty()) {
    return Status::Error(std::string(what) + " " + std::string(flag_value) +
                         ": " + why);
  }
  return Status::Ok();
}

Result<SkewTable> ParseOffsetsFile(const std::string& path,
                                   std::string_view text) {
  SkewTable table;
  std::istringstream in{std::string(text)};
  std::string line;
  int no = 0;
  auto error = [&](const std::string& what) {
    return Status::Error(path + ":" + std::to_string(no) + ": " + what);
  };
  while (std::getline(in, line)) {
    ++no;
    if (!line.empty() && line.back() == '\r') {
      line.pop_back();
    }
    size_t first = line.find_first_not_of(" \t");
    if (first == std::string::npos) {
      continue;
    }
    std::string_view l(line);
    l.remove_prefix(first);
    if (l.starts_with("#reference=")) {
      std::string_view v = l.substr(11);
      while (!v.empty() && (v.back() == ' ' || v.back() == '\t')) {
        v.remove_suffix(1);
      }
      if (!trace::ParseTimestamp(v, &table.reference)) {
        return error(
            "bad reference time '" + std::string(v) +
            "' (expected seconds since the epoch, e.g. 1047680084.000000000)");
      }
      table.has_reference = true;
      continue;
    }
    if (l.starts_with("#stamp=")) {
      std::string_view v = l.substr(7);
      while (!v.empty() && (v.back() == ' ' || v.back() == '\t')) {
        v.remove_suffix(1);
      }
      if (!ParseStamp(v, &table.stamp)) {
        return error("bad stamp '" + std::string(v) +
                     "' (expected sender, receiver or host)");
      }
      table.has_stamp = true;
      continue;
    }
    if (l[0] == '#') {
      continue;
    }
    std::string_view body = l.substr(0, l.find('#'));
    std::istringstream words{std::string(body)};
    std::string node, off, drift, extra;
    words >> node;
    if (!(words >> off)) {
      return error("expected 'NODE OFFSET_SECONDS [DRIFT_PPM]', found only '" +
                   node + "'");
    }
    if (words >> drift && words >> extra) {
      return error(
          "too many fields (expected 'NODE OFFSET_SECONDS [DRIFT_PPM]'), found "
          "'" +
          extra + "'");
    }
    std::string why = trace::CheckNodeName(node);
    if (!why.empty()) {
      return error(why);
    }
    ClockModel m;
    if (!ParseOffsetSeconds(off, &m.offset_ns)) {
      return error("bad offset '" + off + "' for " + node +
                   " (expected seconds, e.g. -0.0125)");
    }
    if (!drift.empty() && !ParseDriftPpm(drift, &m.drift_ppt)) {
      return error("bad drift '" + drift + "' for " + node +
                   " (expected ppm with at most 6 decimals, |drift| <= 1000, "
                   "e.g. 12.5)");
    }
    if (!table.nodes.emplace(node, m).second) {
      return error("node '" + node + "' listed twice");
    }
  }
  return table;
}

Result<SkewTable> LoadOffsetsFile(const std::string& path) {
  Result<std::string> text = ReadWholeFile(path);
  if (!text.ok()) {
    return text.status();
  }
  return ParseOffsetsFile(path, *text);
}

std::string FormatOffsetsFile(
    const SkewTable& table, const std::string& header_comment,
    const std::map<std::string, std::string>& node_notes) {
  std::ostringstream out;
  out << "# bbprof clock offsets (docs/formats.md): NODE OFFSET_SECONDS "
         "[DRIFT_PPM]\n"
         "# a node's clock reads true time + offset + drift * (t - "
         "reference)\n";
  std::istringstream lines(header_comment);
  std::string line;
  while (std::getline(lines, line)) {
    out << "# " << line << "\n";
  }
  if (table.has_reference) {
    out << "#reference=" << trace::FormatTimestamp(table.reference) << "\n";
  }
  if (table.has_stamp) {
    out << "#stamp=" << StampName(table.stamp) << "\n";
  }
  const bool drift = table.has_drift();
  for (const auto& [name, m] : table.nodes) {
    out << name << "\t" << FormatOffset(m.offset_ns);
    if (drift) {
      out << "\t" << FormatDrift(m.drift_ppt);
    }
    auto it = node_notes.find(name);
    if (it != node_notes.end()) {
      out << "\t# " << it->second;
    }
    out << "\n";
  }
  return out.str();
}

std::string SkewMetaBody(std::string_view op, const SkewTable& table) {
  std::string s = "skewer op=" + std::string(op) +
                  " stamp=" + std::string(StampName(table.stamp)) +
                  " reference=" + trace::FormatTimestamp(table.reference) +
                  " offset";
  for (const auto& [name, m] : table.nodes) {
    s += " " + name + "=" + FormatOffset(m.offset_ns);
  }
  if (table.has_drift()) {
    s += " drift";
    for (const auto& [name, m] : table.nodes) {
      s += " " + name + "=" + FormatDrift(m.drift_ppt);
    }
  }
  return s;
}

}  // namespace bbprof::skewer
