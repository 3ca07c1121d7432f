// Dispatch from a path to the right reader or writer.
#include "trace/byte_stream.h"
#include "trace/reader.h"
#include "trace/text_format.h"
#include "trace/writer.h"

namespace bbprof::trace {

namespace {
bool EndsWith(std::string_view s, std::string_view suffix) {
  return s.size() >= suffix.size() &&
         s.substr(s.size() - suffix.size()) == suffix;
}
}  // namespace

Result<std::unique_ptr<TraceReader>> OpenTraceReader(
    const std::string& path, std::shared_ptr<NodeTable> nodes,
    const ReaderOptions& options) {
  if (nodes == nullptr) nodes = std::make_shared<NodeTable>();
  Result<std::unique_ptr<InputStream>> in = OpenInputStream(path);
  if (!in.ok()) return in.status();
  std::string name = path == "-" ? "standard input" : path;
  return NewTextReader(std::move(*in), std::move(name), std::move(nodes),
                       options);
}

TraceFormat FormatForPath(std::string_view path) {
  if (EndsWith(path, ".gz")) path.remove_suffix(3);
  if (EndsWith(path, ".zst")) path.remove_suffix(4);
  return EndsWith(path, ".bbt") ? TraceFormat::kBinary : TraceFormat::kText;
}

bool ParseTraceFormat(std::string_view text, TraceFormat* out) {
  if (text == "text") {
    *out = TraceFormat::kText;
    return true;
  }
  if (text == "binary") {
    *out = TraceFormat::kBinary;
    return true;
  }
  return false;
}

Result<std::unique_ptr<TraceWriter>> OpenTraceWriter(const std::string& path,
                                                     const NodeTable* nodes,
                                                     TraceFormat format) {
  Result<std::unique_ptr<OutputStream>> out = OpenOutputStream(path);
  if (!out.ok()) return out.status();
  (void)format;
  return NewTextWriter(std::move(*out), nodes);
}

Result<std::unique_ptr<TraceWriter>> OpenTraceWriter(const std::string& path,
                                                     const NodeTable* nodes) {
  return OpenTraceWriter(path, nodes, FormatForPath(path));
}

}  // namespace bbprof::trace
