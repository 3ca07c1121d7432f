#include "capture/capture_reader.h"

#include <charconv>
#include <cstdio>
#include <cstring>
#include <deque>

#include "capture/pcap_source.h"

namespace bbprof::capture {

namespace {

// The first four bytes of a capture file, read as a native uint32.
constexpr uint32_t kCaptureMagics[] = {
    0xA1B2C3D4u, 0xD4C3B2A1u,  // pcap, microseconds, either byte order
    0xA1B23C4Du, 0x4D3CB2A1u,  // pcap, nanoseconds
    0x0A0D0D0Au,               // pcapng section header block
};

uint32_t HeadMagic(std::string_view head) {
  uint32_t magic;
  std::memcpy(&magic, head.data(), 4);
  return magic;
}

}  // namespace

bool LooksLikeCapture(std::string_view head) {
  if (head.size() < 4) return false;
  for (uint32_t m : kCaptureMagics) {
    if (HeadMagic(head) == m) return true;
  }
  return false;
}

bool NearlyACapture(std::string_view head) {
  if (head.size() < 4 || LooksLikeCapture(head)) return false;
  for (uint32_t m : kCaptureMagics) {
    uint32_t diff = HeadMagic(head) ^ m;
    int equal = 0;
    for (int i = 0; i < 4; ++i) equal += ((diff >> (8 * i)) & 0xff) == 0;
    if (equal >= 3) return true;
  }
  return false;
}

std::string CaptureHeaderMeta(const PacketSource& source, size_t files,
                              const ReducerOptions& options,
                              const std::string& filter) {
  std::string header = "source=capture";
  header += source.live() ? " iface=" + source.name()
                          : " files=" + std::to_string(files);
  header += " snaplen=" + std::to_string(source.snaplen()) + " granularity=" +
            (options.granularity == Granularity::kService ? "service" : "host") +
            " mode=" + (options.messages ? "messages" : "calls");
  if (!options.truth_headers.empty()) {
    // Which headers the pathids came from (names are tokens: no blanks).
    std::string names;
    for (const std::string& n : options.truth_headers.names()) {
      names += (names.empty() ? "" : ",") + n;
    }
    header += " truth_headers=" + names;
  }
  if (!filter.empty() && filter.find('\n') == std::string::npos) {
    header += " filter=\"" + filter + "\"";
  }
  return header;
}

std::string CaptureStatsMeta(const Reducer& reducer, const PacketSource& source) {
  std::string body = "capture_stats";
  if (source.live()) {
    SourceStats s = source.Stats();
    body += " kernel_received=" + std::to_string(s.received) +
            " kernel_drops=" + std::to_string(s.kernel_drops) +
            " interface_drops=" + std::to_string(s.if_drops);
  }
  for (const auto& [name, n] : reducer.counters()) {
    body += " " + name + "=" + std::to_string(n);
  }
  return body;
}

namespace {

class CaptureReader final : public trace::TraceReader {
 public:
  CaptureReader(std::string path, std::shared_ptr<trace::NodeTable> nodes,
                const trace::ReaderOptions& options)
      : TraceReader(std::move(path), std::move(nodes)), options_(options) {}

  Status Open(ReducerOptions reducer_options) {
    auto src = PacketSource::OpenFile(path_);
    if (!src.ok()) return src.status();
    source_ = std::move(*src);
    meta_.push_back(CaptureHeaderMeta(*source_, 1, reducer_options, ""));
    reducer_ = std::make_unique<Reducer>(
        std::move(reducer_options), nodes_.get(),
        [this](const trace::Record& r) {
          // r.op views the reducer's op table, which outlives the queue.
          queue_.push_back({r.ts_ns, r.sender, r.receiver, r.kind,
                            r.callid_is_number, r.callid_number, r.op});
          return Status::Ok();
        });
    if (path_.find_first_of(" \t\n") == std::string::npos) {
      meta_.push_back("capture_file=" + path_);
    }
    return ReadAheadFirstRecord();
  }

  uint64_t raw_bytes_read() const override { return bytes_; }

 protected:
  bool Advance(trace::Record& rec) override {
    while (queue_.empty()) {
      if (finished_ || !status_.ok()) return false;
      Pump();
    }
    const Queued q = queue_.front();
    queue_.pop_front();
    rec = trace::Record{};
    rec.ts_ns = q.ts;
    rec.sender = q.sender;
    rec.receiver = q.receiver;
    rec.kind = q.kind;
    rec.op = q.op;
    if (q.has_callid) {
      if (options_.numeric_ids) {
        rec.callid_is_number = true;
        rec.callid_number = q.callid;
      } else {
        auto end = std::to_chars(callid_buf_, callid_buf_ + sizeof callid_buf_,
                                 q.callid).ptr;
        rec.callid = std::string_view(callid_buf_,
                                      static_cast<size_t>(end - callid_buf_));
      }
    }
    return true;
  }

 private:
  struct Queued {
    trace::TimeNs ts;
    trace::NodeId sender, receiver;
    trace::Kind kind;
    bool has_callid;
    uint64_t callid;
    std::string_view op;
  };

  // Feeds one buffer of frames to the reducer; at the end of the file,
  // flushes it and notes its counters among the meta lines.
  void Pump() {
    const uint32_t link = source_->link_type();
    Status failure;
    auto n = source_->Dispatch(4096, [&](const Frame& f) {
      bytes_ += f.data.size() + 16;  // the pcap record header and the frame
      ++packets_;
      if (!failure.ok()) return;
      failure = reducer_->AddFrame(link, f.ts, f.data, f.wire_length);
    });
    if (!failure.ok()) {
      status_ = failure;
      return;
    }
    if (!n.ok()) {
      // A capture cut short (a copy taken while it was being written, a
      // full disk) is analysed as far as it goes, as `bbprof capture -r`
      // keeps what it decoded; the cut is said on standard error (even with
      // --quiet: it changes what the results mean) and in a #meta line.
      std::fprintf(stderr,
                   "bbprof: warning: %s: capture cut short after packet %llu "
                   "(about byte %llu): %s; analysing the packets before it\n",
                   path_.c_str(), static_cast<unsigned long long>(packets_),
                   static_cast<unsigned long long>(bytes_),
                   n.status().message().c_str());
      meta_.push_back("capture_cut_after_packet=" + std::to_string(packets_));
    }
    if (!n.ok() || source_->at_end()) {
      if (Status s = reducer_->Finish(); !s.ok()) {
        status_ = s;
        return;
      }
      meta_.push_back(CaptureStatsMeta(*reducer_, *source_));
      finished_ = true;
    }
  }

  trace::ReaderOptions options_;
  std::unique_ptr<PacketSource> source_;
  std::unique_ptr<Reducer> reducer_;
  std::deque<Queued> queue_;
  bool finished_ = false;
  uint64_t bytes_ = 24;  // the pcap file header
  uint64_t packets_ = 0;
  char callid_buf_[24];
};

}  // namespace

Result<std::unique_ptr<trace::TraceReader>> OpenCaptureAsTrace(
    const std::string& path, std::shared_ptr<trace::NodeTable> nodes,
    const trace::ReaderOptions& options, ReducerOptions reducer_options) {
  if (nodes == nullptr) nodes = std::make_shared<trace::NodeTable>();
  auto reader = std::make_unique<CaptureReader>(path, std::move(nodes), options);
  BBPROF_RETURN_IF_ERROR(reader->Open(std::move(reducer_options)));
  return std::unique_ptr<trace::TraceReader>(std::move(reader));
}

}  // namespace bbprof::capture
