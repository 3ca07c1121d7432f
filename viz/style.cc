#include "viz/style.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>

namespace bbprof::viz {

namespace {

struct Rgb {
  double r, g, b;
};

// A sequential palette (ColorBrewer YlOrRd, white added at the bottom):
// lightness falls monotonically, so the order reads in grey too.
constexpr std::array<Rgb, 6> kStops = {{{255, 255, 255},
                                        {255, 237, 160},
                                        {254, 178, 76},
                                        {253, 141, 60},
                                        {227, 26, 28},
                                        {128, 0, 38}}};

}  // namespace

std::string Printf(const char* fmt, double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, fmt, v);
  return buf;
}

std::string Percent(double share) {
  return Printf("%.0f%%", std::round(share * 100.0));
}

double AddedTime(double own_time_s, int64_t instances) {
  return std::max(0.0, own_time_s) * static_cast<double>(instances);
}

double HeatScale::Level(double value_s) const {
  if (max_s_ <= 0 || !(value_s > 0)) return 0;
  return std::min(1.0, value_s / max_s_);
}

std::string HeatScale::ColourAt(double level) {
  level = std::clamp(level, 0.0, 1.0);
  double x = level * static_cast<double>(kStops.size() - 1);
  auto i = std::min(static_cast<size_t>(x), kStops.size() - 2);
  double f = x - static_cast<double>(i);
  const Rgb& a = kStops[i];
  const Rgb& b = kStops[i + 1];
  auto mix = [f](double u, double v) {
    return static_cast<int>(std::lround(u + (v - u) * f));
  };
  char buf[8];
  std::snprintf(buf, sizeof buf, "#%02x%02x%02x", mix(a.r, b.r), mix(a.g, b.g),
                mix(a.b, b.b));
  return buf;
}

std::string HeatScale::Colour(double value_s) const {
  return ColourAt(Level(value_s));
}

std::string HeatScale::TextColour(double value_s) const {
  // The two darkest stops carry white text.
  return Level(value_s) > 0.75 ? "#ffffff" : "#000000";
}

std::string CulpritText(const std::string& node, double own_time_s,
                        int64_t instances, double path_latency_s) {
  std::string t = node + " adds " +
                  FormatDuration(AddedTime(own_time_s, instances)) +
                  " in total (" + FormatDuration(own_time_s) + " a call";
  if (path_latency_s > 0)
    t +=
        ", " + Percent(own_time_s / path_latency_s) + " of this path's latency";
  return t + ")";
}

bool IsSlowEdge(double added_s, double max_added_s) {
  return max_added_s > 0 && added_s >= 0.5 * max_added_s;
}

std::vector<std::string> PatternLegend(double max_s) {
  return {std::string(kLegendNode), std::string(kLegendCallEdge),
          std::string(kLegendFirstEdge),
          std::string(kLegendFill) + " (white 0 to dark red " +
              FormatDuration(max_s) + ")"};
}

std::string HtmlEscape(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (char c : s) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      case '\'':
        out += "&#39;";
        break;
      default:
        out += c;
    }
  }
  return out;
}

}  // namespace bbprof::viz
