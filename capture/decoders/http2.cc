// HTTP/2 in cleartext (RFC 9113), gRPC included. The client's HEADERS frame
// opening a new stream is a call (token: the stream id). Its return is, by
// default, the server's first HEADERS frame on that stream: the first packet
// of the response, as section 6.2 defines a return and as HTTP/1.x does; the
// "http2-end" variant returns at the server's frame carrying END_STREAM (the
// response complete: for a server-streaming gRPC call, the stream's end).
// docs/decoders.md explains the choice. Only frame headers are read;
// payloads (HPACK blocks, DATA, padding) are skipped.
#include <algorithm>
#include <string_view>
#include <unordered_map>

#include "capture/byte_cursor.h"
#include "capture/decoders/decoders.h"
#include "capture/decoders/stream_buffer.h"

namespace bbprof::capture {
namespace {

constexpr std::string_view kPreface = "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";
constexpr size_t kFrameHeader = 9;
constexpr uint32_t kUpgradedBit = 0x80000000u;
// Streams remembered per connection; a connection that leaves more open
// than this is leaking (or is not HTTP/2).
constexpr size_t kMaxStreams = 100000;
// Resynchronisation accepts frames up to the default SETTINGS_MAX_FRAME_SIZE.
constexpr uint32_t kResyncMaxFrame = 16384;

enum FrameType : uint8_t {
  kData = 0,
  kHeaders = 1,
  kPriority = 2,
  kRstStream = 3,
  kSettings = 4,
  kPushPromise = 5,
  kPing = 6,
  kGoaway = 7,
  kWindowUpdate = 8,
  kContinuation = 9,
};
constexpr uint8_t kEndStream = 0x1;

struct FrameHeader {
  uint32_t length;
  uint8_t type;
  uint8_t flags;
  uint32_t stream;
};

FrameHeader ReadFrameHeader(std::span<const std::byte> d) {
  ByteCursor c(d);
  FrameHeader h{};
  h.length = c.U16();
  h.length = (h.length << 8) | c.U8();
  h.type = c.U8();
  h.flags = c.U8();
  h.stream = c.U32() & 0x7fffffffu;
  return h;
}

// Whether a frame header could be real: used only to resynchronise.
bool PlausibleFrame(const FrameHeader& h) {
  if (h.type > kContinuation || h.length > kResyncMaxFrame) {
    return false;
  }
  switch (h.type) {
    case kSettings:
      return h.stream == 0 && h.length % 6 == 0 && (h.flags & ~0x1) == 0;
    case kPing:
      return h.stream == 0 && h.length == 8 && (h.flags & ~0x1) == 0;
    case kGoaway:
      return h.stream == 0 && h.length >= 8;
    case kWindowUpdate:
      return h.length == 4;
    case kRstStream:
      return h.stream != 0 && h.length == 4;
    case kPriority:
      return h.stream != 0 && h.length == 5;
    default:
      return h.stream != 0;
  }
}

class Http2Decoder final : public StreamDecoder {
 public:
  Http2Decoder(EventSink& sink, int64_t upgraded_token, ReturnAt return_at)
      : sink_(sink), upgraded_token_(upgraded_token), return_at_(return_at) {
    if (upgraded_token_ >= 0) {
      streams_[1] = Stream{true, false};
    }
  }

  void OnData(Direction dir, trace::TimeNs ts,
              std::span<const std::byte> data) override {
    Side& s = side(dir);
    s.buf.Append(ts, data);
    Parse(dir, s);
  }

  void OnGap(Direction dir, uint64_t length) override {
    Side& s = side(dir);
    if (s.buf.AbsorbGap(length)) {
      return;
    }
    s.preface_pending = false;
    if (!s.resync) {
      sink_.Count("http2_resync");
    }
    s.resync = true;
  }

 private:
  struct Side {
    StreamBuffer buf;
    bool preface_pending = false;
    bool resync = false;
  };
  struct Stream {
    bool called = false;
    bool returned = false;
  };
  Side& side(Direction d) {
    return d == Direction::kToServer ? client_ : server_;
  }

  uint32_t Token(uint32_t stream) const {
    if (upgraded_token_ < 0) {
      return stream;
    }
    if (stream == 1) {
      return static_cast<uint32_t>(upgraded_token_);
    }
    return kUpgradedBit | stream;
  }

  void Parse(Direction dir, Side& s) {
    if (dir == Direction::kToServer && !preface_checked_) {
      auto d = s.buf.data();
      size_t n = std::min(d.size(), kPreface.size());
      if (std::string_view(reinterpret_cast<const char*>(d.data()), n) !=
          kPreface.substr(0, n)) {
        // No preface: a capture that began mid-connection; find frames.
        preface_checked_ = true;
        sink_.Count("http2_missing_preface");
        s.resync = true;
      } else if (n < kPreface.size()) {
        return;
      } else {
        preface_checked_ = true;
        s.buf.Consume(kPreface.size());
      }
    }
    while (s.buf.size() >= kFrameHeader) {
      auto d = s.buf.data();
      FrameHeader h = ReadFrameHeader(d);
      if (s.resync) {
        // Accept a position only if this frame header is plausible and so
        // is the next one (or the buffer ends exactly after this frame).
        if (!PlausibleFrame(h)) {
          s.buf.Consume(1);
          continue;
        }
        size_t next = kFrameHeader + h.length;
        // Plausible frames are at most 16 KiB: wait for the whole one.
        if (d.size() < next) return;
        if (d.size() >= next + kFrameHeader &&
            !PlausibleFrame(ReadFrameHeader(d.subspan(next)))) {
          s.buf.Consume(1);
          continue;
        }
        s.resync = false;
      }
      OnFrame(dir, s.buf.TsAt(0), h);
      s.buf.Skip(kFrameHeader + uint64_t{h.length});
    }
  }

  void OnFrame(Direction dir, trace::TimeNs ts, const FrameHeader& h) {
    switch (h.type) {
      case kHeaders:
      case kData: {
        if (h.stream == 0) {
          sink_.Count("http2_bad_stream");
          return;
        }
        auto it = streams_.find(h.stream);
        if (dir == Direction::kToServer) {
          if (h.type == kHeaders && it == streams_.end()) {
            if (streams_.size() >= kMaxStreams) {
              sink_.Count("http2_too_many_streams");
              return;
            }
            streams_[h.stream] = Stream{true, false};
            sink_.Emit({trace::Kind::kCall, dir, ts, Token(h.stream), true});
          }
          return;
        }
        if (it == streams_.end()) {
          // Server push (an even stream promised earlier) or a response
          // whose request we never saw.
          if (h.type == kHeaders) {
            if (h.stream % 2 == 0) {
              sink_.Emit({trace::Kind::kMessage, dir, ts, 0, false});
            } else {
              sink_.Count("http2_unmatched_response");
            }
          }
          return;
        }
        bool end = (h.flags & kEndStream) != 0;
        // kFirstHeaders: the response's first frame (always HEADERS) is the
        // return, as in section 6.2; kEndStream: the frame completing it.
        bool emit = return_at_ == ReturnAt::kFirstHeaders
                        ? (h.type == kHeaders || end)
                        : end;
        if (emit && !it->second.returned) {
          it->second.returned = true;
          sink_.Emit({trace::Kind::kReturn, dir, ts, Token(h.stream), true});
        }
        if (end) {
          streams_.erase(it);
        }
        return;
      }
      case kRstStream: {
        sink_.Count("http2_stream_reset");
        auto it = streams_.find(h.stream);
        if (it == streams_.end()) {
          return;
        }
        // A server refusing or failing a stream has answered the call (with
        // an error); a client cancelling it leaves the call unanswered.
        if (dir == Direction::kToClient && !it->second.returned) {
          sink_.Emit({trace::Kind::kReturn, dir, ts, Token(h.stream), true});
        }
        streams_.erase(it);
        return;
      }
      case kGoaway:
        sink_.Count("http2_goaway");
        return;
      case kPushPromise:
      case kContinuation:
      case kPriority:
      case kSettings:
      case kPing:
      case kWindowUpdate:
        return;
      default:
        sink_.Count("http2_unknown_frame_type");
        return;
    }
  }

  EventSink& sink_;
  int64_t upgraded_token_;
  ReturnAt return_at_;
  bool preface_checked_ = false;
  Side client_;
  Side server_;
  std::unordered_map<uint32_t, Stream> streams_;
};

int ProbeHttp2(std::span<const std::byte> p) {
  size_t n = std::min(p.size(), kPreface.size());
  if (n < 4) {
    return 0;
  }
  std::string_view got(reinterpret_cast<const char*>(p.data()), n);
  if (got == kPreface.substr(0, n)) {
    return 100;
  }
  // A capture that began after the preface: accept a run of plausible
  // frames that opens with the client's HEADERS on an odd stream.
  FrameHeader first = ReadFrameHeader(p);
  if (p.size() < kFrameHeader || first.type != kHeaders ||
      first.stream % 2 == 0 || !PlausibleFrame(first)) {
    return 0;
  }
  size_t off = 0;
  while (off + kFrameHeader <= p.size()) {
    FrameHeader h = ReadFrameHeader(p.subspan(off));
    if (!PlausibleFrame(h)) {
      return 0;
    }
    off += kFrameHeader + h.length;
  }
  return 40;
}

}  // namespace

std::unique_ptr<StreamDecoder> MakeHttp2Decoder(EventSink& sink,
                                                int64_t upgraded_token,
                                                ReturnAt return_at) {
  return std::make_unique<Http2Decoder>(sink, upgraded_token, return_at);
}

// The same decoder with the return at the frame carrying END_STREAM (the
// response complete), chosen by name: --decode tcp/PORT=http2-end.
DecoderInfo Http2EndStreamDecoderInfo() {
  DecoderInfo d = Http2DecoderInfo();
  d.name = "http2-end";
  d.tcp_ports = {};
  d.probe_stream = nullptr;
  d.make_stream = [](EventSink& sink) -> std::unique_ptr<StreamDecoder> {
    return MakeHttp2Decoder(sink, -1, ReturnAt::kEndStream);
  };
  return d;
}

DecoderInfo Http2DecoderInfo() {
  return DecoderInfo{
      .name = "http2",
      .tcp_ports = {50051},
      .udp_ports = {},
      .probe_stream = &ProbeHttp2,
      .probe_datagram = nullptr,
      .make_stream = [](EventSink& sink) -> std::unique_ptr<StreamDecoder> {
        return MakeHttp2Decoder(sink);
      },
      .make_datagram = nullptr,
  };
}

}  // namespace bbprof::capture
