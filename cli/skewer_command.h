#ifndef BBPROF_CLI_SKEWER_COMMAND_H_
#define BBPROF_CLI_SKEWER_COMMAND_H_
#include "cli/subcommand.h"
namespace bbprof::cli {
extern const Subcommand kSkewerCommand;
}  // namespace bbprof::cli
#endif  // BBPROF_CLI_SKEWER_COMMAND_H_
