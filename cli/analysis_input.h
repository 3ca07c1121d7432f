// What the analysis commands (nest, convolve, stats, convert, merge, skewer
// --estimate) read: a trace,
// text or binary, or a capture file (pcap/pcapng, plain or compressed),
// reduced on the fly as `bbprof capture -r FILE` would reduce it with its
// defaults (host granularity, every decoder by port and content). So a user
// can point bbprof straight at a pcap; `bbprof capture` remains the way to
// choose names, decoders or a filter, or to keep the trace.
#ifndef BBPROF_CLI_ANALYSIS_INPUT_H_
#define BBPROF_CLI_ANALYSIS_INPUT_H_

#include <memory>
#include <string>

#include "base/status.h"
#include "trace/reader.h"

namespace bbprof::cli {

// Standard input ("-") is always read as a trace: it cannot be looked at
// twice.
Result<std::unique_ptr<trace::TraceReader>> OpenAnalysisInput(
    const std::string& path, const trace::ReaderOptions& options = {},
    std::shared_ptr<trace::NodeTable> nodes = nullptr);

}  // namespace bbprof::cli

#endif  // BBPROF_CLI_ANALYSIS_INPUT_H_
