// bbprof: a black-box performance profiler for distributed systems.
// This file only dispatches to the subcommand table (cli/subcommands.cc).
#include <cstdio>
#include <cstring>
#include <exception>
#include <iostream>
#include <string>
#include <vector>

#include "base/interrupt.h"
#include "cli/subcommand.h"

namespace {

void PrintHelp() {
  std::cout
      << "bbprof 0.1.0: a black-box performance profiler for distributed "
         "systems.\n"
         "\n"
         "It reduces packet captures of a system of black boxes (web, "
         "application and\n"
         "database servers, resolvers, caches) to a trace of messages, then "
         "infers the\n"
         "causal path patterns that account for the system's latency and "
         "which node on\n"
         "which path adds the delay (Aguilera et al., SOSP 2003).\n"
         "\n"
         "Usage: bbprof SUBCOMMAND [ARGS...]\n"
         "       bbprof SUBCOMMAND --help\n"
         "\n"
         "Subcommands:\n";
  for (const auto& sc : bbprof::cli::AllSubcommands()) {
    std::string name = sc.name;
    name.resize(12, ' ');
    std::cout << "  " << name << sc.summary << "\n";
  }
  std::cout << "\nExit status: 0 success, 1 bad input or failed run, 2 usage "
               "error,\n130 interrupted (SIGINT/SIGTERM).\nDocumentation: "
               "docs/cli.md\n";
}

}  // namespace

int main(int argc, char** argv) {
  std::ios::sync_with_stdio(false);
  if (argc < 2) {
    PrintHelp();
    return bbprof::cli::kExitUsage;
  }
  std::string cmd = argv[1];
  if (cmd == "help" || cmd == "--help" || cmd == "-h") {
    if (argc >= 3) {
      for (const auto& sc : bbprof::cli::AllSubcommands()) {
        if (sc.name == std::string(argv[2])) {
          std::vector<std::string> args = {"--help"};
          return sc.run(args);
        }
      }
      std::cerr << "bbprof: unknown subcommand '" << argv[2]
                << "' (see 'bbprof help')\n";
      return bbprof::cli::kExitUsage;
    }
    PrintHelp();
    return bbprof::cli::kExitOk;
  }
  if (cmd == "--version" || cmd == "version") {
    std::cout << "bbprof 0.1.0\n";
    return bbprof::cli::kExitOk;
  }
  for (const auto& sc : bbprof::cli::AllSubcommands()) {
    if (cmd == sc.name) {
      // SIGINT/SIGTERM: exit 130, no temporary file left (base/interrupt.h).
      bbprof::InstallInterruptHandlers("bbprof " + cmd);
      std::vector<std::string> args(argv + 2, argv + argc);
      try {
        return sc.run(args);
      } catch (const std::bad_alloc&) {
        std::cerr << "bbprof " << cmd << ": out of memory\n";
        return bbprof::cli::kExitFailure;
      } catch (const std::exception& e) {
        // Our own bug (user errors come back as Status); say so plainly.
        std::cerr << "bbprof " << cmd << ": internal error: " << e.what()
                  << "\n";
        return bbprof::cli::kExitFailure;
      }
    }
  }
  std::cerr << "bbprof: unknown subcommand '" << cmd
            << "' (see 'bbprof help' for the list)\n";
  return bbprof::cli::kExitUsage;
}
