// The analysis flags of `nest` (penalties, skew, scoring, passes, grouping,
// clients, node names, bad lines) and the one way to nest an input with
// them, shared by `nest` and `diff` so that `diff` analyses two traces with
// the parameters `nest` would use.
#ifndef BBPROF_CLI_NEST_FLAGS_H_
#define BBPROF_CLI_NEST_FLAGS_H_

#include <memory>
#include <optional>
#include <string>

#include "base/status.h"
#include "cli/command_line.h"
#include "cli/naming_flags.h"
#include "nesting/drivers/stream_driver.h"
#include "nesting/nesting.h"
#include "trace/reader.h"

namespace bbprof::cli {

// Which driver nests the trace (docs/nesting.md, "The stream driver").
enum class NestSearch { kAuto, kMemory, kStream };

struct NestSetup {
  nesting::Params params;
  NestSearch search = NestSearch::kAuto;
  nesting::StreamOptions stream;
  NamingFlags naming;
  trace::ReaderOptions reader;
};

void AddNestAnalysisFlags(CommandLine& cl);

// Reads the flags into *out. Returns an exit code on a bad flag (2) or an
// unreadable names file (1), nullopt when all is well.
std::optional<int> ParseNestAnalysisFlags(const CommandLine& cl,
                                          NestSetup* out);

// `--threads`: "auto" is the cores this process may use (base/cores.h), at
// most kMaxAutoThreads; otherwise a count from 1 to 256. False on anything
// else. Shared by `eval`, which re-runs the nesting with "auto".
inline constexpr int kMaxAutoThreads = 8;
bool ParseThreadsFlag(const std::string& text, int* threads);

// Opens `path` (a trace or a capture, cli/analysis_input.h) and nests it;
// tells (unless --quiet) of skipped lines and skew windows. An input with no
// messages or no call pairs is an error. With `detail`, the run keeps every
// call (and, with `labels`, its callid and op) there too; with `spool`
// as well, a trace the stream driver nests writes its requests to a
// RequestSpool made in *spool instead (nest --requests in bounded memory),
// and `detail` stays empty. With `mpi_rank`
// (nest only), a process started by mpirun nests its share of the stream
// driver's segments (nesting/drivers/mpi_driver.h) and *mpi_rank gets its rank:
// only rank 0's result is the trace's (the others' is empty, not checked).
Result<nesting::NestingResult> NestInput(
    const CommandLine& cl, const std::string& path, const NestSetup& setup,
    nesting::DetailedResult* detail = nullptr, bool labels = false,
    int* mpi_rank = nullptr,
    std::unique_ptr<nesting::RequestSpool>* spool = nullptr);

}  // namespace bbprof::cli

#endif  // BBPROF_CLI_NEST_FLAGS_H_
