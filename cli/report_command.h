// bbprof report: one self-contained HTML page of a nest or convolve result.
#ifndef BBPROF_CLI_REPORT_COMMAND_H_
#define BBPROF_CLI_REPORT_COMMAND_H_

#include "cli/subcommand.h"

namespace bbprof::cli {
extern const Subcommand kReportCommand;
}  // namespace bbprof::cli

#endif  // BBPROF_CLI_REPORT_COMMAND_H_
