#include "cli/analysis_input.h"

#include "capture/capture_reader.h"
#include "trace/byte_stream.h"

namespace bbprof::cli {

Result<std::unique_ptr<trace::TraceReader>> OpenAnalysisInput(
    const std::string& path, const trace::ReaderOptions& options,
    std::shared_ptr<trace::NodeTable> nodes) {
  if (path != "-") {
    // Look at the first bytes (after any gzip/zstd layer) for a capture's
    // magic number; anything else, including an unreadable file, goes to
    // the trace reader and its errors.
    auto in = trace::OpenInputStream(path);
    if (in.ok()) {
      char head[4];
      size_t got = 0;
      while (got < sizeof head) {
        auto n = (*in)->Read(head + got, sizeof head - got);
        if (!n.ok() || *n == 0) break;
        got += *n;
      }
      if (capture::LooksLikeCapture(std::string_view(head, got))) {
        return capture::OpenCaptureAsTrace(path, std::move(nodes), options);
      }
    }
  }
  return trace::OpenTraceReader(path, std::move(nodes), options);
}

}  // namespace bbprof::cli
