// The small pictures of the report page (report.h), written as inline SVG
// without Graphviz: latency histograms, waterfalls of example requests, and
// the phases chart (section 8's sliding windows). Colours follow style.h: the
// heat scale means time added; neutral blue bars are counts and spans.
#ifndef BBPROF_VIZ_CHARTS_H_
#define BBPROF_VIZ_CHARTS_H_

#include <string>
#include <vector>

#include "results/model.h"

namespace bbprof::viz {

// A histogram as bars of equal width (log-spaced bins read as a log axis),
// titled `title`, the first and last edge written under it.
std::string HistogramSvg(const Histogram& h, const std::string& title);

// A Gantt chart of one request: a bar per call, nested calls indented.
std::string WaterfallSvg(const Example& e, const std::string& title);

// Windows of a phases chart: timelines aggregated into windows of
// `window_s` (a multiple of their bucket).
struct PhaseRow {
  size_t pattern = 0;  // index into the patterns given
  std::vector<int64_t> counts;
  std::vector<double> latency_sum_s;
  // "bursty": most instances in a few windows (BurstText says why).
  std::string burst;
};
struct Phases {
  double window_s = 0;
  double start_s = 0;
  size_t windows = 0;
  std::vector<PhaseRow> rows;
};

// The default window: the timelines' bucket times the smallest whole number
// that cuts their span into at most 40 windows.
double DefaultWindow(const std::vector<Pattern>& patterns);

// Aggregates every pattern's timeline into windows of `window_s`, rounded up
// to a multiple of the bucket. Patterns without a timeline get no row.
Phases BuildPhases(const std::vector<Pattern>& patterns, double window_s);

// The phases chart: a row per pattern (labelled by rank), a column per
// window, cells on the heat scale by the time the pattern's requests took.
std::string PhasesSvg(const Phases& phases,
                      const std::vector<Pattern>& patterns);

// The scale's gradient with its two ends written: the page's legend.
std::string ScaleSvg(double max_s);

}  // namespace bbprof::viz

#endif  // BBPROF_VIZ_CHARTS_H_
