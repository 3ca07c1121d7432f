// The boundary between capture/'s packet core (link layers, IP, fragment and
// TCP stream reassembly, flows, naming, libpcap) and its protocol decoders
// (ONC RPC, DNS, HTTP/1.x, HTTP/2 and gRPC, generic request/response).
//
// Decoders are pure functions of bytes (style.md: PcapPlusPlus keeps Packet++
// free of libpcap): they see one flow's payload, in order, and report where
// calls, returns and messages start, with a per-flow token that pairs a
// return with its call (an RPC xid, a DNS id, an HTTP request index, an
// HTTP/2 stream id). The core turns events into trace records: it knows the
// endpoints, names the nodes, and composes the trace callid from the flow and
// the token so that callids are unique between two nodes.
//
// Paper section 6.2: a call is marked by the first packet of a request, a
// return by the first packet of its response.
#ifndef BBPROF_CAPTURE_DECODER_H_
#define BBPROF_CAPTURE_DECODER_H_

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string_view>
#include <vector>

#include "trace/record.h"

namespace bbprof::capture {

class TruthHeaders;

// Which way bytes travel within a flow. The core decides which endpoint is
// the client (the TCP connection's initiator; for UDP the sender of the first
// datagram unless only the other side uses a decoder's well-known port).
enum class Direction : uint8_t { kToServer = 0, kToClient = 1 };

struct AppEvent {
  // kCall: a request starts (client to server). kReturn: its response starts
  // (server to client). kMessage: a message that is neither (a server push,
  // a one-way notification), in either direction.
  trace::Kind kind = trace::Kind::kMessage;
  Direction dir = Direction::kToServer;
  // Capture time of the packet that carried the message's first byte.
  trace::TimeNs ts = 0;
  // Pairs a kReturn with its kCall within this flow; 32 bits is enough for
  // every protocol we decode (xid, DNS id, stream id, request index).
  uint32_t token = 0;
  bool has_token = false;
  // kCall: the operation it asks for (trace field 7), built with
  // capture/decoders/op_names.h; empty when the decoder cannot tell. Valid
  // during Emit only. A kReturn needs none: the core gives it its call's.
  std::string_view op = {};
  // The request id a truth header carried (capture/decoders/truth_header.h),
  // for the call and for its return; empty if none. Valid during Emit only.
  std::string_view pathid = {};
};

// Where decoders report. Implemented by the core (and by test fakes).
class EventSink {
 public:
  virtual ~EventSink() = default;
  virtual void Emit(const AppEvent& event) = 0;
  // Counts something that could not be decoded, under a stable snake_case
  // name prefixed by the decoder ("http_bad_chunk_size", "rpc_bad_record_mark").
  // Never fatal.
  virtual void Count(std::string_view reason, uint64_t n = 1) = 0;
  // The headers whose request id becomes the pathid (--truth-header); null
  // or empty when none were asked for, and then decoders read no header
  // they do not need for framing.
  virtual const TruthHeaders* truth_headers() const { return nullptr; }
};

// One TCP connection's decoder. The core delivers each direction's bytes in
// order, exactly once, split at arbitrary points (a header may straddle
// segments), and tells the decoder about holes it could not fill.
class StreamDecoder {
 public:
  virtual ~StreamDecoder() = default;
  // `ts` is the capture time of the segment that carried data[0].
  virtual void OnData(Direction dir, trace::TimeNs ts,
                      std::span<const std::byte> data) = 0;
  // `length` bytes of `dir` were never captured (lost packets, or a snap
  // length shorter than the segment). The decoder must resynchronise, e.g.
  // at the next recognisable message start, instead of misparsing.
  virtual void OnGap(Direction dir, uint64_t length) = 0;
  // The connection ended (FIN, RST, idle timeout or end of capture).
  virtual void OnEnd(trace::TimeNs /*ts*/) {}
};

// One UDP flow's decoder: each datagram whole (after IP reassembly).
class DatagramDecoder {
 public:
  virtual ~DatagramDecoder() = default;
  virtual void OnDatagram(Direction dir, trace::TimeNs ts,
                          std::span<const std::byte> payload) = 0;
};

// A decoder's entry in the registry (capture/decoders/registry.cc): chosen by
// well-known port, else by content heuristic, else the user forces one
// (--decode tcp/8080=http). Zeek's analyzer plugins work the same way.
struct DecoderInfo {
  const char* name;  // "rpc", "dns", "http", "http2", "generic"
  std::vector<uint16_t> tcp_ports;
  std::vector<uint16_t> udp_ports;
  // Confidence (0 = not this protocol, 100 = certain) from the first bytes a
  // client sent on a connection / the first datagram. May be null.
  int (*probe_stream)(std::span<const std::byte> first_client_bytes);
  int (*probe_datagram)(std::span<const std::byte> payload);
  // Factories; null where the protocol has no such transport.
  std::unique_ptr<StreamDecoder> (*make_stream)(EventSink& sink);
  std::unique_ptr<DatagramDecoder> (*make_datagram)(EventSink& sink);
};

// The factory of a decoder that takes only its sink, for DecoderInfo's
// make_stream (Base = StreamDecoder) and make_datagram (DatagramDecoder).
template <class Decoder, class Base>
std::unique_ptr<Base> MakeDecoder(EventSink& sink) {
  return std::make_unique<Decoder>(sink);
}

// Every decoder, in probing order (most specific first; "generic" last).
std::span<const DecoderInfo> AllDecoders();
const DecoderInfo* FindDecoder(std::string_view name);

}  // namespace bbprof::capture

#endif  // BBPROF_CAPTURE_DECODER_H_
