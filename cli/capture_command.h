// bbprof capture: packets (live or from pcap files) to a trace.
#ifndef BBPROF_CLI_CAPTURE_COMMAND_H_
#define BBPROF_CLI_CAPTURE_COMMAND_H_

#include "cli/subcommand.h"

namespace bbprof::cli {
extern const Subcommand kCaptureCommand;
}  // namespace bbprof::cli

#endif  // BBPROF_CLI_CAPTURE_COMMAND_H_
