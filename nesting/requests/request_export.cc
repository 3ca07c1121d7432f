#include "nesting/requests/request_export.h"

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <unordered_map>
#include <utility>

#include "base/json_text.h"
#include "base/progress.h"
#include "base/version.h"
#include "nesting/bins.h"
#include "trace/byte_stream.h"

namespace bbprof::nesting {

namespace {

// FNV-1a over the bytes, then the splitmix64 finaliser (Mix64, bins.h) so
// that nearby inputs (consecutive timestamps) spread over the whole range.
uint64_t HashBytes(uint64_t h, std::string_view s) {
  for (unsigned char c : s) {
    h ^= c;
    h *= 0x100000001B3ULL;
  }
  return h;
}
uint64_t HashInt(uint64_t h, uint64_t v) {
  for (int i = 0; i < 8; ++i) {
    h ^= (v >> (8 * i)) & 0xFF;
    h *= 0x100000001B3ULL;
  }
  return h;
}

void AppendInt(std::string* out, int64_t v) { out->append(std::to_string(v)); }

// Microseconds with the nanoseconds as three decimals, exactly.
void AppendMicros(std::string* out, int64_t ns) {
  char buf[40];
  int64_t us = ns / 1000, rem = ns % 1000;
  if (rem < 0) {
    rem += 1000;
    --us;
  }
  std::snprintf(buf, sizeof buf, "%" PRId64 ".%03" PRId64, us, rem);
  out->append(buf);
}

// One request: calls in depth-first pre-order (a parent before its
// children, children in call order), each with its parent's position.
struct ExportCall {
  uint32_t call;
  int32_t parent;  // position in `calls`, -1 for the root
  uint64_t span_id;
};
struct ExportRequest {
  int rank = 0;
  const std::string* signature = nullptr;
  TraceId trace_id;
  std::vector<ExportCall> calls;
};

// What every writer sees of the run.
struct Context {
  const DetailedResult* d;
  std::string_view Name(trace::NodeId id) const { return d->node_names[id]; }
  const CallInfo& Call(uint32_t i) const { return d->calls[i]; }
  std::string_view Callid(uint32_t i) const { return d->labels.callids[i]; }
  std::string_view Op(uint32_t i) const {
    return d->labels.op_names[d->labels.ops[i]];
  }
  // What a span is called: the operation, else the callee's name.
  std::string_view SpanName(uint32_t i) const {
    std::string_view op = Op(i);
    return op.empty() ? Name(Call(i).callee) : op;
  }
  // Observed end, never before the start (a skewed return can precede its
  // call; the viewers cannot show negative durations).
  trace::TimeNs End(uint32_t i) const {
    return std::max(Call(i).ret_ns, Call(i).call_ns);
  }
};

class Writer {
 public:
  virtual ~Writer() = default;
  virtual void Begin(std::string* out) = 0;
  virtual void Add(const Context& ctx, const ExportRequest& r,
                   std::string* out) = 0;
  virtual void End(std::string* out) = 0;
};

// Jaeger UI JSON: the document jaeger-query's /api/traces returns, which
// the UI's "JSON File" upload reads without a backend (jaeger-ui
// packages/jaeger-ui/src/model/transform-trace-data.tsx turns each trace
// into its model; spans refer to processes by processID). One span per
// call, on the callee's service, kind server. No client spans: the caller's
// side was observed by the same two packets, so a client span would repeat
// the server span's times; the caller is named in peer.service and is the
// service of the parent span anyway.
class JaegerWriter final : public Writer {
 public:
  void Begin(std::string* out) override { out->append("{\"data\":["); }
  void Add(const Context& ctx, const ExportRequest& r,
           std::string* out) override {
    if (!first_) out->push_back(',');
    first_ = false;
    const std::string trace_id = HexId(r.trace_id);
    std::vector<trace::NodeId> services;
    std::unordered_map<trace::NodeId, size_t> pid;
    out->append("\n{\"traceID\":\"" + trace_id + "\",\"spans\":[");
    for (size_t k = 0; k < r.calls.size(); ++k) {
      const ExportCall& ec = r.calls[k];
      const CallInfo& c = ctx.Call(ec.call);
      auto [it, inserted] = pid.try_emplace(c.callee, services.size() + 1);
      if (inserted) services.push_back(c.callee);
      if (k) out->push_back(',');
      out->append("\n{\"traceID\":\"" + trace_id + "\",\"spanID\":\"" +
                  HexId(ec.span_id) + "\",\"flags\":1,\"operationName\":");
      AppendJsonString(out, ctx.SpanName(ec.call));
      out->append(",\"references\":[");
      if (ec.parent >= 0) {
        out->append("{\"refType\":\"CHILD_OF\",\"traceID\":\"" + trace_id +
                    "\",\"spanID\":\"" +
                    HexId(r.calls[static_cast<size_t>(ec.parent)].span_id) +
                    "\"}");
      }
      out->append("],\"startTime\":");
      // Whole microseconds, as Jaeger stores them; the exact nanoseconds
      // are in the bbprof.call_ns and bbprof.return_ns tags.
      // The UI drops spans whose startTime is 0 (falsy), so a trace whose
      // clock starts at 0 starts its spans at 1 us instead.
      const int64_t start_us = std::max<int64_t>(1, FloorDiv(c.call_ns, 1000));
      AppendInt(out, start_us);
      out->append(",\"duration\":");
      AppendInt(out, std::max<int64_t>(
                         0, FloorDiv(ctx.End(ec.call), 1000) - start_us));
      out->append(",\"tags\":[");
      Tag(out, "span.kind", "server", true);
      Tag(out, "peer.service", ctx.Name(c.caller));
      if (!ctx.Callid(ec.call).empty())
        Tag(out, "bbprof.callid", ctx.Callid(ec.call));
      if (!ctx.Op(ec.call).empty()) Tag(out, "bbprof.op", ctx.Op(ec.call));
      Tag(out, "bbprof.call_ns", std::to_string(c.call_ns));
      Tag(out, "bbprof.return_ns", std::to_string(c.ret_ns));
      if (c.imputed) {
        out->append(
            ",{\"key\":\"bbprof.assumed_return\",\"type\":\"bool\",\"value\":"
            "true}");
      }
      if (ec.parent < 0) {
        out->append(
            ",{\"key\":\"bbprof.pattern.rank\",\"type\":\"int64\",\"value\":");
        AppendInt(out, r.rank);
        out->push_back('}');
        Tag(out, "bbprof.pattern.signature", *r.signature);
      }
      out->append("],\"logs\":[],\"processID\":\"p" +
                  std::to_string(it->second) + "\",\"warnings\":null}");
    }
    out->append("],\"processes\":{");
    for (size_t p = 0; p < services.size(); ++p) {
      if (p) out->push_back(',');
      out->append("\"p" + std::to_string(p + 1) + "\":{\"serviceName\":");
      AppendJsonString(out, ctx.Name(services[p]));
      out->append(",\"tags\":[]}");
    }
    out->append("},\"warnings\":null}");
  }
  void End(std::string* out) override {
    out->append("\n],\"total\":0,\"limit\":0,\"offset\":0,\"errors\":null}\n");
  }

 private:
  static int64_t FloorDiv(int64_t a, int64_t b) {
    int64_t q = a / b;
    return (a % b != 0 && (a < 0) != (b < 0)) ? q - 1 : q;
  }
  static void Tag(std::string* out, std::string_view key,
                  std::string_view value, bool first = false) {
    if (!first) out->push_back(',');
    out->append("{\"key\":");
    AppendJsonString(out, key);
    out->append(",\"type\":\"string\",\"value\":");
    AppendJsonString(out, value);
    out->push_back('}');
  }
  bool first_ = true;
};

// OTLP/JSON (opentelemetry-proto's JSON encoding of TracesData): field
// names lowerCamelCase, 64-bit integers as decimal strings, trace and span
// ids as hex (not base64), enums as integers. One TracesData per line, as
// the collector's file exporter writes and its otlpjsonfile receiver
// reads, so a file of any length streams. One ResourceSpans per callee
// service (resource attribute service.name), spans of kind SERVER (2).
class OtlpWriter final : public Writer {
 public:
  void Begin(std::string*) override {}
  void Add(const Context& ctx, const ExportRequest& r,
           std::string* out) override {
    const std::string trace_id = HexId(r.trace_id);
    std::vector<trace::NodeId> services;
    std::unordered_map<trace::NodeId, std::vector<size_t>> by_service;
    for (size_t k = 0; k < r.calls.size(); ++k) {
      trace::NodeId s = ctx.Call(r.calls[k].call).callee;
      auto [it, inserted] = by_service.try_emplace(s);
      if (inserted) services.push_back(s);
      it->second.push_back(k);
    }
    out->append("{\"resourceSpans\":[");
    for (size_t si = 0; si < services.size(); ++si) {
      if (si) out->push_back(',');
      out->append("{\"resource\":{\"attributes\":[");
      Attr(out, "service.name", ctx.Name(services[si]), true);
      out->append(
          "]},\"scopeSpans\":[{\"scope\":{\"name\":\"bbprof\",\"version\":\"");
      out->append(kVersion);
      out->append("\"},\"spans\":[");
      bool first = true;
      for (size_t k : by_service[services[si]]) {
        const ExportCall& ec = r.calls[k];
        const CallInfo& c = ctx.Call(ec.call);
        if (!first) out->push_back(',');
        first = false;
        out->append("{\"traceId\":\"" + trace_id + "\",\"spanId\":\"" +
                    HexId(ec.span_id) + "\"");
        if (ec.parent >= 0) {
          out->append(",\"parentSpanId\":\"" +
                      HexId(r.calls[static_cast<size_t>(ec.parent)].span_id) +
                      "\"");
        }
        out->append(",\"name\":");
        AppendJsonString(out, ctx.SpanName(ec.call));
        // fixed64 cannot hold a time before the epoch.
        out->append(",\"kind\":2,\"startTimeUnixNano\":\"" +
                    std::to_string(std::max<int64_t>(0, c.call_ns)) +
                    "\",\"endTimeUnixNano\":\"" +
                    std::to_string(std::max<int64_t>(0, ctx.End(ec.call))) +
                    "\",\"attributes\":[");
        Attr(out, "peer.service", ctx.Name(c.caller), true);
        if (!ctx.Callid(ec.call).empty())
          Attr(out, "bbprof.callid", ctx.Callid(ec.call));
        if (!ctx.Op(ec.call).empty()) Attr(out, "bbprof.op", ctx.Op(ec.call));
        if (c.call_ns < 0 || c.ret_ns < c.call_ns) {
          // The exact observed times when the span's cannot show them.
          out->append(
              ",{\"key\":\"bbprof.call_ns\",\"value\":{\"intValue\":\"" +
              std::to_string(c.call_ns) + "\"}}");
          out->append(
              ",{\"key\":\"bbprof.return_ns\",\"value\":{\"intValue\":\"" +
              std::to_string(c.ret_ns) + "\"}}");
        }
        if (c.imputed) {
          out->append(
              ",{\"key\":\"bbprof.assumed_return\",\"value\":{\"boolValue\":"
              "true}}");
        }
        if (ec.parent < 0) {
          out->append(
              ",{\"key\":\"bbprof.pattern.rank\",\"value\":{\"intValue\":\"" +
              std::to_string(r.rank) + "\"}}");
          Attr(out, "bbprof.pattern.signature", *r.signature);
        }
        out->append("]}");
      }
      out->append("]}]}");
    }
    out->append("]}\n");
  }
  void End(std::string*) override {}

 private:
  static void Attr(std::string* out, std::string_view key,
                   std::string_view value, bool first = false) {
    if (!first) out->push_back(',');
    out->append("{\"key\":");
    AppendJsonString(out, key);
    out->append(",\"value\":{\"stringValue\":");
    AppendJsonString(out, value);
    out->append("}}");
  }
};

// Chrome trace event format (the JSON Object Format of Google's "Trace
// Event Format" document), which chrome://tracing and ui.perfetto.dev
// open. One process per node (a process_name metadata event when the node
// first appears); each call is a complete event ("ph":"X") on its callee's
// process, on a thread lane (tid) that no overlapping call on that node
// uses, so concurrent calls never stack into false nesting; a flow arrow
// ("ph":"s" in the caller's slice, "ph":"f" bound to the callee's slice)
// links each call to the call that caused it. Times are microseconds from
// the first request's start, with the nanoseconds as decimals; the origin
// is in otherData.bbprof_origin_ns.
class ChromeWriter final : public Writer {
 public:
  void Begin(std::string* out) override {
    out->append("{\"displayTimeUnit\":\"ns\",\"traceEvents\":[");
  }
  void Add(const Context& ctx, const ExportRequest& r,
           std::string* out) override {
    if (!have_origin_) {
      origin_ = ctx.Call(r.calls[0].call).call_ns;
      have_origin_ = true;
    }
    const std::string trace_id = HexId(r.trace_id);
    std::vector<uint32_t> lane_of(r.calls.size());
    for (size_t k = 0; k < r.calls.size(); ++k) {
      const ExportCall& ec = r.calls[k];
      const CallInfo& c = ctx.Call(ec.call);
      const trace::TimeNs start = c.call_ns, end = ctx.End(ec.call);
      Node& node = NodeFor(ctx, c.callee, out);
      // First lane free at `start`: everything in a lane ended by its
      // recorded end, so a call starting later cannot overlap any of it.
      size_t lane = 0;
      while (lane < node.lane_end.size() && node.lane_end[lane] > start) ++lane;
      if (lane == node.lane_end.size()) {
        node.lane_end.push_back(end);
        Sep(out);
        out->append(
            "{\"ph\":\"M\",\"name\":\"thread_name\",\"pid\":" +
            std::to_string(node.pid) + ",\"tid\":" + std::to_string(lane + 1) +
            ",\"args\":{\"name\":\"lane " + std::to_string(lane + 1) + "\"}}");
      } else {
        node.lane_end[lane] = end;
      }
      lane_of[k] = static_cast<uint32_t>(lane + 1);
      Sep(out);
      out->append("{\"ph\":\"X\",\"name\":");
      AppendJsonString(out, ctx.SpanName(ec.call));
      out->append(",\"cat\":\"call\",\"pid\":" + std::to_string(node.pid) +
                  ",\"tid\":" + std::to_string(lane_of[k]) + ",\"ts\":");
      AppendMicros(out, start - origin_);
      out->append(",\"dur\":");
      AppendMicros(out, end - start);
      out->append(",\"args\":{\"caller\":");
      AppendJsonString(out, ctx.Name(c.caller));
      if (!ctx.Callid(ec.call).empty()) {
        out->append(",\"callid\":");
        AppendJsonString(out, ctx.Callid(ec.call));
      }
      out->append(",\"trace_id\":\"" + trace_id + "\",\"span_id\":\"" +
                  HexId(ec.span_id) + "\"");
      if (ec.parent < 0) {
        out->append(",\"pattern_rank\":" + std::to_string(r.rank) +
                    ",\"pattern\":");
        AppendJsonString(out, *r.signature);
      }
      out->append("}}");
      if (ec.parent >= 0) {
        // The arrow starts inside the parent's slice (on the caller's
        // process and lane) and binds to the slice that encloses its end.
        const ExportCall& pc = r.calls[static_cast<size_t>(ec.parent)];
        const Node& pnode = nodes_.at(ctx.Call(pc.call).callee);
        const std::string id = HexId(ec.span_id);
        Sep(out);
        out->append(
            "{\"ph\":\"s\",\"name\":\"call\",\"cat\":\"call\",\"id\":\"0x" +
            id + "\",\"pid\":" + std::to_string(pnode.pid) + ",\"tid\":" +
            std::to_string(lane_of[static_cast<size_t>(ec.parent)]) +
            ",\"ts\":");
        AppendMicros(out, start - origin_);
        out->append("}");
        Sep(out);
        out->append(
            "{\"ph\":\"f\",\"bp\":\"e\",\"name\":\"call\",\"cat\":\"call\","
            "\"id\":\"0x" +
            id + "\",\"pid\":" + std::to_string(node.pid) +
            ",\"tid\":" + std::to_string(lane_of[k]) + ",\"ts\":");
        AppendMicros(out, start - origin_);
        out->append("}");
      }
    }
  }
  void End(std::string* out) override {
    out->append(
        "\n],\"otherData\":{\"tool\":\"bbprof nest\",\"bbprof_origin_ns\":\"" +
        std::to_string(origin_) + "\"}}\n");
  }

 private:
  struct Node {
    int pid = 0;
    std::vector<trace::TimeNs> lane_end;
  };
  Node& NodeFor(const Context& ctx, trace::NodeId id, std::string* out) {
    auto [it, inserted] = nodes_.try_emplace(id);
    if (inserted) {
      it->second.pid = static_cast<int>(nodes_.size());
      Sep(out);
      out->append("{\"ph\":\"M\",\"name\":\"process_name\",\"pid\":" +
                  std::to_string(it->second.pid) +
                  ",\"tid\":0,\"args\":{\"name\":");
      AppendJsonString(out, ctx.Name(id));
      out->append("}}");
    }
    return it->second;
  }
  void Sep(std::string* out) {
    out->append(first_ ? "\n" : ",\n");
    first_ = false;
  }
  std::unordered_map<trace::NodeId, Node> nodes_;
  trace::TimeNs origin_ = 0;
  bool have_origin_ = false;
  bool first_ = true;
};

// One row per request. CSV per RFC 4180 (fields with a comma, quote or line
// break quoted, quotes doubled, CRLF line ends); TSV as the IANA
// text/tab-separated-values type has it (no quoting: a tab or line break
// inside a field becomes a space).
class TableWriter final : public Writer {
 public:
  explicit TableWriter(bool tsv) : tsv_(tsv) {}
  void Begin(std::string* out) override {
    Row(out, {"trace_id", "start", "pattern_rank", "pattern_signature",
              "caller", "root_node", "root_op", "latency_s", "calls",
              "most_time_node", "most_time_op", "most_time_own_s"});
  }
  void Add(const Context& ctx, const ExportRequest& r,
           std::string* out) override {
    // Own time of each call: its latency minus the union of its children's
    // intervals (clipped to it), so parallel children count once.
    std::vector<std::vector<std::pair<trace::TimeNs, trace::TimeNs>>> kids(
        r.calls.size());
    for (size_t k = 1; k < r.calls.size(); ++k) {
      uint32_t i = r.calls[k].call;
      kids[static_cast<size_t>(r.calls[k].parent)].emplace_back(
          ctx.Call(i).call_ns, ctx.End(i));
    }
    size_t best = 0;
    trace::TimeNs best_own = -1;
    for (size_t k = 0; k < r.calls.size(); ++k) {
      uint32_t i = r.calls[k].call;
      const trace::TimeNs s = ctx.Call(i).call_ns, e = ctx.End(i);
      auto& iv = kids[k];
      std::sort(iv.begin(), iv.end());
      trace::TimeNs covered = 0, cur_s = 0, cur_e = 0;
      bool open = false;
      for (auto [a, b] : iv) {
        a = std::clamp(a, s, e);
        b = std::clamp(b, s, e);
        if (open && a <= cur_e) {
          cur_e = std::max(cur_e, b);
          continue;
        }
        if (open) covered += cur_e - cur_s;
        cur_s = a;
        cur_e = b;
        open = true;
      }
      if (open) covered += cur_e - cur_s;
      const trace::TimeNs own = (e - s) - covered;
      if (own > best_own) {
        best_own = own;
        best = k;
      }
    }
    const uint32_t root = r.calls[0].call, top = r.calls[best].call;
    char lat[40], own[40];
    std::snprintf(lat, sizeof lat, "%.9f",
                  trace::NsToSeconds(ctx.End(root) - ctx.Call(root).call_ns));
    std::snprintf(own, sizeof own, "%.9f", trace::NsToSeconds(best_own));
    Row(out, {HexId(r.trace_id), IsoTime(ctx.Call(root).call_ns),
              std::to_string(r.rank), *r.signature,
              std::string(ctx.Name(ctx.Call(root).caller)),
              std::string(ctx.Name(ctx.Call(root).callee)),
              std::string(ctx.Op(root)), lat, std::to_string(r.calls.size()),
              std::string(ctx.Name(ctx.Call(top).callee)),
              std::string(ctx.Op(top)), own});
  }
  void End(std::string*) override {}

 private:
  void Row(std::string* out, std::initializer_list<std::string> fields) {
    bool first = true;
    for (const std::string& f : fields) {
      if (!first) out->push_back(tsv_ ? '\t' : ',');
      first = false;
      if (tsv_) {
        for (char c : f)
          out->push_back(c == '\t' || c == '\n' || c == '\r' ? ' ' : c);
      } else if (f.find_first_of(",\"\r\n") != std::string::npos) {
        out->push_back('"');
        for (char c : f) {
          if (c == '"') out->push_back('"');
          out->push_back(c);
        }
        out->push_back('"');
      } else {
        out->append(f);
      }
    }
    out->append(tsv_ ? "\n" : "\r\n");
  }
  bool tsv_;
};

std::unique_ptr<Writer> MakeWriter(RequestFormat f) {
  switch (f) {
    case RequestFormat::kJaeger:
      return std::make_unique<JaegerWriter>();
    case RequestFormat::kOtlp:
      return std::make_unique<OtlpWriter>();
    case RequestFormat::kChrome:
      return std::make_unique<ChromeWriter>();
    case RequestFormat::kCsv:
      return std::make_unique<TableWriter>(false);
    case RequestFormat::kTsv:
      return std::make_unique<TableWriter>(true);
  }
  return nullptr;
}

bool EndsWith(std::string_view s, std::string_view suffix) {
  return s.size() >= suffix.size() &&
         s.substr(s.size() - suffix.size()) == suffix;
}

}  // namespace

std::optional<RequestFormat> RequestFormatFromName(std::string_view name) {
  if (name == "jaeger") return RequestFormat::kJaeger;
  if (name == "otlp") return RequestFormat::kOtlp;
  if (name == "chrome" || name == "perfetto") return RequestFormat::kChrome;
  if (name == "csv") return RequestFormat::kCsv;
  if (name == "tsv") return RequestFormat::kTsv;
  return std::nullopt;
}

std::string_view RequestFormatName(RequestFormat format) {
  switch (format) {
    case RequestFormat::kJaeger:
      return "jaeger";
    case RequestFormat::kOtlp:
      return "otlp";
    case RequestFormat::kChrome:
      return "chrome";
    case RequestFormat::kCsv:
      return "csv";
    case RequestFormat::kTsv:
      return "tsv";
  }
  return "";
}

std::optional<RequestFormat> RequestFormatForPath(std::string_view path) {
  for (std::string_view z : {".gz", ".zst"}) {
    if (EndsWith(path, z)) path.remove_suffix(z.size());
  }
  if (EndsWith(path, ".jaeger.json")) return RequestFormat::kJaeger;
  if (EndsWith(path, ".otlp.json") || EndsWith(path, ".otlp.jsonl")) {
    return RequestFormat::kOtlp;
  }
  if (EndsWith(path, ".chrome.json") || EndsWith(path, ".perfetto.json")) {
    return RequestFormat::kChrome;
  }
  if (EndsWith(path, ".csv")) return RequestFormat::kCsv;
  if (EndsWith(path, ".tsv")) return RequestFormat::kTsv;
  return std::nullopt;
}

std::string HexId(uint64_t v) {
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016" PRIx64, v);
  return buf;
}

std::string HexId(const TraceId& id) { return HexId(id.hi) + HexId(id.lo); }

std::string IsoTime(trace::TimeNs ns) {
  int64_t sec = ns / trace::kNsPerSecond, frac = ns % trace::kNsPerSecond;
  if (frac < 0) {
    frac += trace::kNsPerSecond;
    --sec;
  }
  std::time_t t = static_cast<std::time_t>(sec);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[64];
  std::snprintf(buf, sizeof buf, "%04d-%02d-%02dT%02d:%02d:%02d.%09" PRId64 "Z",
                tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday, tm.tm_hour,
                tm.tm_min, tm.tm_sec, frac);
  return buf;
}

namespace {

// Every request of `d` whose root call i passes want(i), in root call order
// (the call's index: the order the calls were stamped), each with its calls
// in depth-first pre-order and its ids; visit(i, request) may stop the walk
// with an error.
template <class Want, class Visit>
Status ForEachRequest(const DetailedResult& d, Want&& want, Visit&& visit) {
  const auto& calls = d.calls;
  // Children of every call, in call order (compressed rows).
  const uint32_t n = static_cast<uint32_t>(calls.size());
  std::vector<uint32_t> first(n + 1, 0), kids;
  for (uint32_t i = 0; i < n; ++i) {
    if (calls[i].matched && calls[i].parent != kNoParent)
      ++first[calls[i].parent + 1];
  }
  for (uint32_t i = 0; i < n; ++i) first[i + 1] += first[i];
  kids.resize(first[n]);
  {
    std::vector<uint32_t> fill(first.begin(), first.end() - 1);
    for (uint32_t i = 0; i < n; ++i) {
      if (calls[i].matched && calls[i].parent != kNoParent) {
        kids[fill[calls[i].parent]++] = i;
      }
    }
  }
  ExportRequest req;
  std::vector<std::pair<uint32_t, int32_t>> stack;
  for (uint32_t i = 0; i < n; ++i) {
    const CallInfo& c = calls[i];
    if (!c.matched || c.parent != kNoParent || c.root_pattern == kNoParent)
      continue;
    if (!want(i)) continue;
    uint64_t h = HashBytes(0xCBF29CE484222325ULL, d.node_names[c.caller]);
    h = HashBytes(HashInt(h, 0xFF), d.node_names[c.callee]);
    h = HashBytes(HashInt(h, static_cast<uint64_t>(c.call_ns)),
                  d.labels.callids[i]);
    req.trace_id = {Mix64(h ^ 0x5851F42D4C957F2DULL), Mix64(h)};
    req.calls.clear();
    stack.assign(1, {i, -1});
    while (!stack.empty()) {
      auto [call, parent] = stack.back();
      stack.pop_back();
      const int32_t pos = static_cast<int32_t>(req.calls.size());
      const CallInfo& cc = calls[call];
      uint64_t sh = HashInt(req.trace_id.lo, static_cast<uint64_t>(pos));
      sh = HashInt(HashInt(sh, static_cast<uint64_t>(cc.call_ns)), cc.callee);
      sh = Mix64(HashBytes(sh, d.labels.callids[call]));
      req.calls.push_back({call, parent, sh == 0 ? 1 : sh});
      // Pushed in reverse so that children come out in call order.
      for (uint32_t k = first[call + 1]; k > first[call]; --k) {
        stack.emplace_back(kids[k - 1], pos);
      }
    }
    BBPROF_RETURN_IF_ERROR(visit(i, req));
  }
  return Status::Ok();
}

// The rank (1, 2, ...) of each reported pattern, by signature: the first
// of equal signatures.
std::unordered_map<std::string_view, int> RanksBySignature(
    const std::vector<Pattern>& reported) {
  std::unordered_map<std::string_view, int> rank_of;
  for (size_t k = 0; k < reported.size(); ++k) {
    rank_of.emplace(reported[k].signature, static_cast<int>(k + 1));
  }
  return rank_of;
}

// The export's file: its writer, written 64 KiB at a time.
class RequestOutput {
 public:
  Status Open(RequestFormat format, const std::string& path) {
    auto out = trace::OpenOutputStream(path);
    if (!out.ok()) return out.status();
    out_ = std::move(*out);
    writer_ = MakeWriter(format);
    writer_->Begin(&buf_);
    return Status::Ok();
  }
  Status Add(const Context& ctx, const ExportRequest& r) {
    writer_->Add(ctx, r, &buf_);
    ++stats_.requests;
    stats_.calls += r.calls.size();
    if (buf_.size() < (1u << 16)) return Status::Ok();
    Status s = out_->Write(buf_);
    buf_.clear();
    return s;
  }
  Result<ExportStats> Finish() {
    writer_->End(&buf_);
    BBPROF_RETURN_IF_ERROR(out_->Write(buf_));
    BBPROF_RETURN_IF_ERROR(out_->Close());
    return stats_;
  }

 private:
  std::unique_ptr<trace::OutputStream> out_;
  std::unique_ptr<Writer> writer_;
  std::string buf_;
  ExportStats stats_;
};

}  // namespace

Result<ExportStats> ExportRequests(const DetailedResult& d,
                                   const std::vector<Pattern>& reported,
                                   RequestFormat format,
                                   const std::string& path) {
  if (d.labels.callids.size() != d.calls.size()) {
    return Status::Error("ExportRequests needs a run with call labels");
  }
  // Rank of every reported pattern, by discovery index.
  const std::unordered_map<std::string_view, int> rank_of =
      RanksBySignature(reported);
  std::vector<int> rank(d.pattern_signatures.size(), 0);
  for (size_t p = 0; p < rank.size(); ++p) {
    auto it = rank_of.find(d.pattern_signatures[p]);
    if (it != rank_of.end()) rank[p] = it->second;
  }
  RequestOutput out;
  BBPROF_RETURN_IF_ERROR(out.Open(format, path));
  const Context ctx{&d};
  Progress progress("nest: writing requests", d.calls.size(), false);
  BBPROF_RETURN_IF_ERROR(ForEachRequest(
      d, [&](uint32_t i) { return rank[d.calls[i].root_pattern] != 0; },
      [&](uint32_t i, ExportRequest& req) {
        progress.Update(i);
        req.rank = rank[d.calls[i].root_pattern];
        req.signature = &d.pattern_signatures[d.calls[i].root_pattern];
        return out.Add(ctx, req);
      }));
  progress.Finish();
  return out.Finish();
}

// The spool's file: records of requests, each segment's in chunks of about
// 1 MiB (a request never spans two), appended in the order segments finish;
// `chunks` finds a segment's in order. A record: the pattern's shape index
// in its segment, the call count, the trace id, then per call its parent's
// position, span id, times, the assumed-return flag, its caller, callee and
// op (ids the spool shares across segments) and its callid.
struct RequestSpool::State {
  int fd = -1;
  std::string dir;
  std::mutex mu;
  uint64_t end = 0;  // bytes written
  std::map<uint64_t, std::vector<std::pair<uint64_t, uint64_t>>> chunks;
  std::map<uint64_t, std::vector<std::string>> shapes;  // by segment
  std::vector<std::string> names, op_names;             // shared ids
  std::unordered_map<std::string, uint32_t> name_id, op_id;
  std::unordered_map<std::string, std::string> signature_of;  // by shape

  Status Error(const std::string& what) const {
    return Status::Error(what + " in " + dir + " (" + std::strerror(errno) +
                         "); set TMPDIR to a writable folder with room for "
                         "the requests, or use --search memory");
  }
  Status Append(uint64_t k, const std::string& bytes) {
    std::lock_guard lock(mu);
    const char* p = bytes.data();
    size_t left = bytes.size();
    uint64_t at = end;
    while (left > 0) {
      const ssize_t n = ::pwrite(fd, p, left, static_cast<off_t>(at));
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) return Error("cannot write the requests' spool file");
      p += n;
      at += static_cast<uint64_t>(n);
      left -= static_cast<size_t>(n);
    }
    chunks[k].emplace_back(end, bytes.size());
    end = at;
    return Status::Ok();
  }
  // `size` bytes of the file from `at` into out[offset...].
  Status Read(uint64_t at, uint64_t size, std::string* out,
              size_t offset) const {
    size_t got = 0;
    while (got < size) {
      const ssize_t n = ::pread(fd, out->data() + offset + got, size - got,
                                static_cast<off_t>(at + got));
      if (n < 0 && errno == EINTR) continue;
      if (n < 0) return Error("cannot read the requests' spool file");
      if (n == 0) {
        return Status::Error("the requests' spool file came back short");
      }
      got += static_cast<size_t>(n);
    }
    return Status::Ok();
  }
  // The shared id of a name, given (under the lock) when first seen.
  static uint32_t Intern(const std::string& name, std::vector<std::string>* all,
                         std::unordered_map<std::string, uint32_t>* ids) {
    auto [it, inserted] =
        ids->try_emplace(name, static_cast<uint32_t>(all->size()));
    if (inserted) all->push_back(name);
    return it->second;
  }
};

namespace {

template <class T>
void Put(std::string* out, T v) {
  out->append(reinterpret_cast<const char*>(&v), sizeof v);
}
template <class T>
bool Get(std::string_view* in, T* v) {
  if (in->size() < sizeof *v) return false;
  std::memcpy(v, in->data(), sizeof *v);
  in->remove_prefix(sizeof *v);
  return true;
}

// One spooled request, as the spool's file holds it.
struct SpooledCall {
  int32_t parent;  // position in the request, -1 for the root
  uint64_t span_id;
  trace::TimeNs call_ns, ret_ns;
  uint8_t imputed;
  uint32_t caller, callee, op;  // the spool's shared ids
  std::string callid;
};
struct SpooledRequest {
  uint32_t shape;  // index into its segment's shapes
  TraceId trace_id;
  std::vector<SpooledCall> calls;
};

void PutRequest(const SpooledRequest& r, std::string* out) {
  Put(out, r.shape);
  Put<uint32_t>(out, static_cast<uint32_t>(r.calls.size()));
  Put(out, r.trace_id.hi);
  Put(out, r.trace_id.lo);
  for (const SpooledCall& c : r.calls) {
    Put(out, c.parent);
    Put(out, c.span_id);
    Put(out, c.call_ns);
    Put(out, c.ret_ns);
    Put(out, c.imputed);
    Put(out, c.caller);
    Put(out, c.callee);
    Put(out, c.op);
    Put<uint32_t>(out, static_cast<uint32_t>(c.callid.size()));
    out->append(c.callid);
  }
}

// The next request of a chunk; false when the chunk ends inside one or a
// call's parent is not before it.
bool GetRequest(std::string_view* in, SpooledRequest* r) {
  uint32_t n = 0;
  if (!Get(in, &r->shape) || !Get(in, &n) || !Get(in, &r->trace_id.hi) ||
      !Get(in, &r->trace_id.lo)) {
    return false;
  }
  r->calls.resize(n);
  for (uint32_t k = 0; k < n; ++k) {
    SpooledCall& c = r->calls[k];
    uint32_t len = 0;
    if (!Get(in, &c.parent) || !Get(in, &c.span_id) || !Get(in, &c.call_ns) ||
        !Get(in, &c.ret_ns) || !Get(in, &c.imputed) || !Get(in, &c.caller) ||
        !Get(in, &c.callee) || !Get(in, &c.op) || !Get(in, &len) ||
        in->size() < len || c.parent >= static_cast<int32_t>(k)) {
      return false;
    }
    c.callid.assign(in->substr(0, len));
    in->remove_prefix(len);
  }
  return true;
}

}  // namespace

RequestSpool::RequestSpool() : state_(std::make_unique<State>()) {}
RequestSpool::~RequestSpool() {
  if (state_->fd >= 0) ::close(state_->fd);
}

Status RequestSpool::Create() {
  const char* env = std::getenv("TMPDIR");
  state_->dir = env != nullptr && *env != '\0' ? env : "/tmp";
  std::string tmpl = state_->dir + "/bbprof-requests-XXXXXX";
  state_->fd = ::mkstemp(tmpl.data());
  if (state_->fd < 0)
    return state_->Error("cannot create the requests' spool file");
  ::unlink(tmpl.c_str());
  return Status::Ok();
}

Status RequestSpool::AddSegment(uint64_t k, const DetailedResult& d,
                                const std::vector<std::string>& shapes) {
  if (d.labels.callids.size() != d.calls.size()) {
    return Status::Error("RequestSpool needs a run with call labels");
  }
  State& st = *state_;
  // The segment's node and op ids to the spool's, as they are first used.
  std::vector<uint32_t> node_of(d.node_names.size(), kNoParent);
  std::vector<uint32_t> op_of(d.labels.op_names.size(), kNoParent);
  auto shared = [&](std::vector<uint32_t>& ids, uint32_t id,
                    const std::vector<std::string>& local, bool op) {
    if (ids[id] == kNoParent) {
      std::lock_guard lock(st.mu);
      ids[id] = op ? State::Intern(local[id], &st.op_names, &st.op_id)
                   : State::Intern(local[id], &st.names, &st.name_id);
    }
    return ids[id];
  };
  {
    std::lock_guard lock(st.mu);
    st.shapes[k] = shapes;
  }
  std::string buf;
  SpooledRequest r;
  BBPROF_RETURN_IF_ERROR(ForEachRequest(
      d, [](uint32_t) { return true; },
      [&](uint32_t i, ExportRequest& req) {
        r.shape = d.calls[i].root_pattern;
        r.trace_id = req.trace_id;
        r.calls.resize(req.calls.size());
        for (size_t c = 0; c < req.calls.size(); ++c) {
          const ExportCall& ec = req.calls[c];
          const CallInfo& info = d.calls[ec.call];
          r.calls[c] = {
              ec.parent,
              ec.span_id,
              info.call_ns,
              info.ret_ns,
              static_cast<uint8_t>(info.imputed ? 1 : 0),
              shared(node_of, info.caller, d.node_names, false),
              shared(node_of, info.callee, d.node_names, false),
              shared(op_of, d.labels.ops[ec.call], d.labels.op_names, true),
              d.labels.callids[ec.call]};
        }
        PutRequest(r, &buf);
        if (buf.size() < (1u << 20)) return Status::Ok();
        Status s = st.Append(k, buf);
        buf.clear();
        return s;
      }));
  return buf.empty() ? Status::Ok() : st.Append(k, buf);
}

void RequestSpool::SetSignatures(const std::vector<Pattern>& all) {
  for (const Pattern& p : all)
    state_->signature_of.emplace(p.shape, p.signature);
}

Result<ExportStats> RequestSpool::Export(const std::vector<Pattern>& reported,
                                         RequestFormat format,
                                         const std::string& path) {
  State& st = *state_;
  // Ranks as ExportRequests gives them; a shape's signature is its merged
  // pattern's.
  const std::unordered_map<std::string_view, int> rank_of =
      RanksBySignature(reported);
  RequestOutput out;
  BBPROF_RETURN_IF_ERROR(out.Open(format, path));
  DetailedResult one;  // one request's calls, read back
  one.node_names = st.names;
  one.labels.op_names = st.op_names;
  const Context ctx{&one};
  ExportRequest req;
  SpooledRequest r;
  std::string bytes;
  Progress progress("nest: writing requests", st.end, false);
  uint64_t read = 0;  // of st.end
  for (const auto& [k, chunks] : st.chunks) {
    const std::vector<std::string>& shapes = st.shapes[k];
    // A segment's ranks and signatures, by its shape index.
    std::vector<int> rank(shapes.size(), 0);
    std::vector<const std::string*> signature(shapes.size(), nullptr);
    for (size_t p = 0; p < shapes.size(); ++p) {
      auto sig = st.signature_of.find(shapes[p]);
      if (sig == st.signature_of.end()) continue;
      signature[p] = &sig->second;
      auto it = rank_of.find(sig->second);
      if (it != rank_of.end()) rank[p] = it->second;
    }
    for (const auto& [at, size] : chunks) {
      bytes.resize(size);
      BBPROF_RETURN_IF_ERROR(st.Read(at, size, &bytes, 0));
      std::string_view in(bytes);
      read += size;
      while (!in.empty()) {
        progress.Update(read - in.size());
        if (!GetRequest(&in, &r) || r.shape >= shapes.size()) {
          return Status::Error("the requests' spool file is malformed");
        }
        const size_t n = r.calls.size();
        one.calls.resize(n);
        one.labels.callids.resize(n);
        one.labels.ops.resize(n);
        req.calls.resize(n);
        for (size_t c = 0; c < n; ++c) {
          SpooledCall& sc = r.calls[c];
          if (sc.caller >= st.names.size() || sc.callee >= st.names.size() ||
              sc.op >= st.op_names.size()) {
            return Status::Error("the requests' spool file is malformed");
          }
          CallInfo& ci = one.calls[c];
          ci.matched = true;
          ci.imputed = sc.imputed != 0;
          ci.call_ns = sc.call_ns;
          ci.ret_ns = sc.ret_ns;
          ci.caller = sc.caller;
          ci.callee = sc.callee;
          one.labels.ops[c] = sc.op;
          one.labels.callids[c] = std::move(sc.callid);
          req.calls[c] = {static_cast<uint32_t>(c), sc.parent, sc.span_id};
        }
        if (rank[r.shape] == 0) continue;
        req.rank = rank[r.shape];
        req.trace_id = r.trace_id;
        req.signature = signature[r.shape];
        BBPROF_RETURN_IF_ERROR(out.Add(ctx, req));
      }
    }
  }
  progress.Finish();
  return out.Finish();
}

namespace {

void PutString(std::string* out, std::string_view v) {
  Put<uint32_t>(out, static_cast<uint32_t>(v.size()));
  out->append(v);
}
bool GetString(std::string_view* in, std::string* v) {
  uint32_t n = 0;
  if (!Get(in, &n) || in->size() < n) return false;
  v->assign(in->substr(0, n));
  in->remove_prefix(n);
  return true;
}

}  // namespace

Status RequestSpool::SendTo(
    const std::function<Status(const Message&)>& send) const {
  const State& st = *state_;
  Message tables = "T";
  Put<uint32_t>(&tables, static_cast<uint32_t>(st.names.size()));
  for (const std::string& n : st.names) PutString(&tables, n);
  Put<uint32_t>(&tables, static_cast<uint32_t>(st.op_names.size()));
  for (const std::string& n : st.op_names) PutString(&tables, n);
  Put<uint32_t>(&tables, static_cast<uint32_t>(st.shapes.size()));
  for (const auto& [k, shapes] : st.shapes) {
    Put<uint64_t>(&tables, k);
    Put<uint32_t>(&tables, static_cast<uint32_t>(shapes.size()));
    for (const std::string& sh : shapes) PutString(&tables, sh);
    auto it = st.chunks.find(k);
    Put<uint32_t>(&tables, it == st.chunks.end()
                               ? 0u
                               : static_cast<uint32_t>(it->second.size()));
  }
  BBPROF_RETURN_IF_ERROR(send(tables));
  Message chunk;
  for (const auto& [k, chunks] : st.chunks) {
    for (const auto& [at, size] : chunks) {
      chunk.assign(1, 'C');
      chunk.resize(1 + size);
      if (Status failed = st.Read(at, size, &chunk, 1); !failed.ok()) {
        // The receiver waits for this chunk: tell it why none comes.
        BBPROF_RETURN_IF_ERROR(send("E" + failed.message()));
        return failed;
      }
      BBPROF_RETURN_IF_ERROR(send(chunk));
    }
  }
  return Status::Ok();
}

Status RequestSpool::ReceiveFrom(
    const std::function<Result<Message>()>& receive) {
  State& st = *state_;
  const Status malformed =
      Status::Error("another rank's requests came back malformed");
  auto next = [&](char kind) -> Result<Message> {
    Result<Message> m = receive();
    if (!m.ok()) return m.status();
    if (!m->empty() && (*m)[0] == 'E') return Status::Error(m->substr(1));
    if (m->empty() || (*m)[0] != kind) return malformed;
    return m;
  };
  Result<Message> tables = next('T');
  if (!tables.ok()) return tables.status();
  std::string_view in(*tables);
  in.remove_prefix(1);
  // Their node and op ids to this spool's.
  std::vector<uint32_t> node_of, op_of;
  for (auto* map : {&node_of, &op_of}) {
    uint32_t n = 0;
    if (!Get(&in, &n)) return malformed;
    std::string name;
    for (uint32_t i = 0; i < n; ++i) {
      if (!GetString(&in, &name)) return malformed;
      std::lock_guard lock(st.mu);
      map->push_back(map == &node_of
                         ? State::Intern(name, &st.names, &st.name_id)
                         : State::Intern(name, &st.op_names, &st.op_id));
    }
  }
  uint32_t segments = 0;
  if (!Get(&in, &segments)) return malformed;
  std::vector<std::pair<uint64_t, uint32_t>> chunk_counts;
  for (uint32_t s = 0; s < segments; ++s) {
    uint64_t k = 0;
    uint32_t n = 0, chunks = 0;
    if (!Get(&in, &k) || !Get(&in, &n)) return malformed;
    std::vector<std::string> shapes(n);
    for (std::string& sh : shapes) {
      if (!GetString(&in, &sh)) return malformed;
    }
    if (!Get(&in, &chunks)) return malformed;
    {
      std::lock_guard lock(st.mu);
      st.shapes[k] = std::move(shapes);
    }
    chunk_counts.emplace_back(k, chunks);
  }
  // Every chunk the tables announced is received, even after a failure
  // here (a full disk), so that the sender never waits on a receive that
  // does not come; only a failure the sender reports ends it early.
  Status failed = Status::Ok();
  SpooledRequest r;
  std::string bytes;
  for (const auto& [k, chunks] : chunk_counts) {
    for (uint32_t c = 0; c < chunks; ++c) {
      Result<Message> m = next('C');
      if (!m.ok()) return m.status();
      if (!failed.ok()) continue;
      // Each request again, its node and op ids made this spool's.
      std::string_view chunk(*m);
      chunk.remove_prefix(1);
      bytes.clear();
      while (failed.ok() && !chunk.empty()) {
        bool ok = GetRequest(&chunk, &r);
        for (SpooledCall& call : r.calls) {
          ok = ok && call.caller < node_of.size() &&
               call.callee < node_of.size() && call.op < op_of.size();
          if (!ok) break;
          call.caller = node_of[call.caller];
          call.callee = node_of[call.callee];
          call.op = op_of[call.op];
        }
        if (!ok) failed = malformed;
        PutRequest(r, &bytes);
      }
      if (failed.ok()) failed = st.Append(k, bytes);
    }
  }
  return failed;
}

}  // namespace bbprof::nesting
