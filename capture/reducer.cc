#include "capture/reducer.h"

#include <algorithm>
#include <charconv>

#include "capture/ip.h"
#include "capture/link.h"
#include "capture/tcp_reassembly.h"
#include "capture/transport.h"

namespace bbprof::capture {

std::string ParseForcedDecoder(std::string_view text, ForcedDecoder* out) {
  size_t slash = text.find('/');
  size_t eq = text.find('=');
  if (slash == std::string_view::npos || eq == std::string_view::npos ||
      eq < slash) {
    return "expected PROTO/PORT=DECODER (e.g. tcp/8080=http), not '" +
           std::string(text) + "'";
  }
  std::string_view proto = text.substr(0, slash);
  std::string_view port = text.substr(slash + 1, eq - slash - 1);
  std::string_view name = text.substr(eq + 1);
  ForcedDecoder f;
  if (proto == "tcp") {
    f.transport = Transport::kTcp;
  } else if (proto == "udp") {
    f.transport = Transport::kUdp;
  } else {
    return "'" + std::string(proto) + "' is not tcp or udp";
  }
  unsigned p = 0;
  auto [end, ec] = std::from_chars(port.data(), port.data() + port.size(), p);
  if (ec != std::errc() || end != port.data() + port.size() || port.empty() ||
      p == 0 || p > 65535) {
    return "'" + std::string(port) + "' is not a port number (1-65535)";
  }
  f.port = static_cast<uint16_t>(p);
  f.decoder = FindDecoder(name);
  if (f.decoder == nullptr) {
    std::string known;
    for (const DecoderInfo& d : AllDecoders()) {
      known += known.empty() ? "" : ", ";
      known += d.name;
    }
    return "unknown decoder '" + std::string(name) + "' (known: " + known + ")";
  }
  if ((f.transport == Transport::kTcp && f.decoder->make_stream == nullptr) ||
      (f.transport == Transport::kUdp && f.decoder->make_datagram == nullptr)) {
    return "decoder '" + std::string(name) + "' does not decode " +
           std::string(proto);
  }
  *out = f;
  return {};
}

// Decoder events of one flow go back to the reducer with the flow attached.
struct FlowSink final : EventSink {
  Reducer* reducer = nullptr;
  Reducer::Flow* flow = nullptr;
  void Emit(const AppEvent& event) override;
  void Count(std::string_view reason, uint64_t n) override {
    reducer->Count(reason, n);
  }
};

namespace {

// One direction of a TCP flow, from the reassembler to the decoder.
struct DirectionListener final : StreamListener {
  Reducer::Flow* flow = nullptr;
  Direction dir = Direction::kToServer;
  void OnBytes(trace::TimeNs ts, std::span<const std::byte> data) override;
  void OnHole(uint64_t length) override;
};

}  // namespace

struct Reducer::Flow {
  Reducer* owner = nullptr;
  FlowKey key{};
  uint64_t serial = 0;
  Transport transport = Transport::kTcp;
  Endpoint client, server;
  trace::NodeId client_node = 0, server_node = 0;
  trace::TimeNs last_seen = 0;
  FlowSink sink;
  const DecoderInfo* decoder = nullptr;  // null until chosen
  bool undecodable = false;              // UDP: nothing recognised it
  std::unique_ptr<StreamDecoder> stream;
  std::unique_ptr<DatagramDecoder> datagram;
  TcpReassembler reassembler[2];
  DirectionListener listener[2];
  uint64_t pending_gap[2] = {0, 0};  // holes before a decoder was chosen
  bool fin[2] = {false, false};
  bool delivered[2] = {false, false};

  explicit Flow(size_t max_buffered)
      : reassembler{TcpReassembler(max_buffered), TcpReassembler(max_buffered)} {}

  // TCP: the decoder is chosen by the first bytes anybody sends, if no
  // forced choice or port chose it when the flow began.
  void ChooseStreamDecoder(Direction dir, std::span<const std::byte> first) {
    if (decoder == nullptr) {
      int best = 0;
      if (dir == Direction::kToServer) {
        for (const DecoderInfo& d : AllDecoders()) {
          if (d.probe_stream == nullptr || d.make_stream == nullptr) continue;
          int score = d.probe_stream(first);
          if (score > best) {
            best = score;
            decoder = &d;
          }
        }
      }
      // The server spoke first (a banner, a greeting) or nothing matched:
      // the generic request/response rule.
      if (decoder == nullptr) decoder = FindDecoder("generic");
      owner->Count(std::string("tcp_flows_probed_") + decoder->name);
    }
    stream = decoder->make_stream(sink);
    for (int i = 0; i < 2; ++i) {
      if (pending_gap[i] > 0) {
        stream->OnGap(static_cast<Direction>(i), pending_gap[i]);
        pending_gap[i] = 0;
      }
    }
  }
};

void FlowSink::Emit(const AppEvent& event) { reducer->EmitEvent(*flow, event); }

namespace {

void DirectionListener::OnBytes(trace::TimeNs ts,
                                std::span<const std::byte> data) {
  if (data.empty()) return;
  if (!flow->stream) flow->ChooseStreamDecoder(dir, data);
  flow->stream->OnData(dir, ts, data);
}

void DirectionListener::OnHole(uint64_t length) {
  if (flow->stream) {
    flow->stream->OnGap(dir, length);
  } else {
    flow->pending_gap[static_cast<int>(dir)] += length;
  }
}

}  // namespace

size_t Reducer::FlowKeyHash::operator()(const FlowKey& k) const {
  // FNV-1a over the key's bytes; the key has no padding worth hashing.
  uint64_t h = 1469598103934665603ull;
  auto mix = [&h](const uint8_t* p, size_t n) {
    for (size_t i = 0; i < n; ++i) {
      h ^= p[i];
      h *= 1099511628211ull;
    }
  };
  size_t n = k.v6 ? 16 : 4;
  mix(k.a.data(), n);
  mix(k.b.data(), n);
  uint8_t rest[5] = {k.proto, static_cast<uint8_t>(k.pa >> 8),
                     static_cast<uint8_t>(k.pa), static_cast<uint8_t>(k.pb >> 8),
                     static_cast<uint8_t>(k.pb)};
  mix(rest, sizeof rest);
  return static_cast<size_t>(h);
}

Reducer::Reducer(ReducerOptions options, trace::NodeTable* nodes,
                 ReorderBuffer::Output out)
    : options_(std::move(options)),
      namer_(options_.granularity, options_.names),
      nodes_(nodes),
      reorder_(options_.reorder_window, std::move(out)) {}

Reducer::~Reducer() = default;

void Reducer::Count(std::string_view reason, uint64_t n) {
  auto it = counters_.find(reason);
  if (it == counters_.end()) {
    counters_.emplace(std::string(reason), n);
  } else {
    it->second += n;
  }
}

trace::NodeId Reducer::NodeFor(const Endpoint& e, bool is_server) {
  Endpoint key = e;
  if (!is_server) key.port = 0;  // a client's ephemeral port never names it
  auto it = node_cache_.find({key, is_server});
  if (it != node_cache_.end()) return it->second;
  trace::NodeId id = nodes_->Intern(namer_.Name(e, is_server));
  node_cache_.emplace(std::make_pair(key, is_server), id);
  return id;
}

const DecoderInfo* Reducer::DecoderForPort(Transport t, uint16_t port) const {
  for (const ForcedDecoder& f : options_.forced) {
    if (f.transport == t && f.port == port) return f.decoder;
  }
  for (const DecoderInfo& d : AllDecoders()) {
    const std::vector<uint16_t>& ports =
        t == Transport::kTcp ? d.tcp_ports : d.udp_ports;
    if (std::find(ports.begin(), ports.end(), port) != ports.end()) return &d;
  }
  return nullptr;
}

Reducer::Flow* Reducer::NewFlow(const FlowKey& key, Transport t,
                                const Endpoint& client, const Endpoint& server,
                                trace::TimeNs ts) {
  auto flow = std::make_unique<Flow>(options_.max_stream_buffer);
  Flow* f = flow.get();
  f->owner = this;
  f->key = key;
  f->serial = next_serial_++;
  f->transport = t;
  f->client = client;
  f->server = server;
  f->client_node = NodeFor(client, false);
  f->server_node = NodeFor(server, true);
  f->last_seen = ts;
  f->sink.reducer = this;
  f->sink.flow = f;
  f->decoder = DecoderForPort(t, server.port);
  for (int i = 0; i < 2; ++i) {
    f->listener[i].flow = f;
    f->listener[i].dir = static_cast<Direction>(i);
  }
  Count(t == Transport::kTcp ? "tcp_flows" : "udp_flows");
  flows_[key] = std::move(flow);
  return f;
}

void Reducer::EmitEvent(Flow& flow, const AppEvent& event) {
  CapturedRecord r;
  r.ts = event.ts;
  bool to_server = event.dir == Direction::kToServer;
  r.sender = to_server ? flow.client_node : flow.server_node;
  r.receiver = to_server ? flow.server_node : flow.client_node;
  if (options_.messages) {
    r.kind = trace::Kind::kMessage;
  } else {
    r.kind = event.kind;
    if (event.has_token && event.kind != trace::Kind::kMessage) {
      r.has_callid = true;
      r.callid = (flow.serial << 32) | event.token;
    }
  }
  switch (r.kind) {
    case trace::Kind::kCall: ++calls_; break;
    case trace::Kind::kReturn: ++returns_; break;
    case trace::Kind::kMessage: ++messages_; break;
  }
  reorder_.Push(r);
}

void Reducer::EndFlow(Flow& flow, trace::TimeNs ts) {
  if (flow.transport == Transport::kTcp) {
    for (int i = 0; i < 2; ++i) {
      flow.reassembler[i].Flush(flow.listener[i]);
      retransmitted_bytes_ += flow.reassembler[i].stats().retransmitted_bytes;
      gap_bytes_ += flow.reassembler[i].stats().gap_bytes;
    }
    if (flow.stream) flow.stream->OnEnd(ts);
  }
  flows_.erase(flow.key);  // destroys `flow`
}

void Reducer::Sweep(trace::TimeNs now) {
  std::vector<Flow*> idle;
  trace::TimeNs hole_deadline = now - options_.reorder_window / 2;
  for (auto& [key, flow] : flows_) {
    trace::TimeNs timeout = flow->transport == Transport::kTcp
                                ? options_.tcp_idle_timeout
                                : options_.udp_idle_timeout;
    if (flow->last_seen < now - timeout) {
      idle.push_back(flow.get());
      continue;
    }
    if (flow->transport != Transport::kTcp) continue;
    // A hole older than half the reorder window will not be filled in
    // time for its records to be written in order: declare it now.
    for (int i = 0; i < 2; ++i) {
      trace::TimeNs oldest = flow->reassembler[i].oldest_pending_ts();
      if (oldest != 0 && oldest < hole_deadline) {
        flow->reassembler[i].Flush(flow->listener[i]);
      }
    }
  }
  for (Flow* f : idle) {
    Count("flows_ended_idle");
    EndFlow(*f, now);
  }
  fragments_.Expire(now);
}

Status Reducer::AddFrame(uint32_t link_type, trace::TimeNs ts,
                         std::span<const std::byte> frame,
                         uint32_t wire_length) {
  ++packets_;
  bytes_ += std::max<uint64_t>(wire_length, frame.size());
  if (ts > now_) now_ = ts;
  LinkResult link = ParseLink(link_type, frame);
  if (!link.ok) {
    Count(link.reason);
  } else {
    IpResult ip = ParseIp(link.proto, link.payload);
    if (!ip.ok) {
      Count(ip.reason);
    } else if (ip.protocol != 6 && ip.protocol != 17) {
      Count("not_tcp_or_udp");
    } else if (ip.is_fragment) {
      if (ip.truncated) {
        Count("truncated_fragment");
      } else {
        trace::TimeNs first_ts = ts;
        auto whole = fragments_.Add(ip, ts, &first_ts);
        if (whole) {
          TransportLayer(ip, first_ts, *whole, false,
                         static_cast<uint32_t>(whole->size()));
        }
      }
    } else {
      TransportLayer(ip, ts, ip.payload, ip.truncated,
                     ip.declared_payload_length);
    }
  }
  if (now_ >= next_sweep_) {
    Sweep(now_);
    next_sweep_ = now_ + std::max<trace::TimeNs>(options_.reorder_window / 4,
                                                 1'000'000);
  }
  if (Status s = reorder_.Release(now_); !s.ok()) return s;
  return Status::Ok();
}

void Reducer::TransportLayer(const IpResult& ip, trace::TimeNs ts,
                             std::span<const std::byte> payload,
                             bool truncated, uint32_t declared_length) {
  Endpoint src, dst;
  src.v6 = dst.v6 = ip.v6;
  src.addr = ip.src;
  dst.addr = ip.dst;
  if (ip.protocol == 6) {
    TcpHeader tcp = ParseTcp(payload);
    if (!tcp.ok) {
      Count(tcp.reason);
      return;
    }
    src.port = tcp.src_port;
    dst.port = tcp.dst_port;
    uint32_t missing = 0;
    if (truncated && declared_length > payload.size()) {
      missing = declared_length - static_cast<uint32_t>(payload.size());
      Count("tcp_segments_snapped");
    }
    HandleTcp(src, dst, ts, tcp, missing);
  } else {
    UdpHeader udp = ParseUdp(payload);
    if (!udp.ok) {
      Count(udp.reason);
      return;
    }
    if (udp.truncated || truncated) Count("udp_datagrams_snapped");
    src.port = udp.src_port;
    dst.port = udp.dst_port;
    HandleUdp(src, dst, ts, udp.payload);
  }
}

namespace {

Reducer::FlowKey MakeKey(uint8_t proto, const Endpoint& x, const Endpoint& y) {
  Reducer::FlowKey k{};
  k.proto = proto;
  k.v6 = x.v6;
  bool swap = std::tie(y.addr, y.port) < std::tie(x.addr, x.port);
  const Endpoint& lo = swap ? y : x;
  const Endpoint& hi = swap ? x : y;
  k.a = lo.addr;
  k.b = hi.addr;
  k.pa = lo.port;
  k.pb = hi.port;
  return k;
}

}  // namespace

void Reducer::HandleTcp(const Endpoint& src, const Endpoint& dst,
                        trace::TimeNs ts, const TcpHeader& tcp,
                        uint32_t missing) {
  FlowKey key = MakeKey(6, src, dst);
  bool syn = (tcp.flags & kTcpSyn) != 0;
  bool ack = (tcp.flags & kTcpAck) != 0;
  auto it = flows_.find(key);
  Flow* flow = it == flows_.end() ? nullptr : it->second.get();
  if (flow != nullptr && syn && !ack && flow->client == src &&
      (flow->delivered[0] || flow->delivered[1] || flow->fin[0] ||
       flow->fin[1])) {
    // The same four-tuple reused by a new connection.
    Count("tcp_flows_reused");
    EndFlow(*flow, ts);
    flow = nullptr;
  }
  if (flow == nullptr) {
    if (!syn && tcp.payload.empty() && missing == 0) {
      return;  // a bare ACK/FIN/RST of a connection we do not follow
    }
    bool src_is_client;
    if (syn) {
      src_is_client = !ack;
    } else {
      // Joined mid-stream: the side with a decoder's port is the server,
      // else the lower (non-ephemeral) port.
      Count("tcp_flows_midstream");
      bool dst_known = DecoderForPort(Transport::kTcp, dst.port) != nullptr;
      bool src_known = DecoderForPort(Transport::kTcp, src.port) != nullptr;
      if (dst_known != src_known) {
        src_is_client = dst_known;
      } else {
        src_is_client = dst.port <= src.port;
      }
    }
    flow = NewFlow(key, Transport::kTcp, src_is_client ? src : dst,
                   src_is_client ? dst : src, ts);
  }
  flow->last_seen = ts;
  int d = flow->client == src ? 0 : 1;
  TcpReassembler& r = flow->reassembler[d];
  uint32_t seq = tcp.seq;
  if (syn) {
    if (!r.started()) r.Start(seq + 1);
    seq += 1;  // data on a SYN (TCP Fast Open) follows the SYN's number
  }
  if (!tcp.payload.empty() || missing > 0) {
    flow->delivered[d] = true;
    r.Add(seq, ts, tcp.payload, flow->listener[d], missing);
  }
  if ((tcp.flags & kTcpFin) != 0) flow->fin[d] = true;
  if ((tcp.flags & kTcpRst) != 0 || (flow->fin[0] && flow->fin[1])) {
    EndFlow(*flow, ts);
  }
}

void Reducer::HandleUdp(const Endpoint& src, const Endpoint& dst,
                        trace::TimeNs ts, std::span<const std::byte> payload) {
  FlowKey key = MakeKey(17, src, dst);
  auto it = flows_.find(key);
  Flow* flow = it == flows_.end() ? nullptr : it->second.get();
  if (flow == nullptr) {
    // The side with a decoder's port is the server; else the first sender
    // is the client.
    bool src_known = DecoderForPort(Transport::kUdp, src.port) != nullptr;
    bool dst_known = DecoderForPort(Transport::kUdp, dst.port) != nullptr;
    bool src_is_client = !(src_known && !dst_known);
    flow = NewFlow(key, Transport::kUdp, src_is_client ? src : dst,
                   src_is_client ? dst : src, ts);
  }
  flow->last_seen = ts;
  Direction dir = flow->client == src ? Direction::kToServer
                                      : Direction::kToClient;
  if (options_.messages) {
    EmitEvent(*flow, AppEvent{trace::Kind::kMessage, dir, ts, 0, false});
    return;
  }
  if (!flow->datagram && !flow->undecodable) {
    if (flow->decoder == nullptr) {
      int best = 0;
      for (const DecoderInfo& d : AllDecoders()) {
        if (d.probe_datagram == nullptr || d.make_datagram == nullptr) continue;
        int score = d.probe_datagram(payload);
        if (score > best) {
          best = score;
          flow->decoder = &d;
        }
      }
    }
    if (flow->decoder == nullptr || flow->decoder->make_datagram == nullptr) {
      flow->undecodable = true;
    } else {
      flow->datagram = flow->decoder->make_datagram(flow->sink);
    }
  }
  if (flow->undecodable) {
    Count("udp_no_decoder");
    return;
  }
  flow->datagram->OnDatagram(dir, ts, payload);
}

Status Reducer::FlushRecords() { return reorder_.Flush(); }

Status Reducer::Finish() {
  while (!flows_.empty()) {
    EndFlow(*flows_.begin()->second, now_);
  }
  return reorder_.Flush();
}

std::map<std::string, uint64_t, std::less<>> Reducer::counters() const {
  std::map<std::string, uint64_t, std::less<>> all = counters_;
  all["packets"] = packets_;
  all["bytes"] = bytes_;
  all["records_call"] = calls_;
  all["records_ret"] = returns_;
  all["records_msg"] = messages_;
  uint64_t retrans = retransmitted_bytes_, gaps = gap_bytes_;
  for (const auto& [key, flow] : flows_) {
    for (const TcpReassembler& r : flow->reassembler) {
      retrans += r.stats().retransmitted_bytes;
      gaps += r.stats().gap_bytes;
    }
  }
  all["tcp_retransmitted_bytes"] = retrans;
  all["tcp_gap_bytes"] = gaps;
  all["records_late"] = reorder_.late_records();
  const FragmentStats& fs = fragments_.stats();
  all["ip_fragments_reassembled"] = fs.reassembled;
  all["ip_fragments_timed_out"] = fs.timed_out;
  all["ip_fragments_evicted"] = fs.evicted;
  all["live_flows"] = flows_.size();
  return all;
}

}  // namespace bbprof::capture
