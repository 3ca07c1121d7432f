#ifndef BBPROF_CLI_IMPORT_COMMAND_H_
#define BBPROF_CLI_IMPORT_COMMAND_H_
#include "cli/subcommand.h"
namespace bbprof::cli {
extern const Subcommand kImportCommand;
}  // namespace bbprof::cli
#endif  // BBPROF_CLI_IMPORT_COMMAND_H_
