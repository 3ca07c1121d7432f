// The generic request/response rule for TCP protocols without a decoder of
// their own (Redis, memcached, PostgreSQL, MySQL, ...), paper section 6.2:
// the connection's initiator is the client; a call starts at the client's
// first bytes after the server has spoken (or at the connection's first
// client bytes), its return at the server's first bytes after that; the
// token is the exchange index on the connection. Bytes the server sends
// before the client has said anything (a MySQL greeting, an SMTP banner)
// answer no call: they are a kMessage.
#include "capture/decoders/decoders.h"
#include "capture/decoders/op_names.h"

namespace bbprof::capture {
namespace {

class GenericDecoder final : public StreamDecoder {
 public:
  explicit GenericDecoder(EventSink& sink) : sink_(sink) {}

  void OnData(Direction dir, trace::TimeNs ts,
              std::span<const std::byte> data) override {
    if (data.empty()) {
      return;
    }
    if (dir == Direction::kToServer) {
      if (turn_ == Turn::kClient) {
        return;  // more of the same request
      }
      turn_ = Turn::kClient;
      ++exchange_;
      call_open_ = true;
      sink_.Emit({trace::Kind::kCall, dir, ts, exchange_, true,
                  GenericOp("generic", data)});
      return;
    }
    if (turn_ == Turn::kServer) {
      return;  // more of the same response
    }
    if (turn_ == Turn::kNone) {
      sink_.Emit({trace::Kind::kMessage, dir, ts, 0, false});
    } else if (call_open_) {
      sink_.Emit({trace::Kind::kReturn, dir, ts, exchange_, true});
    }
    call_open_ = false;
    turn_ = Turn::kServer;
  }

  // A hole where the other side spoke last means the turn changed inside
  // bytes we never saw: that message's first packet (and time) is lost.
  void OnGap(Direction dir, uint64_t /*length*/) override {
    Turn t = dir == Direction::kToServer ? Turn::kClient : Turn::kServer;
    if (turn_ == t) {
      return;
    }
    if (dir == Direction::kToServer) {
      ++exchange_;
      sink_.Count("generic_call_lost");
    } else if (call_open_) {
      sink_.Count("generic_return_lost");
    }
    call_open_ = false;
    turn_ = t;
  }

 private:
  enum class Turn { kNone, kClient, kServer };
  EventSink& sink_;
  Turn turn_ = Turn::kNone;
  uint32_t exchange_ = 0;
  bool call_open_ = false;
};

int ProbeGeneric(std::span<const std::byte> first) {
  return first.empty() ? 0 : 1;
}

}  // namespace

DecoderInfo GenericDecoderInfo() {
  return DecoderInfo{
      .name = "generic",
      .tcp_ports = {},
      .udp_ports = {},
      .probe_stream = &ProbeGeneric,
      .probe_datagram = nullptr,
      .make_stream = &MakeDecoder<GenericDecoder, StreamDecoder>,
      .make_datagram = nullptr,
  };
}

}  // namespace bbprof::capture
