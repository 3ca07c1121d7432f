// The packet core's stateful half: reduces captured frames to trace records
// (paper sections 6.1 and 6.2). Frames are peeled (link.h, ip.h,
// transport.h), IP fragments reassembled, packets grouped into flows, TCP
// streams put in order, and each flow's payload handed to the decoder chosen
// for it (a forced choice, else a well-known port, else a content probe,
// else the generic request/response rule). Decoder events become records:
// the flow knows which endpoint is the client, names both at the chosen
// granularity, and makes the callid (flow serial << 32 | the decoder's
// token) unique between the two nodes. Records leave through a reorder
// buffer in timestamp order.
//
// Nothing here touches libpcap (style.md: PcapPlusPlus keeps Packet++ free of
// it): callers feed frames, tests feed byte arrays.
#ifndef BBPROF_CAPTURE_REDUCER_H_
#define BBPROF_CAPTURE_REDUCER_H_

#include <cstdint>
#include <cstring>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <type_traits>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "base/status.h"
#include "capture/decoder.h"
#include "capture/decoders/truth_header.h"
#include "capture/ip_fragments.h"
#include "capture/naming.h"
#include "capture/op_table.h"
#include "capture/reorder_buffer.h"
#include "capture/transport.h"
#include "trace/node_table.h"

namespace bbprof::capture {

enum class Transport : uint8_t { kTcp = 6, kUdp = 17 };

// --decode tcp/8080=http: the user's choice of decoder for a server port.
struct ForcedDecoder {
  Transport transport = Transport::kTcp;
  uint16_t port = 0;
  const DecoderInfo* decoder = nullptr;
};
// Parses "tcp/8080=http" or "udp/5353=dns"; on failure returns what is wrong.
std::string ParseForcedDecoder(std::string_view text, ForcedDecoder* out);

struct ReducerOptions {
  Granularity granularity = Granularity::kHost;
  NameMap names;
  // Every UDP datagram and every decoded TCP message becomes a MSG record
  // without callid: input for the convolution algorithm (section 5.2).
  bool messages = false;
  std::vector<ForcedDecoder> forced;
  // How long records wait for stragglers (reassembly, out-of-order frames).
  trace::TimeNs reorder_window = 2'000'000'000;
  // Idle flows are ended (decoder flushed, memory freed) after these, in
  // capture time (the packets' timestamps, not the wall clock: a file read
  // at full speed expires what the live capture would have).
  trace::TimeNs tcp_idle_timeout = 300'000'000'000;
  trace::TimeNs udp_idle_timeout = 60'000'000'000;
  // Flows open at once (--max-flows). Connections that never close and keep
  // coming faster than the idle timeout ends them (a SYN flood, a scan, a
  // crafted capture) would otherwise grow the table without bound: past
  // this, the least recently active flow is ended, counted as
  // flows_evicted. 0: no limit.
  size_t max_flows = kDefaultMaxFlows;
  static constexpr size_t kDefaultMaxFlows = 500'000;
  // Called once, the first time a limit ends something early, with what
  // happened and the flag that raises the limit (the CLI warns on stderr).
  std::function<void(std::string_view)> on_limit;
  // Per direction of a TCP connection, bytes held behind a hole.
  size_t max_stream_buffer = 1u << 20;
  // Distinct operation names per (server node, protocol) before new ones
  // are recorded as `{other}` (capture/op_table.h).
  size_t max_ops_per_server = OpTable::kDefaultMaxPerServer;
  // --truth-header: request ids in these HTTP headers become pathids.
  TruthHeaders truth_headers;
};

class Reducer {
 public:
  Reducer(ReducerOptions options, trace::NodeTable* nodes,
          ReorderBuffer::Output out);
  ~Reducer();
  Reducer(const Reducer&) = delete;
  Reducer& operator=(const Reducer&) = delete;

  // One captured frame. `wire_length` is the frame's length on the wire
  // (>= frame.size() when the snap length cut it). Returns an error only
  // when writing the output fails; undecodable packets are counted.
  Status AddFrame(uint32_t link_type, trace::TimeNs ts,
                  std::span<const std::byte> frame, uint32_t wire_length);
  // Ends every flow and writes every record held back. Call once at the end.
  Status Finish();
  // Writes every record held back without ending flows (file rotation:
  // each file then holds what was captured before it closed).
  Status FlushRecords();

  // Counters by name: packets, flows, records by kind, and every reason a
  // packet or message could not be decoded (docs/capture.md lists them).
  std::map<std::string, uint64_t, std::less<>> counters() const;
  void Count(std::string_view reason, uint64_t n = 1);
  size_t live_flows() const { return flows_.size(); }
  // The names of the records' ops (valid for the reducer's life).
  const OpTable& ops() const { return ops_; }
  uint64_t packets() const { return packets_; }

  struct Flow;  // defined in reducer.cc
  struct FlowKey {
    uint8_t proto;
    bool v6;
    std::array<uint8_t, 16> a, b;  // a < b, or a == b and pa <= pb
    uint16_t pa, pb;
    // One inlined 38-byte comparison (the members have no padding), where
    // the defaulted operator calls memcmp per array: this runs per packet.
    bool operator==(const FlowKey& o) const {
      return std::memcmp(this, &o, sizeof(FlowKey)) == 0;
    }
  };
  static_assert(sizeof(FlowKey) == 38 &&
                std::has_unique_object_representations_v<FlowKey>);

 private:
  struct FlowKeyHash {
    size_t operator()(const FlowKey& k) const;
  };
  friend struct FlowSink;

  void TransportLayer(const IpResult& ip, trace::TimeNs ts,
                      std::span<const std::byte> payload, bool truncated,
                      uint32_t declared_length);
  void HandleTcp(const Endpoint& src, const Endpoint& dst, trace::TimeNs ts,
                 const TcpHeader& tcp, uint32_t missing);
  void HandleUdp(const Endpoint& src, const Endpoint& dst, trace::TimeNs ts,
                 std::span<const std::byte> payload);
  Flow* FindFlow(const FlowKey& key, uint64_t hash);
  Flow* NewFlow(const FlowKey& key, uint64_t hash, Transport t, const Endpoint& client,
                const Endpoint& server, trace::TimeNs ts);
  const DecoderInfo* DecoderForPort(Transport t, uint16_t port) const;
  void EndFlow(Flow& flow, trace::TimeNs ts);
  void Sweep(trace::TimeNs now);
  // Ends the least recently active flow to make room
  // (ReducerOptions::max_flows).
  void EvictOldestFlow();
  void EmitEvent(Flow& flow, const AppEvent& event);
  // A call's op index (interned), or a return's: its call's.
  uint32_t CallOp(Flow& flow, const AppEvent& event);
  // Flows of one transport from least to most recently active.
  struct ActivityList {
    Flow* oldest = nullptr;
    Flow* newest = nullptr;
    void PushNewest(Flow* f);
    void Remove(Flow* f);
  };
  ActivityList& Activity(Transport t) {
    return t == Transport::kTcp ? tcp_activity_ : udp_activity_;
  }
  void Touch(Flow& flow, trace::TimeNs ts);
  // A client's node, or a server's (kServer), or that of a server called
  // from its own address (kServerFromOwnAddress: Namer::Name).
  enum class Role : uint8_t { kClient, kServer, kServerFromOwnAddress };
  trace::NodeId NodeFor(const Endpoint& e, Role role);

  ReducerOptions options_;
  Namer namer_;
  trace::NodeTable* nodes_;
  OpTable ops_;  // before reorder_, which names records through it
  ReorderBuffer reorder_;
  FragmentReassembler fragments_;
  // The flow table, probed once per packet: open addressing with linear
  // probing over (hash, flow) slots, so a probe touches one slot and the flow
  // it points to, where std::unordered_map walks a chain of separately
  // allocated nodes (a cache miss each; the table holds every flow of the
  // last minute: for DNS, one per query). Owns the flows.
  class FlowIndex {
   public:
    FlowIndex() : slots_(1024) {}
    ~FlowIndex();
    FlowIndex(const FlowIndex&) = delete;
    FlowIndex& operator=(const FlowIndex&) = delete;
    Flow* Find(const FlowKey& key, uint64_t hash) const;
    void Insert(std::unique_ptr<Flow> flow);  // its key must be absent
    void Erase(Flow* flow);                   // destroys it
    size_t size() const { return size_; }

   private:
    struct Slot {
      uint64_t hash = 0;
      Flow* flow = nullptr;
    };
    void Grow();
    std::vector<Slot> slots_;  // a power of two, at most half full
    size_t size_ = 0;
  };
  FlowIndex flows_;
  struct NodeKeyHash {
    size_t operator()(const std::pair<Endpoint, Role>& k) const;
  };
  std::unordered_map<std::pair<Endpoint, Role>, trace::NodeId, NodeKeyHash>
      node_cache_;
  // The flow of the previous packet: packets come in bursts per flow, and
  // this saves most hash-table probes.
  Flow* last_flow_ = nullptr;
  ActivityList tcp_activity_, udp_activity_;
  // TCP flows with bytes waiting behind a hole.
  std::unordered_set<Flow*> waiting_;
  std::map<std::string, uint64_t, std::less<>> counters_;
  uint64_t next_serial_ = 1;
  // Hot counters live in fields, not in the map.
  uint64_t packets_ = 0, bytes_ = 0;
  uint64_t calls_ = 0, returns_ = 0, messages_ = 0;
  uint64_t truth_records_ = 0;  // records given a pathid by a truth header
  uint64_t retransmitted_bytes_ = 0, gap_bytes_ = 0;  // of ended flows
  uint64_t tcp_flows_ = 0, udp_flows_ = 0, tcp_midstream_ = 0, idle_ended_ = 0;
  uint64_t flows_evicted_ = 0;
  bool warned_nodes_ = false;
  trace::TimeNs now_ = 0;
  trace::TimeNs next_sweep_ = 0;
};

}  // namespace bbprof::capture

#endif  // BBPROF_CAPTURE_REDUCER_H_
