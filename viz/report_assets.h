// The report page's assets, inlined into every page so that it needs no
// network and no other file (report.h): its style sheet and its script
// (sorting and filtering the pattern table).
#ifndef BBPROF_VIZ_REPORT_ASSETS_H_
#define BBPROF_VIZ_REPORT_ASSETS_H_

#include <string_view>

namespace bbprof::viz {

extern const std::string_view kReportCss;
extern const std::string_view kReportScript;

}  // namespace bbprof::viz

#endif  // BBPROF_VIZ_REPORT_ASSETS_H_
