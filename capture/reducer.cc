#include "capture/reducer.h"

#include <algorithm>
#include <charconv>
#include <cstring>

#include "capture/ip.h"
#include "capture/link.h"
#include "capture/tcp_reassembly.h"
#include "capture/transport.h"
#include "trace/timestamp.h"

namespace bbprof::capture {

namespace {
// Calls per flow whose op waits for their return (capture/op_table.h).
constexpr size_t kMaxWaitingOps = 4096;
}  // namespace

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
  const TruthHeaders* truth_headers() const override;
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
  uint64_t hash = 0;  // FlowKeyHash of key
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
  // TCP only: most flows on a busy link are one-exchange UDP (DNS), so the
  // stream state is allocated only where there is a stream.
  struct TcpState {
    explicit TcpState(size_t max_buffered)
        : reassembler{TcpReassembler(max_buffered),
                      TcpReassembler(max_buffered)} {}
    TcpReassembler reassembler[2];
    DirectionListener listener[2];
    uint64_t pending_gap[2] = {0, 0};  // holes before a decoder was chosen
    bool fin[2] = {false, false};
    bool delivered[2] = {false, false};
  };
  std::unique_ptr<TcpState> tcp;
  // The op of each call waiting for its return, by token: a RET carries its
  // CALL's op. Few wait at once on a flow; a vector beats a map here.
  std::vector<std::pair<uint32_t, uint32_t>> call_ops;
  // Flows of one transport in order of last activity (intrusive list), so
  // idle ones are found from the front without scanning the table.
  Flow* older = nullptr;
  Flow* newer = nullptr;

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
      if (tcp->pending_gap[i] > 0) {
        stream->OnGap(static_cast<Direction>(i), tcp->pending_gap[i]);
        tcp->pending_gap[i] = 0;
      }
    }
  }
};

void FlowSink::Emit(const AppEvent& event) { reducer->EmitEvent(*flow, event); }
const TruthHeaders* FlowSink::truth_headers() const {
  return &reducer->options_.truth_headers;
}

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
    flow->tcp->pending_gap[static_cast<int>(dir)] += length;
  }
}

}  // namespace

size_t Reducer::FlowKeyHash::operator()(const FlowKey& k) const {
  // Word-wise multiply-xorshift mixing: the table is probed once per packet.
  auto word = [](const uint8_t* p) {
    uint64_t w;
    std::memcpy(&w, p, sizeof w);
    return w;
  };
  uint64_t h = (uint64_t{k.pa} << 32 | uint64_t{k.pb} << 16 | k.proto) ^
               0x9E3779B97F4A7C15ull;
  for (uint64_t w : {word(k.a.data()), word(k.a.data() + 8), word(k.b.data()),
                     word(k.b.data() + 8)}) {
    h = (h ^ w) * 0xBF58476D1CE4E5B9ull;
    h ^= h >> 31;
  }
  return static_cast<size_t>(h);
}

void Reducer::ActivityList::PushNewest(Flow* f) {
  f->older = newest;
  f->newer = nullptr;
  if (newest != nullptr) newest->newer = f;
  newest = f;
  if (oldest == nullptr) oldest = f;
}

void Reducer::ActivityList::Remove(Flow* f) {
  (f->older != nullptr ? f->older->newer : oldest) = f->newer;
  (f->newer != nullptr ? f->newer->older : newest) = f->older;
  f->older = f->newer = nullptr;
}

void Reducer::Touch(Flow& flow, trace::TimeNs ts) {
  flow.last_seen = std::max(flow.last_seen, ts);
  ActivityList& list = Activity(flow.transport);
  if (list.newest != &flow) {
    list.Remove(&flow);
    list.PushNewest(&flow);
  }
}

size_t Reducer::NodeKeyHash::operator()(
    const std::pair<Endpoint, Role>& k) const {
  FlowKey as_key{};
  as_key.a = k.first.addr;
  as_key.pa = k.first.port;
  as_key.proto =
      static_cast<uint8_t>(k.first.v6 << 2 | static_cast<uint8_t>(k.second));
  return FlowKeyHash()(as_key);
}

Reducer::FlowIndex::~FlowIndex() {
  for (Slot& s : slots_) delete s.flow;
}

Reducer::Flow* Reducer::FlowIndex::Find(const FlowKey& key,
                                        uint64_t hash) const {
  const size_t mask = slots_.size() - 1;
  for (size_t i = hash & mask;; i = (i + 1) & mask) {
    const Slot& s = slots_[i];
    if (s.flow == nullptr) return nullptr;
    if (s.hash == hash && s.flow->key == key) return s.flow;
  }
}

void Reducer::FlowIndex::Insert(std::unique_ptr<Flow> flow) {
  if (2 * (size_ + 1) > slots_.size()) Grow();
  const size_t mask = slots_.size() - 1;
  size_t i = flow->hash & mask;
  while (slots_[i].flow != nullptr) i = (i + 1) & mask;
  slots_[i].hash = flow->hash;
  slots_[i].flow = flow.release();
  ++size_;
}

void Reducer::FlowIndex::Erase(Flow* flow) {
  const size_t mask = slots_.size() - 1;
  size_t i = flow->hash & mask;
  while (slots_[i].flow != flow) i = (i + 1) & mask;
  delete flow;
  --size_;
  // Backward-shift deletion (no tombstones): pull later members of the probe
  // run into the hole when their home slot does not lie between the hole
  // and them, so every lookup still stops at the first empty slot.
  for (size_t j = (i + 1) & mask;; j = (j + 1) & mask) {
    if (slots_[j].flow == nullptr) break;
    size_t home = slots_[j].hash & mask;
    bool stays = i <= j ? (i < home && home <= j) : (i < home || home <= j);
    if (!stays) {
      slots_[i] = slots_[j];
      i = j;
    }
  }
  slots_[i] = Slot{};
}

void Reducer::FlowIndex::Grow() {
  std::vector<Slot> old(slots_.size() * 2);
  old.swap(slots_);
  const size_t mask = slots_.size() - 1;
  for (const Slot& s : old) {
    if (s.flow == nullptr) continue;
    size_t i = s.hash & mask;
    while (slots_[i].flow != nullptr) i = (i + 1) & mask;
    slots_[i] = s;
  }
}

Reducer::Flow* Reducer::FindFlow(const FlowKey& key, uint64_t hash) {
  if (last_flow_ != nullptr && last_flow_->hash == hash &&
      last_flow_->key == key) {
    return last_flow_;
  }
  Flow* f = flows_.Find(key, hash);
  if (f != nullptr) last_flow_ = f;
  return f;
}

Reducer::Reducer(ReducerOptions options, trace::NodeTable* nodes,
                 ReorderBuffer::Output out)
    : options_(std::move(options)),
      namer_(options_.granularity, options_.names),
      nodes_(nodes),
      ops_(options_.max_ops_per_server),
      reorder_(options_.reorder_window, std::move(out), &ops_) {}

Reducer::~Reducer() = default;

void Reducer::Count(std::string_view reason, uint64_t n) {
  auto it = counters_.find(reason);
  if (it == counters_.end()) {
    counters_.emplace(std::string(reason), n);
  } else {
    it->second += n;
  }
}

trace::NodeId Reducer::NodeFor(const Endpoint& e, Role role) {
  Endpoint key = e;
  // A client's ephemeral port never names it.
  if (role == Role::kClient) key.port = 0;
  auto it = node_cache_.find({key, role});
  if (it != node_cache_.end()) return it->second;
  trace::NodeId id = nodes_->Intern(namer_.Name(
      e, role != Role::kClient, role == Role::kServerFromOwnAddress));
  if (nodes_->IsOverflow(id)) {
    // Past --max-nodes: not cached either, so that days of new client
    // addresses grow neither table (input is not trusted to be small).
    if (!warned_nodes_ && options_.on_limit) {
      options_.on_limit("more than " + std::to_string(nodes_->limit()) +
                        " distinct node names: later ones are written as " +
                        std::string(trace::NodeTable::kOverflowName) +
                        " (counted as node_names_folded; raise --max-nodes)");
    }
    warned_nodes_ = true;
    return id;
  }
  node_cache_.emplace(std::make_pair(key, role), id);
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

void Reducer::EvictOldestFlow() {
  // The least recently active flow goes, whichever its transport: the one
  // the idle timeout would have ended first, so under a flood of
  // connections that never close the table keeps the live ones. A
  // connection idle the longest is also the least likely to carry another
  // call; its decoder is flushed as at an idle timeout, so calls it decoded
  // are written, and one that answers later is counted as a return without
  // its call, never paired wrongly (callids carry the flow's serial).
  Flow* tcp = tcp_activity_.oldest;
  Flow* udp = udp_activity_.oldest;
  Flow* victim =
      udp == nullptr || (tcp != nullptr && tcp->last_seen <= udp->last_seen)
          ? tcp
          : udp;
  if (victim == nullptr) return;
  if (flows_evicted_++ == 0 && options_.on_limit) {
    options_.on_limit("more than " + std::to_string(options_.max_flows) +
                      " flows open at once: ending the least recently active "
                      "(counted as flows_evicted; raise --max-flows)");
  }
  EndFlow(*victim, now_);
}

Reducer::Flow* Reducer::NewFlow(const FlowKey& key, uint64_t hash, Transport t,
                                const Endpoint& client, const Endpoint& server,
                                trace::TimeNs ts) {
  if (options_.max_flows > 0) {
    while (flows_.size() >= options_.max_flows) EvictOldestFlow();
  }
  auto flow = std::make_unique<Flow>();
  Flow* f = flow.get();
  f->owner = this;
  f->key = key;
  f->hash = hash;
  f->serial = next_serial_++;
  f->transport = t;
  f->client = client;
  f->server = server;
  f->client_node = NodeFor(client, Role::kClient);
  const bool own_address = client.v6 == server.v6 && client.addr == server.addr;
  f->server_node = NodeFor(
      server, own_address ? Role::kServerFromOwnAddress : Role::kServer);
  f->last_seen = ts;
  f->sink.reducer = this;
  f->sink.flow = f;
  f->decoder = DecoderForPort(t, server.port);
  if (t == Transport::kTcp) {
    f->tcp = std::make_unique<Flow::TcpState>(options_.max_stream_buffer);
    for (int i = 0; i < 2; ++i) {
      f->tcp->listener[i].flow = f;
      f->tcp->listener[i].dir = static_cast<Direction>(i);
    }
    ++tcp_flows_;
  } else {
    ++udp_flows_;
  }
  Activity(t).PushNewest(f);
  flows_.Insert(std::move(flow));
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
      r.op = CallOp(flow, event);
    }
  }
  switch (r.kind) {
    case trace::Kind::kCall: ++calls_; break;
    case trace::Kind::kReturn: ++returns_; break;
    case trace::Kind::kMessage: ++messages_; break;
  }
  if (!event.pathid.empty()) ++truth_records_;
  reorder_.Push(r, event.pathid);
}

uint32_t Reducer::CallOp(Flow& flow, const AppEvent& event) {
  auto& waiting = flow.call_ops;
  auto it = std::find_if(waiting.begin(), waiting.end(),
                         [&](const auto& e) { return e.first == event.token; });
  if (event.kind == trace::Kind::kReturn) {
    if (it == waiting.end()) return 0;
    uint32_t op = it->second;
    waiting.erase(it);
    return op;
  }
  uint32_t op = ops_.Intern(flow.server_node, event.op);
  if (it != waiting.end()) {  // a retransmitted call (same RPC xid)
    it->second = op;
  } else if (op != 0) {
    // Calls never answered (lost replies) must not pile up.
    if (waiting.size() >= kMaxWaitingOps) waiting.erase(waiting.begin());
    waiting.emplace_back(event.token, op);
  }
  return op;
}

void Reducer::EndFlow(Flow& flow, trace::TimeNs ts) {
  if (flow.tcp) {
    for (int i = 0; i < 2; ++i) {
      TcpReassembler& r = flow.tcp->reassembler[i];
      r.Flush(flow.tcp->listener[i]);
      retransmitted_bytes_ += r.stats().retransmitted_bytes;
      gap_bytes_ += r.stats().gap_bytes;
    }
    if (flow.stream) flow.stream->OnEnd(ts);
    waiting_.erase(&flow);
  }
  Activity(flow.transport).Remove(&flow);
  if (last_flow_ == &flow) last_flow_ = nullptr;
  flows_.Erase(&flow);  // destroys `flow`
}

void Reducer::Sweep(trace::TimeNs now) {
  // A hole older than half the reorder window will not be filled in time
  // for its records to be written in order: declare it now.
  trace::TimeNs hole_deadline = now - options_.reorder_window / 2;
  for (auto it = waiting_.begin(); it != waiting_.end();) {
    Flow* f = *it;
    bool still_waiting = false;
    for (int i = 0; i < 2; ++i) {
      TcpReassembler& r = f->tcp->reassembler[i];
      trace::TimeNs oldest = r.oldest_pending_ts();
      if (r.buffered() > 0 && oldest < hole_deadline) {
        r.Flush(f->tcp->listener[i]);
      }
      still_waiting |= r.buffered() > 0;
    }
    it = still_waiting ? std::next(it) : waiting_.erase(it);
  }
  for (Transport t : {Transport::kTcp, Transport::kUdp}) {
    trace::TimeNs timeout = t == Transport::kTcp ? options_.tcp_idle_timeout
                                                 : options_.udp_idle_timeout;
    ActivityList& list = Activity(t);
    while (list.oldest != nullptr && list.oldest->last_seen < now - timeout) {
      ++idle_ended_;
      EndFlow(*list.oldest, now);
    }
  }
  fragments_.Expire(now);
}

Status Reducer::AddFrame(uint32_t link_type, trace::TimeNs ts,
                         std::span<const std::byte> frame,
                         uint32_t wire_length) {
  ++packets_;
  bytes_ += std::max<uint64_t>(wire_length, frame.size());
  // The one range rule of trace/timestamp.h: a frame stamped outside it
  // (a forged pcapng, a clock gone wild) is counted, not decoded, so every
  // time the flow table and the outputs see is valid.
  if (!trace::InTimeRange(ts)) [[unlikely]] {
    Count("timestamp_out_of_range");
    return Status::Ok();
  }
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
  const uint64_t hash = FlowKeyHash()(key);
  bool syn = (tcp.flags & kTcpSyn) != 0;
  bool ack = (tcp.flags & kTcpAck) != 0;
  Flow* flow = FindFlow(key, hash);
  if (flow != nullptr && syn && !ack && flow->client == src &&
      (flow->tcp->delivered[0] || flow->tcp->delivered[1] ||
       flow->tcp->fin[0] || flow->tcp->fin[1])) {
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
      ++tcp_midstream_;
      bool dst_known = DecoderForPort(Transport::kTcp, dst.port) != nullptr;
      bool src_known = DecoderForPort(Transport::kTcp, src.port) != nullptr;
      if (dst_known != src_known) {
        src_is_client = dst_known;
      } else {
        src_is_client = dst.port <= src.port;
      }
    }
    flow = NewFlow(key, hash, Transport::kTcp, src_is_client ? src : dst,
                   src_is_client ? dst : src, ts);
  }
  Touch(*flow, ts);
  Flow::TcpState& tcp_state = *flow->tcp;
  int d = flow->client == src ? 0 : 1;
  TcpReassembler& r = tcp_state.reassembler[d];
  uint32_t seq = tcp.seq;
  if (syn) {
    if (!r.started()) r.Start(seq + 1);
    seq += 1;  // data on a SYN (TCP Fast Open) follows the SYN's number
  }
  if (!tcp.payload.empty() || missing > 0) {
    tcp_state.delivered[d] = true;
    r.Add(seq, ts, tcp.payload, tcp_state.listener[d], missing);
    if (r.buffered() > 0) waiting_.insert(flow);
  }
  if ((tcp.flags & kTcpFin) != 0) tcp_state.fin[d] = true;
  if ((tcp.flags & kTcpRst) != 0 || (tcp_state.fin[0] && tcp_state.fin[1])) {
    EndFlow(*flow, ts);
  }
}

void Reducer::HandleUdp(const Endpoint& src, const Endpoint& dst,
                        trace::TimeNs ts, std::span<const std::byte> payload) {
  FlowKey key = MakeKey(17, src, dst);
  const uint64_t hash = FlowKeyHash()(key);
  Flow* flow = FindFlow(key, hash);
  if (flow == nullptr) {
    // The side with a decoder's port is the server; else the first sender
    // is the client.
    bool src_known = DecoderForPort(Transport::kUdp, src.port) != nullptr;
    bool dst_known = DecoderForPort(Transport::kUdp, dst.port) != nullptr;
    bool src_is_client = !(src_known && !dst_known);
    flow = NewFlow(key, hash, Transport::kUdp, src_is_client ? src : dst,
                   src_is_client ? dst : src, ts);
  }
  Touch(*flow, ts);
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
  while (tcp_activity_.oldest != nullptr) EndFlow(*tcp_activity_.oldest, now_);
  while (udp_activity_.oldest != nullptr) EndFlow(*udp_activity_.oldest, now_);
  return reorder_.Flush();
}

std::map<std::string, uint64_t, std::less<>> Reducer::counters() const {
  std::map<std::string, uint64_t, std::less<>> all = counters_;
  all["packets"] = packets_;
  all["bytes"] = bytes_;
  all["records_call"] = calls_;
  all["records_ret"] = returns_;
  all["records_msg"] = messages_;
  if (!options_.truth_headers.empty()) {
    all["records_with_pathid"] = truth_records_;
  }
  uint64_t retrans = retransmitted_bytes_, gaps = gap_bytes_;
  for (const Flow* flow = tcp_activity_.oldest; flow != nullptr;
       flow = flow->newer) {
    for (const TcpReassembler& r : flow->tcp->reassembler) {
      retrans += r.stats().retransmitted_bytes;
      gaps += r.stats().gap_bytes;
    }
  }
  all["tcp_flows"] = tcp_flows_;
  all["udp_flows"] = udp_flows_;
  all["tcp_flows_midstream"] = tcp_midstream_;
  all["flows_ended_idle"] = idle_ended_;
  all["flows_evicted"] = flows_evicted_;
  all["node_names_folded"] = nodes_->folded();
  all["tcp_retransmitted_bytes"] = retrans;
  all["tcp_gap_bytes"] = gaps;
  all["records_late"] = reorder_.late_records();
  const FragmentStats& fs = fragments_.stats();
  all["ip_fragments_reassembled"] = fs.reassembled;
  all["ip_fragments_timed_out"] = fs.timed_out;
  all["ip_fragments_evicted"] = fs.evicted;
  all["live_flows"] = flows_.size();
  if (ops_.capped() > 0) all["ops_capped"] = ops_.capped();
  return all;
}

}  // namespace bbprof::capture
