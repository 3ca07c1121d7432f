// CommandLine: the flag handling every subcommand shares, on top of
// Boost.Program_options: --help and --quiet on every subcommand, named
// positional arguments with counts, and an error (exit 2) for an unknown flag,
// a missing argument or a stray one. Errors read
//   bbprof nest: unrecognised option '--bogus'
//   Try 'bbprof nest --help' for more information.
#ifndef BBPROF_CLI_COMMAND_LINE_H_
#define BBPROF_CLI_COMMAND_LINE_H_

#include <boost/program_options.hpp>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"

namespace bbprof::cli {

namespace po = boost::program_options;

class CommandLine {
 public:
  // usage: the synopsis after "bbprof NAME", e.g. "TRACE [--json FILE]".
  // description: a paragraph or more explaining what the subcommand does.
  CommandLine(std::string name, std::string usage, std::string description);

  // Flags of this subcommand (add with options().add_options()(...)).
  po::options_description& options() { return options_; }

  // A positional argument. max_count -1 = any number. Positionals are taken
  // in the order declared; only the last may repeat.
  void AddPositional(const std::string& name, const std::string& help,
                     int min_count, int max_count);

  // Extra text shown at the end of --help (examples, notes).
  void SetEpilog(std::string epilog) { epilog_ = std::move(epilog); }

  // Parses args. Returns an exit code when the subcommand should stop now
  // (--help printed: 0; usage error printed: 2), std::nullopt to go on.
  std::optional<int> Parse(std::span<const std::string> args);

  const po::variables_map& vm() const { return vm_; }
  bool Has(const std::string& flag) const { return vm_.count(flag) > 0; }
  template <typename T>
  T Get(const std::string& flag) const {
    return vm_[flag].as<T>();
  }
  const std::vector<std::string>& Positional(const std::string& name) const;
  bool quiet() const { return quiet_; }

  // Prints "bbprof NAME: message" and the --help hint; returns kExitUsage.
  int UsageError(const std::string& message) const;
  // Prints "bbprof NAME: message"; returns kExitFailure.
  int Fail(const std::string& message) const;
  int Fail(const Status& status) const { return Fail(status.message()); }

  std::string HelpText() const;
  const std::string& name() const { return name_; }

 private:
  struct PositionalSpec {
    std::string name, help;
    int min_count, max_count;
    std::vector<std::string> values;
  };
  std::string name_, usage_, description_, epilog_;
  po::options_description options_;
  std::vector<PositionalSpec> positionals_;
  po::variables_map vm_;
  bool quiet_ = false;
};

// Writes a message to standard error unless --quiet was given: for the short
// summaries subcommands print after their work ("wrote 12 patterns to ...").
void Inform(const CommandLine& cl, const std::string& message);
// Reads the limit flag --NAME (a whole number, 0: no limit) into *out.
// Returns the usage error's exit code when it is not one.
std::optional<int> ParseLimitFlag(const CommandLine& cl,
                                  const std::string& name, uint64_t* out);

// "bbprof NAME: warning: message" on standard error unless --quiet: for a
// memory limit that began to evict (each says once which flag raises it).
void Warn(const CommandLine& cl, std::string_view message);

}  // namespace bbprof::cli

#endif  // BBPROF_CLI_COMMAND_LINE_H_
