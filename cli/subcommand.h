// The bbprof executable is a table of subcommands (after Perfetto's
// trace_processor shell/subcommand.h). Each subcommand is its own small
// .h/.cc pair exporting one Subcommand value; cli/subcommands.cc lists them.
#ifndef BBPROF_CLI_SUBCOMMAND_H_
#define BBPROF_CLI_SUBCOMMAND_H_

#include <span>
#include <string>
#include <vector>

namespace bbprof::cli {

// Exit codes, the same for every subcommand (docs/cli.md).
inline constexpr int kExitOk = 0;
inline constexpr int kExitFailure = 1;  // bad input data, I/O error, failed run
inline constexpr int kExitUsage = 2;    // bad flag, missing or stray argument
inline constexpr int kExitInterrupted = 130;  // stopped by SIGINT before done

struct Subcommand {
  const char* name;
  const char* summary;  // one line, shown by `bbprof help`
  // args: everything after the subcommand's name.
  int (*run)(std::span<const std::string> args);
};

// Every subcommand, in the order `bbprof help` lists them.
std::span<const Subcommand> AllSubcommands();

}  // namespace bbprof::cli

#endif  // BBPROF_CLI_SUBCOMMAND_H_
