// bbprof diff BEFORE AFTER: what changed between two nesting results (two
// result documents, or two traces or captures nested with the same
// parameters); results/diff/diff.h holds the comparison.
#ifndef BBPROF_CLI_DIFF_COMMAND_H_
#define BBPROF_CLI_DIFF_COMMAND_H_

#include "cli/subcommand.h"

namespace bbprof::cli {
extern const Subcommand kDiffCommand;
}  // namespace bbprof::cli

#endif  // BBPROF_CLI_DIFF_COMMAND_H_
