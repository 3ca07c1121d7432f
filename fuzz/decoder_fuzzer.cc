// libFuzzer target for one protocol decoder (capture/decoder.h), built once
// per decoder with BBPROF_FUZZ_DECODER naming it ("http", "dns", ...).
//
// The input is a list of chunks, each a one-byte header then its body:
//   header bit 0: direction (0 client to server, 1 server to client)
//   header bit 1: a gap (bytes lost) instead of data
//   header bits 2-7: time since the previous chunk, in milliseconds
//   then a big-endian u16 length; data chunks carry that many bytes (fewer
//   at the end of the input), gaps none.
// A stream decoder gets the chunks as TCP segments and gaps; a datagram
// decoder gets each data chunk as a datagram; the content probes see the
// first client bytes and every datagram. Truth headers are asked for, so
// the request-id readers run too (capture/decoders/truth_header.h).
//
// Every event must keep the decoder contract: a valid op and pathid token
// (trace/token.h), and a time no later than the bytes that carried it.
#include <cstdint>
#include <memory>
#include <span>
#include <string>

#include "capture/decoder.h"
#include "capture/decoders/truth_header.h"
#include "fuzz/fuzz_util.h"

#ifndef BBPROF_FUZZ_DECODER
#error "define BBPROF_FUZZ_DECODER to a decoder's name"
#endif

namespace bbprof::fuzz {
namespace {

using capture::AppEvent;
using capture::Direction;

class CheckingSink final : public capture::EventSink {
 public:
  CheckingSink()
      : truth_({"x-request-id", "traceparent", "uber-trace-id", "b3"}) {}

  void Emit(const AppEvent& e) override {
    FUZZ_CHECK(e.ts <= now_,
               std::to_string(e.ts) + " after " + std::to_string(now_));
    FUZZ_CHECK(e.kind == trace::Kind::kCall || e.kind == trace::Kind::kReturn ||
                   e.kind == trace::Kind::kMessage,
               "kind");
    if (!e.op.empty()) {
      std::string why = trace::CheckToken(e.op, trace::TokenKind::kOp);
      FUZZ_CHECK(why.empty(), why);
    }
    if (!e.pathid.empty()) {
      std::string why = trace::CheckToken(e.pathid, trace::TokenKind::kPathid);
      FUZZ_CHECK(why.empty(), why);
    }
  }
  void Count(std::string_view reason, uint64_t n) override {
    FUZZ_CHECK(!reason.empty() && n > 0, "empty count");
  }
  const capture::TruthHeaders* truth_headers() const override {
    return &truth_;
  }
  void set_now(trace::TimeNs now) { now_ = now; }

 private:
  capture::TruthHeaders truth_;
  trace::TimeNs now_ = 0;
};

std::span<const std::byte> Bytes(const uint8_t* p, size_t n) {
  return {reinterpret_cast<const std::byte*>(p), n};
}

}  // namespace
}  // namespace bbprof::fuzz

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace bbprof;
  using namespace bbprof::fuzz;
  static const capture::DecoderInfo* const info =
      capture::FindDecoder(BBPROF_FUZZ_DECODER);
  FUZZ_CHECK(info != nullptr, BBPROF_FUZZ_DECODER);

  CheckingSink sink;
  std::unique_ptr<capture::StreamDecoder> stream;
  std::unique_ptr<capture::DatagramDecoder> datagram;
  if (info->make_stream) stream = info->make_stream(sink);
  if (info->make_datagram) datagram = info->make_datagram(sink);
  bool probed_stream = false;
  trace::TimeNs now = 1'000'000'000;
  size_t pos = 0;
  while (pos + 3 <= size) {
    const uint8_t header = data[pos];
    const size_t length = size_t{data[pos + 1]} << 8 | data[pos + 2];
    pos += 3;
    const Direction dir =
        header & 1 ? Direction::kToClient : Direction::kToServer;
    now += trace::TimeNs{header >> 2} * 1'000'000;
    sink.set_now(now);
    if (header & 2) {
      if (stream) stream->OnGap(dir, length);
      continue;
    }
    const size_t n = std::min(length, size - pos);
    std::span<const std::byte> body = Bytes(data + pos, n);
    pos += n;
    if (stream) {
      if (!probed_stream && dir == Direction::kToServer && info->probe_stream) {
        int confidence = info->probe_stream(body);
        FUZZ_CHECK(confidence >= 0 && confidence <= 100,
                   std::to_string(confidence));
        probed_stream = true;
      }
      stream->OnData(dir, now, body);
    }
    if (datagram) {
      if (info->probe_datagram) {
        int confidence = info->probe_datagram(body);
        FUZZ_CHECK(confidence >= 0 && confidence <= 100,
                   std::to_string(confidence));
      }
      datagram->OnDatagram(dir, now, body);
    }
  }
  if (stream) stream->OnEnd(now);
  return 0;
}
