// Node naming flags shared by `capture` (names given as packets are
// reduced) and the analysis commands `nest`, `convolve` and `stats` (a
// trace renamed as it is read, capture/renaming_reader.h), so that one
// spelling works everywhere: --granularity host|service, --names FILE.
// Also nest's --clients (external clients folded, kept, or grouped by
// CIDR block; nesting/steps/client_folding.h).
#ifndef BBPROF_CLI_NAMING_FLAGS_H_
#define BBPROF_CLI_NAMING_FLAGS_H_

#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "base/status.h"
#include "capture/naming.h"
#include "cli/command_line.h"
#include "nesting/steps/client_folding.h"
#include "trace/reader.h"

namespace bbprof::cli {

struct NamingFlags {
  // False when neither flag was given to an analysis command: names are
  // read as the trace has them.
  bool given = false;
  capture::Granularity granularity = capture::Granularity::kHost;
  capture::NameMap names;
  // --max-nodes: distinct node names kept (trace::NodeTable::SetLimit).
  uint64_t max_nodes = kDefaultMaxNodes;
  static constexpr uint64_t kDefaultMaxNodes = 200'000;
};

// Adds --granularity, --names and --max-nodes. `capture`: the capture's form
// (default host); otherwise no default (the trace's names are kept unless a
// flag is given; without --granularity, names keep their granularity).
void AddNamingFlags(CommandLine& cl, bool capture);

// Reads the flags into *out. Returns an exit code on a bad flag (2) or an
// unreadable names file (1), nullopt when all is well.
std::optional<int> ParseNamingFlags(const CommandLine& cl, bool capture,
                                    NamingFlags* out);

// OpenAnalysisInput, renamed through `naming` when its flags were given,
// its node names limited to naming.max_nodes (in `nodes` when given).
Result<std::unique_ptr<trace::TraceReader>> OpenNamedInput(
    const std::string& path, const trace::ReaderOptions& options,
    const NamingFlags& naming,
    std::shared_ptr<trace::NodeTable> nodes = nullptr);

// After a run: warns once (unless -q) when names were folded past
// --max-nodes, naming the flag that raises the limit.
void WarnIfNodesFolded(const CommandLine& cl, const trace::NodeTable& nodes);
// The same from the counts: `folded` mentions past a limit of `limit` names
// (a run whose input stats counted them, as nest's stream driver does when
// its ranks read only parts of the trace).
void WarnIfNodesFolded(const CommandLine& cl, size_t limit, uint64_t folded);

// Parses --clients: fold, keep, cidr:/N[,/M] (IPv4 clients by /N blocks,
// IPv6 by /M, default /64) or cidr:BLOCK,BLOCK,... (a client is named by
// the longest listed block that holds it; others fold into `clients`).
// Returns an empty string on success, else what is wrong.
std::string ParseClientsFlag(std::string_view text,
                             nesting::ClientFolding* out);

}  // namespace bbprof::cli

#endif  // BBPROF_CLI_NAMING_FLAGS_H_
