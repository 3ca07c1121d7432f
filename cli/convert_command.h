#ifndef BBPROF_CLI_CONVERT_COMMAND_H_
#define BBPROF_CLI_CONVERT_COMMAND_H_
#include "cli/subcommand.h"
namespace bbprof::cli {
extern const Subcommand kConvertCommand;
}  // namespace bbprof::cli
#endif  // BBPROF_CLI_CONVERT_COMMAND_H_
