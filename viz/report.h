// The report: one self-contained HTML page of a result (`bbprof report`,
// `nest --report`), readable offline and attachable to a ticket: no network,
// its style sheet, script and pictures (inline SVG) inside. It holds what
// the input was, a sortable and filterable pattern table with culprits,
// each pattern's graph on one colour scale (pattern_graph.h), latency and
// own-time histograms and waterfalls of the median and slowest request
// (charts.h), the service map (service_map.h) and the phases chart. All
// colours and labels follow style.h, as `render` does.
#ifndef BBPROF_VIZ_REPORT_H_
#define BBPROF_VIZ_REPORT_H_

#include <nlohmann/json.hpp>
#include <string>

#include "base/status.h"

namespace bbprof::viz {

struct ReportOptions {
  // Window of the phases chart, in seconds (0: DefaultWindow, about 40
  // windows over the trace). Rounded up to a multiple of the timelines'
  // bucket.
  double window_s = 0;
  // Only the first `top` patterns in the result's order (0: all).
  size_t top = 0;
  // Patterns whose details are open when the page loads; the others open
  // on a click (a page of hundreds stays quick to draw).
  size_t open = 10;
};

// The page's bytes, without touching the disk. Errors name the JSON path,
// as RenderResult's do.
Result<std::string> BuildReport(const nlohmann::json& result,
                                const ReportOptions& options);

// BuildReport, then writes the page atomically to `path`.
Status WriteReport(const nlohmann::json& result, const ReportOptions& options,
                   const std::string& path);

}  // namespace bbprof::viz

#endif  // BBPROF_VIZ_REPORT_H_
