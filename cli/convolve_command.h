#ifndef BBPROF_CLI_CONVOLVE_COMMAND_H_
#define BBPROF_CLI_CONVOLVE_COMMAND_H_
#include "cli/subcommand.h"
namespace bbprof::cli {
// bbprof convolve TRACE: causal paths by cross-correlation (section 5.2).
extern const Subcommand kConvolveCommand;
}  // namespace bbprof::cli
#endif  // BBPROF_CLI_CONVOLVE_COMMAND_H_
