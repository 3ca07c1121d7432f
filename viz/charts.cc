#include "viz/charts.h"

#include <algorithm>
#include <cmath>
#include <numeric>

#include "viz/style.h"

namespace bbprof::viz {

namespace {

constexpr const char* kBarColour = "#4a78b0";

std::string Num(double v) { return Printf("%.1f", v); }

std::string Text(double x, double y, const std::string& s,
                 const char* anchor = "start") {
  return "<text x=\"" + Num(x) + "\" y=\"" + Num(y) + "\" text-anchor=\"" +
         anchor + "\">" + HtmlEscape(s) + "</text>";
}

void WaterfallRows(const ExampleCall& c, int depth,
                   std::vector<std::pair<int, const ExampleCall*>>* rows) {
  rows->emplace_back(depth, &c);
  for (const auto& k : c.children) WaterfallRows(k, depth + 1, rows);
}

}  // namespace

std::string HistogramSvg(const Histogram& h, const std::string& title) {
  constexpr double kW = 240, kH = 70, kTop = 14, kBottom = 14;
  std::string svg = "<svg class=\"hist\" width=\"" + Num(kW) + "\" height=\"" +
                    Num(kH + kTop + kBottom) + "\" viewBox=\"0 0 " + Num(kW) +
                    " " + Num(kH + kTop + kBottom) + "\">";
  int64_t total = 0, max = 0;
  for (int64_t c : h.counts) {
    total += c;
    max = std::max(max, c);
  }
  svg += "<title>" +
         HtmlEscape(title + ": " + std::to_string(total) + " values") +
         "</title>";
  svg += Text(0, 10, title);
  if (h.counts.empty() || max == 0) {
    return svg + Text(0, kTop + kH / 2, "no values") + "</svg>";
  }
  // One path of all bars: a page of hundreds of patterns stays small.
  const double bw = kW / static_cast<double>(h.counts.size());
  std::string d;
  for (size_t i = 0; i < h.counts.size(); ++i) {
    if (h.counts[i] == 0) continue;
    double bh = std::max(
        1.0, kH * static_cast<double>(h.counts[i]) / static_cast<double>(max));
    d += "M" + Num(bw * static_cast<double>(i)) + " " + Num(kTop + kH) + "v-" +
         Num(bh) + "h" + Num(std::max(bw - 1, 1.0)) + "v" + Num(bh) + "z";
  }
  svg += "<path fill=\"" + std::string(kBarColour) + "\" d=\"" + d + "\"/>";
  svg += "<line x1=\"0\" x2=\"" + Num(kW) + "\" y1=\"" + Num(kTop + kH) +
         "\" y2=\"" + Num(kTop + kH) + "\" stroke=\"#888\"/>";
  const double y = kTop + kH + kBottom - 3;
  svg += Text(0, y, FormatDuration(h.edges_s.front()));
  svg += Text(kW, y, FormatDuration(h.edges_s.back()), "end");
  svg += Text(kW, kTop + 9, "max " + std::to_string(max), "end");
  return svg + "</svg>";
}

std::string WaterfallSvg(const Example& e, const std::string& title) {
  std::vector<std::pair<int, const ExampleCall*>> rows;
  WaterfallRows(e.tree, 0, &rows);
  constexpr double kLabel = 200, kPlot = 320, kRow = 14, kTop = 16;
  const double height = kTop + kRow * static_cast<double>(rows.size()) + 4;
  std::string svg = "<svg class=\"waterfall\" width=\"" +
                    Num(kLabel + kPlot + 60) + "\" height=\"" + Num(height) +
                    "\" viewBox=\"0 0 " + Num(kLabel + kPlot + 60) + " " +
                    Num(height) + "\">";
  svg += Text(0, 11, title);
  // The span: the root's, widened to any call that starts before it or ends
  // after it (clock skew).
  double lo = 0, hi = std::max(e.tree.latency_s, 0.0);
  for (const auto& [depth, c] : rows) {
    lo = std::min(lo, c->start_s);
    hi = std::max(hi, c->start_s + c->latency_s);
  }
  const double span = hi > lo ? hi - lo : 1;
  for (size_t i = 0; i < rows.size(); ++i) {
    const auto& [depth, c] = rows[i];
    const double y = kTop + kRow * static_cast<double>(i);
    std::string name = c->node + (c->op.empty() ? "" : " " + c->op);
    if (name.size() > 32) name = name.substr(0, 31) + "\xE2\x80\xA6";
    svg += Text(6.0 * depth, y + 10, name);
    double x = kLabel + kPlot * (c->start_s - lo) / span;
    double w = std::max(1.0, kPlot * std::max(c->latency_s, 0.0) / span);
    svg += "<rect x=\"" + Num(x) + "\" y=\"" + Num(y + 2) + "\" width=\"" +
           Num(w) + "\" height=\"" + Num(kRow - 4) + "\" fill=\"" + kBarColour +
           "\"><title>" +
           HtmlEscape(c->caller + " -> " + name + ": starts at +" +
                      FormatDuration(c->start_s) + ", takes " +
                      FormatDuration(c->latency_s)) +
           "</title></rect>";
    svg += Text(x + w + 3, y + 10, FormatDuration(c->latency_s));
  }
  return svg + "</svg>";
}

double DefaultWindow(const std::vector<Pattern>& patterns) {
  double bucket = 0, lo = 0, hi = 0;
  bool any = false;
  for (const auto& p : patterns) {
    const Timeline& t = p.timeline;
    if (t.bucket_s <= 0) continue;
    double end = t.start_s + t.bucket_s * static_cast<double>(t.counts.size());
    if (!any) {
      bucket = t.bucket_s;
      lo = t.start_s;
      hi = end;
      any = true;
    }
    lo = std::min(lo, t.start_s);
    hi = std::max(hi, end);
  }
  if (!any) return 0;
  double buckets = std::round((hi - lo) / bucket);
  return bucket * std::max(1.0, std::ceil(buckets / 40.0));
}

Phases BuildPhases(const std::vector<Pattern>& patterns, double window_s) {
  Phases ph;
  double bucket = 0, lo = 0, hi = 0;
  for (const auto& p : patterns) {
    const Timeline& t = p.timeline;
    if (t.bucket_s <= 0 || t.counts.empty()) continue;
    double end = t.start_s + t.bucket_s * static_cast<double>(t.counts.size());
    if (bucket == 0) {
      bucket = t.bucket_s;
      lo = t.start_s;
      hi = end;
    }
    lo = std::min(lo, t.start_s);
    hi = std::max(hi, end);
  }
  if (bucket == 0) return ph;
  // Whole buckets per window, windows aligned on multiples of the window.
  const double per = std::max(1.0, std::ceil(window_s / bucket - 1e-9));
  ph.window_s = per * bucket;
  ph.start_s = std::floor(lo / ph.window_s + 1e-9) * ph.window_s;
  ph.windows = static_cast<size_t>(
      std::max(1.0, std::ceil((hi - ph.start_s) / ph.window_s - 1e-9)));
  for (size_t k = 0; k < patterns.size(); ++k) {
    const Timeline& t = patterns[k].timeline;
    if (t.bucket_s <= 0 || t.counts.empty()) continue;
    PhaseRow row;
    row.pattern = k;
    row.counts.assign(ph.windows, 0);
    row.latency_sum_s.assign(ph.windows, 0);
    for (size_t i = 0; i < t.counts.size(); ++i) {
      double at = t.start_s + t.bucket_s * (static_cast<double>(i) + 0.5);
      auto w = static_cast<size_t>(
          std::clamp(std::floor((at - ph.start_s) / ph.window_s), 0.0,
                     static_cast<double>(ph.windows - 1)));
      row.counts[w] += t.counts[i];
      row.latency_sum_s[w] += t.latency_sum_s[i];
    }
    // Section 8: a pattern frequent only for a while. Four in five of its
    // instances in at most a fifth of the windows, over at least five.
    int64_t total =
        std::accumulate(row.counts.begin(), row.counts.end(), int64_t{0});
    std::vector<int64_t> sorted = row.counts;
    std::sort(sorted.rbegin(), sorted.rend());
    const size_t few = ph.windows / 5;
    if (ph.windows >= 5 && total >= 10 && few > 0) {
      int64_t top = 0;
      size_t used = 0;
      while (used < few && top * 5 < total * 4) top += sorted[used++];
      if (top * 5 >= total * 4) {
        row.burst =
            Percent(static_cast<double>(top) / static_cast<double>(total)) +
            " of its instances in " + std::to_string(used) + " of " +
            std::to_string(ph.windows) + " windows";
      }
    }
    ph.rows.push_back(std::move(row));
  }
  return ph;
}

std::string PhasesSvg(const Phases& ph, const std::vector<Pattern>& patterns) {
  if (ph.rows.empty()) return "<p>No timelines in this result.</p>";
  constexpr double kLabel = 60, kRow = 11, kTop = 16, kWidth = 720;
  const double cw = std::max(2.0, kWidth / static_cast<double>(ph.windows));
  const double width = kLabel + cw * static_cast<double>(ph.windows) + 4;
  const double height = kTop + kRow * static_cast<double>(ph.rows.size()) + 18;
  double max = 0;
  for (const auto& r : ph.rows) {
    for (double v : r.latency_sum_s) max = std::max(max, v);
  }
  const HeatScale scale(max);
  std::string svg = "<svg id=\"phases-chart\" width=\"" + Num(width) +
                    "\" height=\"" + Num(height) + "\" viewBox=\"0 0 " +
                    Num(width) + " " + Num(height) + "\">";
  svg += Text(kLabel, 11, "windows of " + FormatDuration(ph.window_s));
  for (size_t r = 0; r < ph.rows.size(); ++r) {
    const PhaseRow& row = ph.rows[r];
    const Pattern& p = patterns[row.pattern];
    const double y = kTop + kRow * static_cast<double>(r);
    svg +=
        "<a href=\"#p" +
        Printf("%03.0f", static_cast<double>(row.pattern + 1)) + "\">" +
        Text(0, y + 9,
             "#" + std::to_string(p.rank) + (row.burst.empty() ? "" : " *")) +
        "</a>";
    svg += "<rect x=\"" + Num(kLabel) + "\" y=\"" + Num(y) + "\" width=\"" +
           Num(cw * static_cast<double>(ph.windows)) + "\" height=\"" +
           Num(kRow - 1) + "\" fill=\"#f4f4f4\"/>";
    for (size_t w = 0; w < ph.windows; ++w) {
      if (row.counts[w] == 0) continue;
      const double sum = row.latency_sum_s[w];
      svg += "<rect x=\"" + Num(kLabel + cw * static_cast<double>(w)) +
             "\" y=\"" + Num(y) + "\" width=\"" + Num(cw) + "\" height=\"" +
             Num(kRow - 1) + "\" fill=\"" +
             HeatScale::ColourAt(std::max(0.08, scale.Level(sum))) +
             "\"><title>#" + std::to_string(p.rank) + " +" +
             FormatDuration(ph.window_s * static_cast<double>(w)) + ": " +
             std::to_string(row.counts[w]) + " instances, " +
             FormatDuration(sum / static_cast<double>(row.counts[w])) +
             " mean</title></rect>";
    }
  }
  const double y = kTop + kRow * static_cast<double>(ph.rows.size()) + 12;
  svg += Text(kLabel, y, "+0 s");
  svg +=
      Text(width - 4, y,
           "+" + FormatDuration(ph.window_s * static_cast<double>(ph.windows)),
           "end");
  return svg + "</svg>";
}

std::string ScaleSvg(double max_s) {
  std::string svg =
      "<svg class=\"scale\" width=\"320\" height=\"34\" viewBox=\"0 0 320 34\">"
      "<defs><linearGradient id=\"heat\">";
  for (int i = 0; i <= 10; ++i) {
    svg += "<stop offset=\"" + Printf("%.1f", i / 10.0) + "\" stop-color=\"" +
           HeatScale::ColourAt(i / 10.0) + "\"/>";
  }
  svg +=
      "</linearGradient></defs><rect x=\"0\" y=\"0\" width=\"320\" "
      "height=\"16\" fill=\"url(#heat)\" stroke=\"#888\"/>";
  svg += Text(0, 30, "0 s added");
  svg += Text(320, 30, FormatDuration(max_s) + " added", "end");
  return svg + "</svg>";
}

}  // namespace bbprof::viz
