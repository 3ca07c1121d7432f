// libFuzzer target for the trace readers (trace/reader.h), built twice:
// BBPROF_FUZZ_BINARY=0 is the text reader's target (inputs that start like a
// binary trace are left to the other), BBPROF_FUZZ_BINARY=1 the binary
// reader's (an input without the binary magic gets it put in front, so
// mutations reach the blocks). Inputs that start with the gzip or zstd magic
// go through the decompressing streams, as OpenTraceReader reads any file.
//
// Beyond "no crash, no UB, no leak", each input checks properties:
// - every record handed out keeps the reader's promises (fuzz_util.h);
// - whatever a reader accepted, both writers accept, and the binary form
//   read back gives the same text (the two forms carry the same
//   traces);
// - a small plain input reads the same once gzip- or zstd-compressed.
#include <zlib.h>
#include <zstd.h>

#include <cstdint>
#include <string>
#include <string_view>

#include "fuzz/fuzz_util.h"
#include "trace/binary/binary_format.h"
#include "trace/reader.h"
#include "trace/text/text_format.h"
#include "trace/writer.h"

#ifndef BBPROF_FUZZ_BINARY
#error "define BBPROF_FUZZ_BINARY to 0 (text reader) or 1 (binary reader)"
#endif

namespace bbprof::fuzz {
namespace {

using trace::Record;

bool StartsWith(std::string_view s, std::string_view prefix) {
  return s.substr(0, prefix.size()) == prefix;
}
constexpr std::string_view kGzipMagic{"\x1f\x8b", 2};
constexpr std::string_view kZstdMagic{"\x28\xb5\x2f\xfd", 4};

// What one read of a trace gave: the records as the text writer writes
// them, how many, and whether the reader ended cleanly.
struct ReadOutcome {
  std::string text;
  uint64_t records = 0;
  bool ok = false;
};

// Reads every record, checks it, and hands it to the text and binary
// writers, which must take it.
ReadOutcome Drain(trace::TraceReader& reader, std::string* binary_out) {
  ReadOutcome out;
  const trace::NodeTable& nodes = reader.nodes();
  auto text =
      trace::NewTextWriter(std::make_unique<StringOutput>(&out.text), &nodes);
  std::string binary_sink;
  auto binary = trace::NewBinaryWriter(
      std::make_unique<StringOutput>(binary_out ? binary_out : &binary_sink),
      &nodes);
  Record rec;
  while (reader.Next(rec)) {
    CheckRecord(rec, nodes);
    Status s = text->Write(rec);
    FUZZ_CHECK(s.ok(), "text writer refused a record the reader accepted: " +
                           s.message());
    s = binary->Write(rec);
    FUZZ_CHECK(s.ok(), "binary writer refused a record the reader accepted: " +
                           s.message());
    ++out.records;
  }
  out.ok = reader.status().ok();
  FUZZ_CHECK(out.ok || !reader.status().message().empty(), "empty error");
  FUZZ_CHECK(text->Close().ok(), "text writer close");
  FUZZ_CHECK(binary->Close().ok(), "binary writer close");
  return out;
}

// The records of a trace the binary writer wrote, read back and written as
// text.
std::string BinaryBackToText(const std::string& binary) {
  auto reader = trace::NewBinaryReader(
      std::make_unique<StringInput>(binary), "round trip",
      std::make_shared<trace::NodeTable>(), {});
  FUZZ_CHECK(reader.ok(),
             "binary writer output unreadable: " + reader.status().message());
  ReadOutcome back = Drain(**reader, nullptr);
  FUZZ_CHECK(back.ok, "binary writer output unreadable: " +
                          (*reader)->status().message());
  return back.text;
}

std::string Gzip(std::string_view in) {
  z_stream z{};
  FUZZ_CHECK(
      deflateInit2(&z, 1, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) == Z_OK,
      "deflateInit2");
  std::string out(deflateBound(&z, in.size()) + 32, '\0');
  z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(in.data()));
  z.avail_in = static_cast<uInt>(in.size());
  z.next_out = reinterpret_cast<Bytef*>(out.data());
  z.avail_out = static_cast<uInt>(out.size());
  FUZZ_CHECK(deflate(&z, Z_FINISH) == Z_STREAM_END, "deflate");
  out.resize(z.total_out);
  deflateEnd(&z);
  return out;
}

std::string Zstd(std::string_view in) {
  std::string out(ZSTD_compressBound(in.size()), '\0');
  size_t n = ZSTD_compress(out.data(), out.size(), in.data(), in.size(), 1);
  FUZZ_CHECK(!ZSTD_isError(n), "ZSTD_compress");
  out.resize(n);
  return out;
}

#if BBPROF_FUZZ_BINARY
// Mutations almost always break a block's CRC-32, and the reader then stops
// before decoding the block. So the binary target recomputes the checksum of
// every block it can walk (12-byte file header, then blocks of a 12-byte
// header: u32 payload length, u32 message count, u32 CRC-32, little-endian)
// for inputs of even length; odd-length inputs keep theirs, so the mismatch
// path stays covered.
void FixBlockChecksums(std::string& bytes) {
  auto load = [&](size_t at) {
    uint32_t v = 0;
    for (int i = 3; i >= 0; --i)
      v = v << 8 | static_cast<uint8_t>(bytes[at + i]);
    return v;
  };
  size_t at = trace::kBinaryFileHeaderBytes;
  while (at + trace::kBinaryBlockHeaderBytes <= bytes.size()) {
    const size_t len = load(at);
    const size_t payload = at + trace::kBinaryBlockHeaderBytes;
    if (len == 0 || len > bytes.size() - payload) break;
    uint32_t crc = static_cast<uint32_t>(
        crc32(0, reinterpret_cast<const Bytef*>(bytes.data() + payload),
              static_cast<uInt>(len)));
    for (int i = 0; i < 4; ++i) {
      bytes[at + 8 + i] = static_cast<char>(crc >> (8 * i));
    }
    at = payload + len;
  }
}
#endif

MemFile& File() {
  static MemFile* const file = new MemFile;
  return *file;
}

}  // namespace
}  // namespace bbprof::fuzz

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace bbprof;
  using namespace bbprof::fuzz;
  std::string input(reinterpret_cast<const char*>(data), size);
  const bool compressed =
      StartsWith(input, kGzipMagic) || StartsWith(input, kZstdMagic);
#if BBPROF_FUZZ_BINARY
  if (!compressed && !trace::LooksBinary(input)) {
    input.insert(0, trace::kBinaryMagic);
  }
  if (!compressed && size % 2 == 0) FixBlockChecksums(input);
#else
  if (trace::LooksBinary(input)) return -1;  // the binary target's
#endif
  const std::string& path = File().Set(input);

  // Pass 1: default options, with the round trips.
  ReadOutcome first;
  {
    auto reader = trace::OpenTraceReader(path);
    if (reader.ok()) {
      std::string binary;
      first = Drain(**reader, &binary);
      FUZZ_CHECK(BinaryBackToText(binary) == first.text,
                 "binary round trip changed the trace");
    }
  }
  // A small plain input reads the same through either decompressor.
  if (!compressed && input.size() <= 4096) {
    for (const std::string& packed : {Gzip(input), Zstd(input)}) {
      auto reader = trace::OpenTraceReader(File().Set(packed));
      ReadOutcome again;
      if (reader.ok()) again = Drain(**reader, nullptr);
      FUZZ_CHECK(again.ok == first.ok && again.records == first.records &&
                     again.text == first.text,
                 "compressed input read differently");
    }
  }
  // Pass 2: the lenient options the analysis commands use.
  {
    trace::ReaderOptions options;
    options.skip_bad_lines = true;
    options.allow_unsorted = true;
    options.numeric_ids = true;
    auto reader = trace::OpenTraceReader(File().Set(input), nullptr, options);
    if (reader.ok()) {
      trace::Record rec;
      while ((*reader)->Next(rec)) CheckRecord(rec, (*reader)->nodes());
    }
  }
  return 0;
}
