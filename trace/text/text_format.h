// The text form of the trace format (shared/spec/trace-format.md, "Text
// form"): the reader and writer behind OpenTraceReader/OpenTraceWriter.
#ifndef BBPROF_TRACE_TEXT_TEXT_FORMAT_H_
#define BBPROF_TRACE_TEXT_TEXT_FORMAT_H_

#include <memory>
#include <string>

#include "trace/byte_stream.h"
#include "trace/reader.h"
#include "trace/writer.h"

namespace bbprof::trace {

inline constexpr std::string_view kTextHeader = "#bbprof-trace 1";
// Lines are bounded so that a file without newlines (binary garbage) cannot
// make a reader grow its buffer without limit.
inline constexpr size_t kMaxLineBytes = 64 * 1024;
// Said by every reader that meets a decreasing timestamp.
inline constexpr const char* kSortHint =
    "a trace must be in time order; sort it with 'bbprof merge --sort'";

// Reads the header lines eagerly (so meta() is complete for them) and returns
// the first error if the file is malformed before its first record.
Result<std::unique_ptr<TraceReader>> NewTextReader(
    std::unique_ptr<InputStream> in, std::string path,
    std::shared_ptr<NodeTable> nodes, const ReaderOptions& options);

std::unique_ptr<TraceWriter> NewTextWriter(std::unique_ptr<OutputStream> out,
                                           const NodeTable* nodes);

}  // namespace bbprof::trace

#endif  // BBPROF_TRACE_TEXT_TEXT_FORMAT_H_
