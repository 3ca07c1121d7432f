// A capture file read as a trace: what `bbprof capture -r FILE` would write,
// produced on the fly, so that the analysis commands (nest, convolve, stats)
// can be pointed at a pcap or pcapng file directly. Frames go through the
// same Reducer (flows, decoders, naming, reorder buffer) with its defaults;
// records are handed out as they leave the reorder buffer, so memory stays
// that of the live flows, never the whole file.
#ifndef BBPROF_CAPTURE_CAPTURE_READER_H_
#define BBPROF_CAPTURE_CAPTURE_READER_H_

#include <memory>
#include <string>
#include <string_view>

#include "base/status.h"
#include "capture/reducer.h"
#include "trace/reader.h"

namespace bbprof::capture {

class PacketSource;

// The `#meta` lines a capture's trace carries (docs/capture.md), written by
// `bbprof capture` and by a capture file read as a trace alike. The header:
// where the packets came from (an interface, or `files` files), the snap
// length, the reducer's granularity and mode, and the BPF filter if any.
std::string CaptureHeaderMeta(const PacketSource& source, size_t files,
                              const ReducerOptions& options,
                              const std::string& filter);
// The `capture_stats ...` footer: the kernel's counters of a live source
// (none offline), then the reducer's.
std::string CaptureStatsMeta(const Reducer& reducer,
                             const PacketSource& source);

// True if the first bytes are a pcap (either byte order, micro- or
// nanosecond) or pcapng file's magic number.
bool LooksLikeCapture(std::string_view head);
// True if `head` differs from a capture magic in one byte: a damaged
// capture, to be named as such rather than read as a text trace.
bool NearlyACapture(std::string_view head);

// Opens `path` (pcap/pcapng, plain or gzip/zstd-compressed) as a trace.
// Names are interned into `nodes` (a fresh table if null). A file cut short
// (or corrupt from some packet on) is read as far as it goes: a warning on
// standard error names the file and the last packet read, and a
// `capture_cut_after_packet=N` meta line records it.
Result<std::unique_ptr<trace::TraceReader>> OpenCaptureAsTrace(
    const std::string& path, std::shared_ptr<trace::NodeTable> nodes,
    const trace::ReaderOptions& options, ReducerOptions reducer_options = {});

}  // namespace bbprof::capture

#endif  // BBPROF_CAPTURE_CAPTURE_READER_H_
