// libFuzzer target for capture files read as traces
// (capture/capture_reader.h): the whole packet path of `bbprof nest
// FILE.pcap` — libpcap's pcap/pcapng parsing, link layers, IP and fragment
// reassembly, TCP reassembly, every decoder chosen by port or probe, naming
// and the reorder buffer — on a file held in memory (a memfd; gzip and zstd
// inputs are undone as for any file). Records must keep the reader's
// promises (fuzz_util.h) and be accepted by both trace writers.
#include <cstdint>
#include <string>

#include "capture/capture_reader.h"
#include "fuzz/fuzz_util.h"
#include "trace/binary/binary_format.h"
#include "trace/text/text_format.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace bbprof;
  static fuzz::MemFile* const file = new fuzz::MemFile;
  const std::string& path =
      file->Set(std::string_view(reinterpret_cast<const char*>(data), size));
  auto reader = capture::OpenCaptureAsTrace(path, nullptr, {});
  if (!reader.ok()) return 0;
  const trace::NodeTable& nodes = (*reader)->nodes();
  std::string text, binary;
  auto text_writer =
      trace::NewTextWriter(std::make_unique<fuzz::StringOutput>(&text), &nodes);
  auto binary_writer = trace::NewBinaryWriter(
      std::make_unique<fuzz::StringOutput>(&binary), &nodes);
  for (const std::string& meta : (*reader)->meta()) {
    FUZZ_CHECK(text_writer->WriteMeta(meta).ok(), meta);
    FUZZ_CHECK(binary_writer->WriteMeta(meta).ok(), meta);
  }
  trace::Record rec;
  trace::TimeNs last = 0;
  while ((*reader)->Next(rec)) {
    fuzz::CheckRecord(rec, nodes);
    // Records leave the reorder buffer in time order.
    FUZZ_CHECK(rec.ts_ns >= last, std::to_string(rec.ts_ns));
    last = rec.ts_ns;
    Status s = text_writer->Write(rec);
    FUZZ_CHECK(s.ok(), s.message());
    s = binary_writer->Write(rec);
    FUZZ_CHECK(s.ok(), s.message());
  }
  FUZZ_CHECK(text_writer->Close().ok(), "text close");
  FUZZ_CHECK(binary_writer->Close().ok(), "binary close");
  return 0;
}
