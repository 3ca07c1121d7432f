#include "cli/analysis_input.h"

#include "capture/capture_reader.h"
#include "trace/binary/binary_format.h"
#include "trace/byte_stream.h"

namespace bbprof::cli {

namespace {

// A byte below 0x20 other than TAB, LF and CR: never in a text trace.
bool HasBinaryByte(std::string_view head) {
  for (char c : head) {
    auto u = static_cast<unsigned char>(c);
    if (u < 0x20 && c != '\t' && c != '\n' && c != '\r') return true;
  }
  return false;
}

std::string HexMagic(std::string_view head) {
  static const char kDigits[] = "0123456789abcdef";
  std::string out = "0x";
  for (char c : head) {
    out += kDigits[static_cast<unsigned char>(c) >> 4];
    out += kDigits[static_cast<unsigned char>(c) & 15];
  }
  return out;
}

}  // namespace

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
      std::string_view h(head, got);
      if (capture::LooksLikeCapture(h)) {
        return capture::OpenCaptureAsTrace(path, std::move(nodes), options);
      }
      if (capture::NearlyACapture(h) || (!trace::LooksBinary(h) && HasBinaryByte(h))) {
        // A damaged capture magic, or bytes no text trace starts with: say
        // so, instead of the text reader's "too few fields" on line 1.
        return Status::Error(path + ": not a pcap, pcapng or trace file (bad magic " +
                             HexMagic(h) + "; expected a pcap, pcapng or bbprof trace)");
      }
    }
  }
  return trace::OpenTraceReader(path, std::move(nodes), options);
}

}  // namespace bbprof::cli
