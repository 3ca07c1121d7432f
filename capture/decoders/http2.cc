// HTTP/2 in cleartext (RFC 9113), gRPC included. The client's HEADERS frame
// opening a new stream is a call (token: the stream id). Its return is, by
// default, the server's first HEADERS frame on that stream: the first packet
// of the response, as section 6.2 defines a return and as HTTP/1.x does; the
// "http2-end" variant returns at the server's frame carrying END_STREAM (the
// response complete: for a server-streaming gRPC call, the stream's end).
// docs/decoders.md explains the choice. Frame headers are read, and the
// client's header blocks (HPACK, capture/decoders/hpack.h) for each call's
// op: `grpc:/package.Service/Method` when its content-type is gRPC, else
// `http:METHOD:/route-template`; the server's SETTINGS only for the header
// table size. Other payloads (DATA, padding) are skipped.
#include <algorithm>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "base/byte_cursor.h"
#include "capture/decoders/decoders.h"
#include "capture/decoders/hpack.h"
#include "capture/decoders/op_names.h"
#include "capture/decoders/stream_buffer.h"
#include "capture/decoders/truth_header.h"

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
constexpr uint8_t kEndHeaders = 0x4;
constexpr uint8_t kPadded = 0x8;
constexpr uint8_t kPriorityFlag = 0x20;
// Header blocks larger than this are not decoded (the call keeps no op, and
// the connection's HPACK state is lost): real request headers are a few
// hundred bytes; this bounds what one connection can make us hold.
constexpr size_t kMaxHeaderBlock = size_t{256} * 1024;

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
    if (dir == Direction::kToServer) LoseHeaders();
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
    std::string pathid = {};  // from --truth-header, for call and return
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
      std::span<const std::byte> payload;
      if (NeedsPayload(dir, h)) {
        if (h.length > kMaxHeaderBlock) {
          LoseHeaders();
        } else if (d.size() < kFrameHeader + h.length) {
          return;  // wait for the whole frame
        } else {
          payload = d.subspan(kFrameHeader, h.length);
        }
      }
      OnFrame(dir, s.buf.TsAt(0), h, payload);
      s.buf.Skip(kFrameHeader + uint64_t{h.length});
    }
  }

  // Frames whose payload is read: the client's header blocks (every one,
  // to keep the HPACK table in step) and the server's SETTINGS.
  bool NeedsPayload(Direction dir, const FrameHeader& h) const {
    if (dir == Direction::kToServer) {
      return (h.type == kHeaders || h.type == kContinuation) &&
             !hpack_.broken();
    }
    return h.type == kSettings && (h.flags & 0x1) == 0;
  }

  // Header blocks were lost (a hole, a block too large): the dynamic table
  // is unknown from here on, so calls get no op rather than a wrong one.
  void LoseHeaders() {
    if (!hpack_.broken()) sink_.Count("http2_hpack_lost");
    hpack_.Break();
  }

  // A HEADERS frame's block fragment: without padding and priority fields.
  static std::span<const std::byte> Fragment(const FrameHeader& h,
                                             std::span<const std::byte> p) {
    size_t pad = 0;
    size_t skip = 0;
    if ((h.flags & kPadded) != 0 && !p.empty()) {
      pad = static_cast<uint8_t>(p[0]);
      skip = 1;
    }
    if ((h.flags & kPriorityFlag) != 0) skip += 5;
    if (skip + pad > p.size()) return {};
    return p.subspan(skip, p.size() - skip - pad);
  }

  // The client's HEADERS or CONTINUATION: gathers the block; when it ends,
  // decodes it and, for a new stream, emits the call with its op.
  void ClientHeaderBlock(const FrameHeader& h,
                         std::span<const std::byte> payload) {
    if (payload.empty() && h.length > 0) return;  // not read (HPACK lost)
    auto fragment = h.type == kHeaders ? Fragment(h, payload) : payload;
    if (block_.size() + fragment.size() > kMaxHeaderBlock) {
      LoseHeaders();
      block_.clear();
      return;
    }
    block_.insert(block_.end(), fragment.begin(), fragment.end());
  }

  // Also collects the block's request id (--truth-header) in scan_.
  std::string DecodeBlockOp() {
    std::string method, path, content_type;
    scan_.Reset(sink_.truth_headers());
    bool ok = hpack_.Decode(block_,
                            [&](std::string_view name, std::string_view value) {
                              if (name == ":method") method = value;
                              if (name == ":path") path = value;
                              if (name == "content-type") content_type = value;
                              scan_.Header(name, value);
                            });
    block_.clear();
    if (!ok) {
      scan_.Reset(nullptr);
      sink_.Count("http2_hpack_lost");
      return {};
    }
    if (content_type.starts_with("application/grpc")) return GrpcOp(path);
    return HttpOp(method, path);
  }

  // The server's SETTINGS: SETTINGS_HEADER_TABLE_SIZE (0x1) bounds the
  // client encoder's dynamic table (RFC 7541 section 4.2).
  void ServerSettings(std::span<const std::byte> payload) {
    ByteCursor c(payload);
    while (c.remaining() >= 6) {
      uint16_t id = c.U16();
      uint32_t value = c.U32();
      if (id == 0x1) hpack_.SetMaxTableSize(value);
    }
  }

  // Ends a header block the client began on `stream_`: emits the pending
  // call (if the block opened a stream) with the op the block names.
  void EndClientBlock() {
    scan_.Reset(nullptr);
    std::string op = hpack_.broken() ? std::string() : DecodeBlockOp();
    if (scan_.id_too_long()) sink_.Count("http2_request_id_too_long");
    block_.clear();
    if (block_call_) {
      auto it = streams_.find(block_stream_);
      if (it != streams_.end()) it->second.pathid = scan_.pathid();
      sink_.Emit({trace::Kind::kCall, Direction::kToServer, block_ts_,
                  Token(block_stream_), true, op, scan_.pathid()});
    }
    in_block_ = false;
    block_call_ = false;
  }

  void OnFrame(Direction dir, trace::TimeNs ts, const FrameHeader& h,
               std::span<const std::byte> payload) {
    if (in_block_ && dir == Direction::kToServer && h.type != kContinuation) {
      // A header block must continue without interleaving (RFC 9113 6.10).
      LoseHeaders();
      EndClientBlock();
    }
    if (dir == Direction::kToClient && h.type == kSettings) {
      ServerSettings(payload);
    }
    switch (h.type) {
      case kHeaders:
      case kData: {
        if (h.stream == 0) {
          sink_.Count("http2_bad_stream");
          return;
        }
        auto it = streams_.find(h.stream);
        if (dir == Direction::kToServer) {
          if (h.type != kHeaders) return;
          bool new_call = it == streams_.end();
          if (new_call && streams_.size() >= kMaxStreams) {
            sink_.Count("http2_too_many_streams");
            new_call = false;
          } else if (new_call) {
            streams_[h.stream] = Stream{true, false};
          }
          // Every client block is decoded (trailers too): the HPACK table
          // must see each one.
          in_block_ = true;
          block_call_ = new_call;
          block_stream_ = h.stream;
          block_ts_ = ts;
          ClientHeaderBlock(h, payload);
          if ((h.flags & kEndHeaders) != 0) EndClientBlock();
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
          sink_.Emit({trace::Kind::kReturn, dir, ts, Token(h.stream), true,
                      {}, it->second.pathid});
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
          sink_.Emit({trace::Kind::kReturn, dir, ts, Token(h.stream), true,
                      {}, it->second.pathid});
        }
        streams_.erase(it);
        return;
      }
      case kGoaway:
        sink_.Count("http2_goaway");
        return;
      case kContinuation:
        if (dir == Direction::kToServer && in_block_ &&
            h.stream == block_stream_) {
          ClientHeaderBlock(h, payload);
          if ((h.flags & kEndHeaders) != 0) EndClientBlock();
        }
        return;
      case kPushPromise:
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
  // The client's HPACK state, and the header block being gathered.
  HpackDecoder hpack_;
  std::vector<std::byte> block_;
  bool in_block_ = false;
  TruthHeaderScan scan_;  // the request id of the block being decoded
  bool block_call_ = false;  // the block opens a stream: a call to emit
  uint32_t block_stream_ = 0;
  trace::TimeNs block_ts_ = 0;
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
