// Generator: the tracelet-based trace generator of section 7.1.1. It
// instantiates the configuration's tracelets (closed-loop clients with think
// times, or open Poisson arrivals), draws every delay from its truncated
// Gaussian, and hands out the messages in timestamp order, each tagged with
// its ground-truth path instance id.
//
// Memory is bounded by the work in flight, never by the trace's length: an
// instance's messages are generated whole when it starts (a tracelet is
// finite), sorted, and merged with the other running instances through a
// priority queue with one entry per running instance (a k-way merge, as in
// Perfetto's trace sorter). Slots are reused, so steady-state generation
// allocates nothing per message.
#ifndef BBPROF_MAKETRACE_GENERATOR_H_
#define BBPROF_MAKETRACE_GENERATOR_H_

#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "maketrace/config.h"
#include "maketrace/random.h"
#include "trace/node_table.h"
#include "trace/record.h"

namespace bbprof::maketrace {

// One generated message. callid and pathid are numbers written in decimal;
// 0 means none ("-" / absent).
struct Message {
  trace::TimeNs ts_ns = 0;
  trace::NodeId sender = 0;
  trace::NodeId receiver = 0;
  trace::Kind kind = trace::Kind::kMessage;
  bool duplicate = false;  // a retransmission added by the noise model
  uint64_t callid = 0;
  uint64_t pathid = 0;
  // The call's operation (a CALL's and its RET's); empty for none. A view
  // into the configuration, valid as long as it is.
  std::string_view op;
};

struct GeneratorStats {
  uint64_t messages = 0;      // handed out, duplicates and noise included
  uint64_t duplicates = 0;    // retransmissions added
  uint64_t oneway_noise = 0;  // extraneous one-way messages added
  uint64_t timeouts = 0;      // returns withheld (calls that never return)
  std::vector<uint64_t> instances_per_tracelet;
  uint64_t max_in_flight = 0;  // most instances running at once
  // Mean per-node parallelism (the "p" of section 5.1.2 and Table 1): at
  // each call's arrival, the number of calls then open at its callee, this
  // one included, averaged over all calls.
  double parallelism_sum = 0;
  uint64_t calls = 0;
  trace::TimeNs first_ns = 0, last_ns = 0;
  double MeanParallelism() const {
    return calls == 0 ? 0.0 : parallelism_sum / static_cast<double>(calls);
  }
};

class Generator {
 public:
  // Interns every node name of `config` in `nodes` (which must outlive the
  // generator). Length overrides: duration_ns > 0 or messages > 0 replace
  // the configuration's.
  Generator(const Config& config, uint64_t seed, trace::NodeTable* nodes,
            double duration_ns = 0, uint64_t messages = 0);

  // The next message in timestamp order; false at the end.
  bool Next(Message* out);

  const GeneratorStats& stats() const { return stats_; }
  // Not OK when generation stopped early (too much work in flight).
  const Status& status() const { return status_; }

 private:
  struct CStep {
    std::vector<trace::NodeId> callers;
    std::vector<trace::NodeId> callees;
    Delay delay, proc;
    bool parallel = false;
    bool after_return = false;
    std::string_view op;
    std::vector<CStep> children;
  };
  struct CTracelet {
    bool rpc = true;
    std::vector<CStep> roots;
    std::vector<double> cumulative_weight;
    const Tracelet* src = nullptr;
  };
  struct Pending {
    trace::TimeNs ts_ns;
    uint32_t order;  // generation order within the instance (ties)
    trace::NodeId sender, receiver;
    trace::Kind kind;
    bool withheld;  // a timed-out return: counted, never handed out
    bool duplicate;
    uint64_t callid;
    std::string_view op;
  };
  struct Slot {
    std::vector<Pending> msgs;
    size_t next = 0;
    uint64_t pathid = 0;
  };
  enum EventType : uint32_t { kSlot, kClient, kArrival, kOneway };
  // 16 bytes: the timestamp, then a tag whose high bits are the push order
  // (ties go first-pushed first, deterministically) and whose low 26 bits
  // hold the type and the slot or tracelet index.
  struct Event {
    trace::TimeNs ts_ns;
    uint64_t tag;
    EventType type() const { return static_cast<EventType>((tag >> 24) & 3); }
    uint32_t index() const { return static_cast<uint32_t>(tag & 0xFFFFFF); }
  };
  struct Later {
    bool operator()(const Event& a, const Event& b) const {
      return a.ts_ns != b.ts_ns ? a.ts_ns > b.ts_ns : a.tag > b.tag;
    }
  };

  CStep Compile(const Step& s, trace::NodeTable* nodes);
  // The root callers of a tracelet with clients=N: N client addresses.
  static std::vector<trace::NodeId> ClientPool(uint32_t n,
                                               trace::NodeTable* nodes);
  void Push(trace::TimeNs ts, EventType type, uint32_t index);
  static void SiftUp(std::vector<Event>& heap, size_t i);
  // Restores the heap after heap[0] grew later.
  static void SiftDown(std::vector<Event>& heap);
  static void PopTop(std::vector<Event>& heap);
  // Hands out the next message of the instance at the top of heap_; false
  // if it was withheld.
  bool NextFromSlot(const Event& ev, Message* out);
  // Starts an instance or emits one-way noise; true if *out was filled.
  bool HandleStart(const Event& ev, Message* out);
  bool MayStart(trace::TimeNs ts);
  // The error for a trace that would run past trace::kMaxTimeNs.
  static Status TooLate();
  // Generates one instance of tracelet `t` starting at `ts`; returns its end.
  trace::TimeNs StartInstance(uint32_t t, trace::TimeNs ts);
  trace::TimeNs GenCall(const CStep& s, trace::NodeId caller,
                        trace::TimeNs t_call, Slot& slot);
  trace::TimeNs GenMessage(const CStep& s, trace::NodeId sender,
                           trace::TimeNs t_send, Slot& slot);
  trace::TimeNs Draw(const Delay& d);
  trace::NodeId Pick(const std::vector<trace::NodeId>& pool);
  uint64_t NextCallid(trace::NodeId caller, trace::NodeId callee);
  uint32_t NewSlot();

  const Config& config_;
  Rng rng_;        // delays, picks, think times
  Rng noise_rng_;  // noise decisions, kept apart so noise does not reshuffle
                   // the delays of the paths themselves
  std::vector<CTracelet> tracelets_;
  std::vector<trace::NodeId> oneway_nodes_;
  size_t node_count_ = 0;
  std::vector<uint64_t> callid_counters_;  // [caller * n + callee]
  std::vector<Event> heap_;    // messages of running instances (kSlot)
  std::vector<Event> starts_;  // kClient, kArrival, kOneway
  std::vector<Slot> slots_;
  std::vector<uint32_t> free_slots_;
  std::vector<uint32_t> open_calls_;  // per node, for parallelism
  uint64_t seq_ = 0;
  uint64_t next_pathid_ = 1;
  uint64_t generated_ = 0;  // messages committed so far (for the length limit)
  uint64_t in_flight_ = 0;
  trace::TimeNs end_ns_ = 0;  // 0: no duration limit
  uint64_t message_limit_ = 0;
  GeneratorStats stats_;
  Status status_;
  static constexpr size_t kMaxSlots = size_t{1} << 24;  // Event::index bits
};

// Section 7.5.5: a capture device with a peak capture rate and a finite
// queue. Each packet takes 1/rate seconds to capture; packets that arrive
// while `queue` packets are already waiting are dropped. Exact for this
// deterministic-service queue: the backlog at time t is the number of
// accepted packets whose capture has not finished by t.
class SnifferModel {
 public:
  SnifferModel(double rate_per_s, uint64_t queue)
      : service_ns_(1e9 / rate_per_s), queue_(static_cast<double>(queue)) {}
  bool Accept(trace::TimeNs ts_ns) {
    const double t = static_cast<double>(ts_ns - origin_);
    if (first_) {
      first_ = false;
      origin_ = ts_ns;
      busy_until_ = service_ns_;
      return true;
    }
    // Packets in the device at time t (ceil of the remaining work, one of
    // them in service); the others wait in the queue.
    const double in_system = std::ceil((busy_until_ - t) / service_ns_ - 1e-9);
    if (in_system - 1.0 >= queue_) return false;
    busy_until_ = (busy_until_ > t ? busy_until_ : t) + service_ns_;
    return true;
  }

 private:
  double service_ns_;
  double queue_;
  bool first_ = true;
  trace::TimeNs origin_ = 0;
  double busy_until_ = 0;  // ns since origin_
};

}  // namespace bbprof::maketrace

#endif  // BBPROF_MAKETRACE_GENERATOR_H_
