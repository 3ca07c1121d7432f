// RunMaketrace: the whole of `bbprof maketrace` short of flag parsing: runs
// the Generator, writes the per-host views (for skew estimation), applies
// the loss models of section 7.5.5 (sniffer queue, then random loss) and
// writes the captured trace with its #meta lines.
#ifndef BBPROF_MAKETRACE_RUN_H_
#define BBPROF_MAKETRACE_RUN_H_

#include <cstdint>
#include <string>
#include <string_view>

#include "base/status.h"
#include "maketrace/config.h"
#include "maketrace/generator.h"
#include "trace/writer.h"

namespace bbprof::maketrace {

struct RunOptions {
  std::string output;  // trace path, "-" for standard output
  trace::TraceFormat format = trace::TraceFormat::kText;
  uint64_t seed = 1;
  double duration_ns = 0;  // overrides the configuration when > 0
  uint64_t messages = 0;   // overrides the configuration when > 0
  // When not empty: one trace per host in this folder (HOST.trace, or
  // HOST.bbt for binary), every message as its sender and its receiver saw it.
  std::string per_host_dir;
  bool quiet = false;  // progress display
};

struct RunSummary {
  GeneratorStats gen;
  uint64_t written = 0;
  uint64_t sniffer_drops = 0;
  uint64_t random_drops = 0;
  uint64_t per_host_files = 0;
};

Result<RunSummary> RunMaketrace(const Config& config, const RunOptions& opts);

// The per-host view file name of a host (without extension): the name with
// '/', a leading '.', and other unsafe bytes written as %XX.
std::string FileNameFor(std::string_view host);

// A human summary of a run, several lines (for standard error).
std::string FormatSummary(const Config& config, const RunSummary& s);

}  // namespace bbprof::maketrace

#endif  // BBPROF_MAKETRACE_RUN_H_
