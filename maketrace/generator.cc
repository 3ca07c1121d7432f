// Generator implementation: see generator.h. Timing of an RPC tracelet
// (docs/maketrace.md): a node entered at time E sends its first serial child
// (or each child of a leading parallel group) at E + delay; each later serial
// child at the previous child's (or group's) return + delay; after its last
// child returns it works `proc` more and returns. A message tracelet sends
// each child hop `delay` after its parent hop arrived. The capture point sees
// every message at its send time (zero network transit).
#include "maketrace/generator.h"

#include <algorithm>
#include <cmath>

#include "trace/timestamp.h"

namespace bbprof::maketrace {

using trace::Kind;
using trace::NodeId;
using trace::TimeNs;

Generator::Generator(const Config& config, uint64_t seed,
                     trace::NodeTable* nodes, double duration_ns,
                     uint64_t messages)
    : config_(config),
      rng_(seed),
      noise_rng_(seed ^ 0x6E6F697365ULL) {  // "noise"
  for (const Tracelet& t : config.tracelets) {
    CTracelet ct;
    ct.rpc = t.style == TraceletStyle::kRpc;
    ct.src = &t;
    double w = 0;
    for (const Step& r : t.roots) {
      ct.roots.push_back(Compile(r, nodes));
      if (t.clients > 0) ct.roots.back().callers = ClientPool(t.clients, nodes);
      w += r.weight;
      ct.cumulative_weight.push_back(w);
    }
    tracelets_.push_back(std::move(ct));
  }
  for (const std::string& n : config.oneway_nodes) {
    oneway_nodes_.push_back(nodes->Intern(n));
  }
  node_count_ = nodes->size();
  callid_counters_.assign(node_count_ * node_count_, 0);
  open_calls_.assign(node_count_, 0);
  stats_.instances_per_tracelet.assign(tracelets_.size(), 0);

  const double duration =
      duration_ns > 0 || messages > 0 ? duration_ns : config.duration_ns;
  message_limit_ = duration_ns > 0 || messages > 0 ? messages : config.messages;
  end_ns_ = duration > 0 ? config.start_ns + std::llround(duration) : 0;

  // Closed-loop clients start at a random point of one think period so that
  // they do not run in lockstep; open streams start with one inter-arrival.
  for (uint32_t i = 0; i < tracelets_.size(); ++i) {
    const Tracelet& t = *tracelets_[i].src;
    if (t.rate_per_s > 0) {
      Push(config.start_ns + std::llround(std::min(
                                 1e17, rng_.Exponential(1e9 / t.rate_per_s))),
           kArrival, i);
    } else {
      for (uint32_t c = 0; c < t.instances; ++c) {
        const double span = std::max(t.think_max_ns, 1.0);
        Push(config.start_ns + std::llround(rng_.Uniform() * span), kClient, i);
      }
    }
  }
  if (config.oneway_rate_per_s > 0) {
    Push(config.start_ns +
             std::llround(std::min(
                 1e17, noise_rng_.Exponential(1e9 / config.oneway_rate_per_s))),
         kOneway, 0);
  }
}

Generator::CStep Generator::Compile(const Step& s, trace::NodeTable* nodes) {
  CStep c;
  for (const std::string& n : s.caller_pool)
    c.callers.push_back(nodes->Intern(n));
  for (const std::string& n : s.callee_pool)
    c.callees.push_back(nodes->Intern(n));
  c.delay = s.delay;
  c.proc = s.proc;
  c.parallel = s.parallel;
  c.after_return = s.after_return;
  c.op = s.op;
  for (const Step& child : s.children)
    c.children.push_back(Compile(child, nodes));
  return c;
}

std::vector<NodeId> Generator::ClientPool(uint32_t n, trace::NodeTable* nodes) {
  std::vector<NodeId> pool;
  pool.reserve(n);
  for (uint32_t i = 1; i <= n; ++i) {
    pool.push_back(nodes->Intern("10.9." + std::to_string(i >> 8) + "." +
                                 std::to_string(i & 255)));
  }
  return pool;
}

void Generator::Push(TimeNs ts, EventType type, uint32_t index) {
  // Messages of running instances and instance starts (clients thinking,
  // arrivals, noise) live in two heaps: most events are messages, and their
  // heap stays as small as the instances in flight however many clients
  // are thinking. One sequence counter orders ties across both.
  std::vector<Event>& h = type == kSlot ? heap_ : starts_;
  h.push_back(
      {ts, (seq_++ << 26) | (static_cast<uint64_t>(type) << 24) | index});
  SiftUp(h, h.size() - 1);
}

// The event queue is a 4-ary min-heap: half the depth of a binary heap, and
// the four children of a node share a cache line or two, which matters since
// every message passes through it.
void Generator::SiftUp(std::vector<Event>& heap, size_t i) {
  const Event moving = heap[i];
  const Later later;
  while (i > 0) {
    const size_t parent = (i - 1) / 4;
    if (!later(heap[parent], moving)) break;
    heap[i] = heap[parent];
    i = parent;
  }
  heap[i] = moving;
}

void Generator::SiftDown(std::vector<Event>& heap) {
  const size_t n = heap.size();
  size_t i = 0;
  const Event moving = heap[0];
  const Later later;
  while (true) {
    const size_t first = 4 * i + 1;
    if (first >= n) break;
    size_t best = first;
    const size_t last = std::min(first + 4, n);
    for (size_t c = first + 1; c < last; ++c) {
      if (later(heap[best], heap[c])) best = c;
    }
    if (!later(moving, heap[best])) break;
    heap[i] = heap[best];
    i = best;
  }
  heap[i] = moving;
}

void Generator::PopTop(std::vector<Event>& heap) {
  heap[0] = heap.back();
  heap.pop_back();
  if (!heap.empty()) SiftDown(heap);
}

Status Generator::TooLate() {
  return Status::Error(
      "the trace would run past the year 2116 (the last timestamp the trace "
      "format holds): lower the length or raise the tracelets' rates");
}

bool Generator::MayStart(TimeNs ts) {
  if (end_ns_ != 0 && ts >= end_ns_) return false;
  if (ts > trace::kMaxTimeNs) {
    // Starting later would be past the trace format's range. An instance
    // spans at most 4e18 ns (1000 steps of at most 2e15 ns, twice), so one
    // that starts within it cannot overflow int64 nanoseconds; Next()
    // stops at its first message past the range.
    if (status_.ok()) status_ = TooLate();
    return false;
  }
  if (message_limit_ != 0 && generated_ >= message_limit_) return false;
  return true;
}

TimeNs Generator::Draw(const Delay& d) {
  if (d.sd_ns <= 0) return std::llround(d.mean_ns);
  // Truncation at zero by rejection: the mean is never negative, so at least
  // half the draws are accepted.
  double x;
  do {
    x = d.mean_ns + d.sd_ns * rng_.Gaussian();
  } while (x < 0);
  // A draw dozens of SDs out cannot push a timestamp past int64 (the
  // parser bounds means and SDs by 1e15 ns).
  return std::llround(std::min(x, 2e15));
}

NodeId Generator::Pick(const std::vector<NodeId>& pool) {
  if (pool.size() == 1) return pool[0];
  return pool[rng_.Below(static_cast<uint32_t>(pool.size()))];
}

uint64_t Generator::NextCallid(NodeId caller, NodeId callee) {
  switch (config_.callids) {
    case CallidMode::kNone:
      return 0;
    case CallidMode::kReuse: {
      uint64_t& c = callid_counters_[caller * node_count_ + callee];
      const uint64_t id = c % config_.callid_reuse + 1;
      ++c;
      return id;
    }
    case CallidMode::kUnique:
      break;
  }
  return ++callid_counters_[caller * node_count_ + callee];
}

uint32_t Generator::NewSlot() {
  if (!free_slots_.empty()) {
    uint32_t s = free_slots_.back();
    free_slots_.pop_back();
    slots_[s].msgs.clear();
    slots_[s].next = 0;
    return s;
  }
  slots_.emplace_back();
  return static_cast<uint32_t>(slots_.size() - 1);
}

TimeNs Generator::GenCall(const CStep& s, NodeId caller, TimeNs t_call,
                          Slot& slot) {
  const NodeId callee = Pick(s.callees);
  const uint64_t callid = NextCallid(caller, callee);
  auto order = static_cast<uint32_t>(slot.msgs.size());
  slot.msgs.push_back(
      {t_call, order, caller, callee, Kind::kCall, false, false, callid, s.op});
  TimeNs anchor = t_call;
  TimeNs group_end = anchor;
  bool in_group = false;
  for (const CStep& child : s.children) {
    if (child.after_return) continue;  // sent after the return, below
    if (child.parallel) {
      if (!in_group) group_end = anchor;
      in_group = true;
      group_end = std::max(
          group_end, GenCall(child, callee, anchor + Draw(child.delay), slot));
    } else {
      if (in_group) anchor = group_end;
      in_group = false;
      anchor = GenCall(child, callee, anchor + Draw(child.delay), slot);
    }
  }
  if (in_group) anchor = group_end;
  const TimeNs t_ret = anchor + Draw(s.proc);
  const bool withheld = config_.timeout_probability > 0 &&
                        noise_rng_.Uniform() < config_.timeout_probability;
  order = static_cast<uint32_t>(slot.msgs.size());
  slot.msgs.push_back({t_ret, order, callee, caller, Kind::kReturn, withheld,
                       false, callid, s.op});
  // Asynchronous children: sent `delay` after this call returned, each on
  // its own; they end the instance later but do not hold the return.
  for (const CStep& child : s.children) {
    if (child.after_return)
      GenCall(child, callee, t_ret + Draw(child.delay), slot);
  }
  return t_ret;
}

TimeNs Generator::GenMessage(const CStep& s, NodeId sender, TimeNs t_send,
                             Slot& slot) {
  const NodeId receiver = Pick(s.callees);
  const auto order = static_cast<uint32_t>(slot.msgs.size());
  slot.msgs.push_back(
      {t_send, order, sender, receiver, Kind::kMessage, false, false, 0, {}});
  TimeNs end = t_send;
  for (const CStep& child : s.children) {
    end = std::max(
        end, GenMessage(child, receiver, t_send + Draw(child.delay), slot));
  }
  return end;
}

TimeNs Generator::StartInstance(uint32_t t, TimeNs ts) {
  const CTracelet& ct = tracelets_[t];
  const CStep* root = &ct.roots[0];
  if (ct.roots.size() > 1) {
    const double u = rng_.Uniform() * ct.cumulative_weight.back();
    size_t i = 0;
    while (i + 1 < ct.roots.size() && u >= ct.cumulative_weight[i]) ++i;
    root = &ct.roots[i];
  }
  if (free_slots_.empty() && slots_.size() >= kMaxSlots) {
    status_ = Status::Error(
        "more than " + std::to_string(kMaxSlots) +
        " instances in flight at once (lower a tracelet's rate= or "
        "instances=, or shorten its delays)");
    return ts;  // Next() stops at once
  }
  const uint32_t s = NewSlot();
  Slot& slot = slots_[s];
  slot.pathid = next_pathid_++;
  const NodeId caller = Pick(root->callers);
  const TimeNs t0 = ts + Draw(root->delay);
  const TimeNs end = ct.rpc ? GenCall(*root, caller, t0, slot)
                            : GenMessage(*root, caller, t0, slot);
  // Retransmissions (noise): a copy of a message some time after it.
  if (config_.duplicate_probability > 0) {
    const size_t n = slot.msgs.size();
    for (size_t i = 0; i < n; ++i) {
      if (slot.msgs[i].withheld ||
          noise_rng_.Uniform() >= config_.duplicate_probability) {
        continue;
      }
      Pending d = slot.msgs[i];
      const Delay& a = config_.duplicate_after;
      double x;
      do {
        x = a.mean_ns + a.sd_ns * noise_rng_.Gaussian();
      } while (x < 0);
      d.ts_ns += std::llround(std::min(x, 2e15));
      d.duplicate = true;
      d.order = static_cast<uint32_t>(slot.msgs.size());
      slot.msgs.push_back(d);
    }
  }
  std::sort(slot.msgs.begin(), slot.msgs.end(),
            [](const Pending& a, const Pending& b) {
              return a.ts_ns != b.ts_ns ? a.ts_ns < b.ts_ns : a.order < b.order;
            });
  for (const Pending& m : slot.msgs) generated_ += m.withheld ? 0 : 1;
  ++stats_.instances_per_tracelet[t];
  ++in_flight_;
  stats_.max_in_flight = std::max(stats_.max_in_flight, in_flight_);
  Push(slot.msgs[0].ts_ns, kSlot, s);
  return end;
}

bool Generator::Next(Message* out) {
  while (!heap_.empty() || !starts_.empty()) {
    if (!status_.ok()) return false;
    const bool from_starts =
        heap_.empty() ||
        (!starts_.empty() && Later()(heap_.front(), starts_.front()));
    if (from_starts) {
      const Event ev = starts_.front();
      PopTop(starts_);
      if (!HandleStart(ev, out)) continue;
    } else {
      const Event ev = heap_.front();
      if (!NextFromSlot(ev, out)) continue;
    }
    if (out->ts_ns > trace::kMaxTimeNs) {
      // Past the trace format's range (trace/timestamp.h); every writer would
      // refuse the record, so say why in the configuration's terms.
      status_ = TooLate();
      return false;
    }
    if (stats_.messages == 0) stats_.first_ns = out->ts_ns;
    stats_.last_ns = out->ts_ns;
    ++stats_.messages;
    return true;
  }
  return false;
}

bool Generator::NextFromSlot(const Event& ev, Message* out) {
  Slot& slot = slots_[ev.index()];
  if (slot.next + 1 < slot.msgs.size()) {
    // The common case: the instance has more messages. Replace the top by
    // its next message and sift it down: one pass instead of a pop and a
    // push.
    heap_.front().ts_ns = slot.msgs[slot.next + 1].ts_ns;
    SiftDown(heap_);
  } else {
    PopTop(heap_);
  }
  const Pending& p = slot.msgs[slot.next++];
  if (slot.next == slot.msgs.size()) {
    free_slots_.push_back(ev.index());
    --in_flight_;
  }
  if (!p.duplicate) {
    if (p.kind == Kind::kCall) {
      const uint32_t open = ++open_calls_[p.receiver];
      stats_.parallelism_sum += open;
      ++stats_.calls;
    } else if (p.kind == Kind::kReturn && open_calls_[p.sender] > 0) {
      --open_calls_[p.sender];
    }
  }
  if (p.withheld) {
    ++stats_.timeouts;
    return false;
  }
  out->ts_ns = p.ts_ns;
  out->sender = p.sender;
  out->receiver = p.receiver;
  out->kind = p.kind;
  out->duplicate = p.duplicate;
  out->callid = p.callid;
  out->pathid = slot.pathid;
  out->op = p.op;
  if (p.duplicate) ++stats_.duplicates;
  return true;
}

bool Generator::HandleStart(const Event& ev, Message* out) {
  if (!MayStart(ev.ts_ns)) return false;
  if (ev.type() == kOneway) {
    const auto n = static_cast<uint32_t>(oneway_nodes_.size());
    const uint32_t a = noise_rng_.Below(n);
    uint32_t b = noise_rng_.Below(n - 1);
    if (b >= a) ++b;
    out->ts_ns = ev.ts_ns;
    out->sender = oneway_nodes_[a];
    out->receiver = oneway_nodes_[b];
    out->kind = Kind::kMessage;
    out->duplicate = false;
    out->callid = 0;
    out->pathid = 0;
    out->op = {};
    ++generated_;
    ++stats_.oneway_noise;
    Push(ev.ts_ns + std::max<TimeNs>(
                        1, std::llround(std::min(
                               1e17, noise_rng_.Exponential(
                                         1e9 / config_.oneway_rate_per_s)))),
         kOneway, 0);
    return true;
  }
  const TimeNs end = StartInstance(ev.index(), ev.ts_ns);
  const Tracelet& t = *tracelets_[ev.index()].src;
  if (ev.type() == kClient) {
    const double think =
        t.think_min_ns + rng_.Uniform() * (t.think_max_ns - t.think_min_ns);
    // At least 1 ns later, so a zero-length instance with zero think time
    // cannot stall the clock.
    Push(std::max<TimeNs>(end + std::llround(think), ev.ts_ns + 1), kClient,
         ev.index());
  } else {
    Push(ev.ts_ns + std::max<TimeNs>(
                        1, std::llround(std::min(
                               1e17, rng_.Exponential(1e9 / t.rate_per_s)))),
         kArrival, ev.index());
  }
  return false;
}

}  // namespace bbprof::maketrace
