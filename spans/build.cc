// BuildMessages: spans to the CALL and RET records a sniffer would have
// written (the paper's section 6.1 view of a system: messages between black
// boxes, nothing from inside them). A span tree mixes three things that the
// trace must keep apart: messages between processes (a client span and the
// server span it caused), work inside one process (internal spans, nested
// server spans of one service), and the request's entry from outside. Only
// the first becomes records; the second is walked through (the enclosing
// service is the caller of whatever it calls); the third gets a caller node.
#include <algorithm>
#include <limits>
#include <string>
#include <unordered_map>
#include <unordered_set>

#include "spans/spans.h"
#include "trace/op.h"

namespace bbprof::spans {

namespace {

constexpr uint32_t kNoSpan = std::numeric_limits<uint32_t>::max();

// A valid trace token for any text: percent-encoded where the text holds
// whitespace, control bytes or "( ) , ;" (trace/op.h), never "-".
std::string Token(std::string_view text) { return trace::MakeOp({text}); }

std::string Key(const Span& s, const std::string& span_id) {
  std::string k = s.trace_id;
  k.push_back('\n');
  k += span_id;
  return k;
}

class Builder {
 public:
  Builder(const std::vector<Span>& spans, const ImportOptions& options,
          Counters* counters)
      : spans_(spans), options_(options), counters_(*counters) {}

  std::vector<Message> Run() {
    Index();
    ResolveParents();
    ComputeDepths();
    PairClientsWithServers();
    Emit();
    std::stable_sort(
        out_.begin(), out_.end(), [](const Message& a, const Message& b) {
          if (a.ts_ns != b.ts_ns) return a.ts_ns < b.ts_ns;
          const bool ac = a.kind == trace::Kind::kCall,
                     bc = b.kind == trace::Kind::kCall;
          if (ac != bc)
            return ac;  // a call before a return at the same instant
          // Outer calls start first; inner calls return first.
          return ac ? a.depth < b.depth : a.depth > b.depth;
        });
    return std::move(out_);
  }

 private:
  // Spans by (trace id, span id); a duplicate of the same kind is dropped.
  // Zipkin's shared spans (the client and server halves of one RPC under
  // one id) are the only legitimate repeats.
  void Index() {
    alive_.assign(spans_.size(), 1);
    std::unordered_set<std::string> traces;
    for (uint32_t i = 0; i < spans_.size(); ++i) {
      const Span& s = spans_[i];
      auto& same = by_id_[Key(s, s.span_id)];
      bool dup = false;
      for (uint32_t j : same) dup |= spans_[j].kind == s.kind;
      if (dup) {
        alive_[i] = 0;
        ++counters_["span_duplicate"];
        continue;
      }
      same.push_back(i);
      traces.insert(s.trace_id);
    }
    counters_["spans"] += spans_.size();
    counters_["traces"] += traces.size();
  }

  // The span whose id is span i's parent id. Under one id there may be two
  // spans (a Zipkin shared span): the half in span i's own service is its
  // parent (a child of the server half runs in the server), else the server
  // half (a call into the server's process continues there).
  void ResolveParents() {
    parent_.assign(spans_.size(), kNoSpan);
    for (uint32_t i = 0; i < spans_.size(); ++i) {
      const Span& s = spans_[i];
      if (!alive_[i] || s.parent_id.empty()) continue;
      auto it = by_id_.find(Key(s, s.parent_id));
      uint32_t best = kNoSpan;
      if (it != by_id_.end()) {
        for (uint32_t j : it->second) {
          if (j == i) continue;
          if (best == kNoSpan || spans_[j].service == s.service ||
              (spans_[best].service != s.service &&
               spans_[j].kind == SpanKind::kServer)) {
            best = j;
          }
        }
      }
      if (best == kNoSpan)
        ++counters_["span_parent_not_found"];  // an entry point then
      parent_[i] = best;
    }
  }

  // Depth in the span tree, for ordering records with equal timestamps. A
  // cycle of parent ids (bad input) is cut where it is found.
  void ComputeDepths() {
    depth_.assign(spans_.size(), 0);
    std::vector<uint8_t> state(spans_.size(),
                               0);  // 0 new, 1 on the stack, 2 done
    std::vector<uint32_t> stack;
    for (uint32_t i = 0; i < spans_.size(); ++i) {
      if (state[i] == 2) continue;
      stack.push_back(i);
      while (!stack.empty()) {
        uint32_t j = stack.back();
        uint32_t p = parent_[j];
        if (p == kNoSpan || state[p] == 2) {
          depth_[j] = p == kNoSpan ? 0 : depth_[p] + 1;
          state[j] = 2;
          stack.pop_back();
        } else if (state[p] == 1) {
          parent_[j] = kNoSpan;  // a cycle: j becomes a root
          ++counters_["span_parent_cycle"];
        } else {
          state[j] = 1;
          stack.push_back(p);
        }
      }
    }
  }

  // Each client span's server: a server span under the same id (Zipkin
  // shared) or a server child; the earliest one if a call was retried (the
  // later ones are calls of their own, from the client's service).
  void PairClientsWithServers() {
    partner_.assign(spans_.size(), kNoSpan);
    paired_.assign(spans_.size(), 0);
    for (uint32_t i = 0; i < spans_.size(); ++i) {
      const Span& s = spans_[i];
      if (!alive_[i] || s.kind != SpanKind::kServer) continue;
      uint32_t client = kNoSpan;
      for (uint32_t j : by_id_.at(Key(s, s.span_id))) {
        if (spans_[j].kind == SpanKind::kClient) client = j;
      }
      if (client == kNoSpan && parent_[i] != kNoSpan &&
          spans_[parent_[i]].kind == SpanKind::kClient) {
        client = parent_[i];
      }
      if (client == kNoSpan) continue;
      uint32_t& p = partner_[client];
      if (p == kNoSpan || spans_[i].start_ns < spans_[p].start_ns) p = i;
    }
    for (uint32_t c = 0; c < spans_.size(); ++c) {
      if (partner_[c] != kNoSpan) paired_[partner_[c]] = 1;
    }
  }

  std::string EntryCaller(const std::string& service) const {
    std::string caller = Token(options_.entry_caller);
    if (options_.entry_caller_per_service) caller += ":" + Token(service);
    return caller;
  }

  // A callid unique in the output: the span id, or the trace id and span id
  // when another trace used the same span id.
  std::string CallId(const Span& s) {
    std::string id = Token(s.span_id);
    if (!callids_.insert(id).second) {
      id = Token(s.trace_id + "." + s.span_id);
      for (int n = 2; !callids_.insert(id).second; ++n) {
        id = Token(s.trace_id + "." + s.span_id + "." + std::to_string(n));
      }
    }
    return id;
  }

  void AddRpc(const std::string& caller, const std::string& callee,
              trace::TimeNs call_ns, trace::TimeNs ret_ns, const Span& id_span,
              const std::string& op_name, uint32_t depth) {
    Message m;
    m.kind = trace::Kind::kCall;
    m.ts_ns = call_ns;
    m.sender = caller;
    m.receiver = callee;
    m.callid = CallId(id_span);
    m.pathid = Token(id_span.trace_id);
    m.op = op_name.empty() ? std::string() : Token(op_name);
    m.depth = depth;
    Message r = m;
    r.kind = trace::Kind::kReturn;
    r.ts_ns = ret_ns;
    std::swap(r.sender, r.receiver);
    out_.push_back(std::move(m));
    out_.push_back(std::move(r));
    ++counters_["rpcs"];
  }

  void Emit() {
    for (uint32_t i = 0; i < spans_.size(); ++i) {
      if (!alive_[i]) continue;
      const Span& s = spans_[i];
      switch (s.kind) {
        case SpanKind::kInternal:
          break;
        case SpanKind::kProducer:
        case SpanKind::kConsumer:
          ++counters_["span_messaging_walked_through"];
          break;
        case SpanKind::kClient:
          EmitClient(i);
          break;
        case SpanKind::kServer:
          if (!paired_[i]) EmitServer(i);
          break;
      }
    }
  }

  // The call when the server received it (its clock), the return when the
  // client got the reply (its clock); the server's name for the operation.
  void EmitClient(uint32_t c) {
    const Span& cs = spans_[c];
    const std::string caller = Token(cs.service);
    if (partner_[c] != kNoSpan) {
      const Span& ss = spans_[partner_[c]];
      if (ss.service == cs.service) {
        ++counters_["rpc_within_one_service"];
        return;
      }
      AddRpc(caller, Token(ss.service), ss.start_ns, cs.end_ns, cs,
             ss.name.empty() ? cs.name : ss.name, depth_[partner_[c]]);
    } else if (!cs.remote_service.empty() && cs.remote_service != cs.service) {
      AddRpc(caller, Token(cs.remote_service), cs.start_ns, cs.end_ns, cs,
             cs.name, depth_[c]);
    } else {
      ++counters_["client_span_without_callee"];
    }
  }

  // A server span nobody's client span claims: an entry point, or a call
  // from another service that recorded no client span.
  void EmitServer(uint32_t i) {
    const Span& s = spans_[i];
    const uint32_t p = parent_[i];
    std::string caller;
    if (p == kNoSpan) {
      caller = EntryCaller(s.service);
      ++counters_["entry_points"];
    } else if (spans_[p].service != s.service) {
      caller = Token(spans_[p].service);
    } else {
      ++counters_["server_span_in_process"];
      return;
    }
    AddRpc(caller, Token(s.service), s.start_ns, s.end_ns, s, s.name,
           depth_[i]);
  }

  const std::vector<Span>& spans_;
  const ImportOptions& options_;
  Counters& counters_;
  std::unordered_map<std::string, std::vector<uint32_t>> by_id_;
  std::vector<uint8_t> alive_, paired_;
  std::vector<uint32_t> parent_, depth_, partner_;
  std::unordered_set<std::string> callids_;
  std::vector<Message> out_;
};

}  // namespace

std::vector<Message> BuildMessages(const std::vector<Span>& spans,
                                   const ImportOptions& options,
                                   Counters* counters) {
  return Builder(spans, options, counters).Run();
}

}  // namespace bbprof::spans
