// ParseSpans: Jaeger, OTLP and Zipkin v2 JSON to Span. The three formats
// carry the same facts under different names and units (Jaeger and Zipkin
// in microseconds as numbers, OTLP in nanoseconds as decimal strings); each
// parser reads only those facts and leaves everything else alone, so that
// exports with extra fields (logs, events, links, warnings) read fine.
#include <cctype>
#include <limits>
#include <nlohmann/json.hpp>
#include <string>

#include "spans/spans.h"

namespace bbprof::spans {

namespace {

using Json = nlohmann::json;

constexpr trace::TimeNs kMaxTime = std::numeric_limits<trace::TimeNs>::max();

const Json* Field(const Json& obj, const char* key) {
  if (!obj.is_object()) return nullptr;
  auto it = obj.find(key);
  if (it == obj.end() || it->is_null()) return nullptr;
  return &*it;
}

std::string StringField(const Json& obj, const char* key) {
  const Json* f = Field(obj, key);
  return f != nullptr && f->is_string() ? f->get<std::string>() : std::string();
}

// A time or duration in `unit_ns` units: a non-negative integer, as a JSON
// number or (OTLP's 64-bit fields) a decimal string. False when missing,
// negative, fractional, not a number or beyond 2^63 ns.
bool TimeField(const Json& obj, const char* key, trace::TimeNs unit_ns,
               trace::TimeNs* out) {
  const Json* f = Field(obj, key);
  if (f == nullptr) return false;
  uint64_t v = 0;
  if (f->is_number_unsigned()) {
    v = f->get<uint64_t>();
  } else if (f->is_number_integer()) {
    if (f->get<int64_t>() < 0) return false;
    v = static_cast<uint64_t>(f->get<int64_t>());
  } else if (f->is_number_float()) {
    double d = f->get<double>();
    if (!(d >= 0 && d < 9.2e18) ||
        d != static_cast<double>(static_cast<uint64_t>(d))) {
      return false;
    }
    v = static_cast<uint64_t>(d);
  } else if (f->is_string()) {
    const std::string& s = f->get_ref<const std::string&>();
    if (s.empty() || s.size() > 19) return false;
    for (char c : s) {
      if (c < '0' || c > '9') return false;
      v = v * 10 + static_cast<uint64_t>(c - '0');
    }
  } else {
    return false;
  }
  if (v > static_cast<uint64_t>(kMaxTime / unit_ns)) return false;
  *out = static_cast<trace::TimeNs>(v) * unit_ns;
  return true;
}

// Checks the fields every format must give and keeps the span, or counts it
// under the first reason it fails.
void Keep(Span span, bool start_ok, bool end_ok, std::vector<Span>* out,
          Counters* counters) {
  const char* reason = nullptr;
  if (span.trace_id.empty()) {
    reason = "span_without_trace_id";
  } else if (span.span_id.empty()) {
    reason = "span_without_span_id";
  } else if (span.service.empty()) {
    reason = "span_without_service";
  } else if (!start_ok) {
    reason = "span_bad_start_time";
  } else if (!end_ok || span.end_ns < span.start_ns) {
    reason = "span_bad_duration";
  }
  if (reason != nullptr) {
    ++(*counters)[reason];
    return;
  }
  out->push_back(std::move(span));
}

// Jaeger and Zipkin: a start and a duration, both in microseconds.
void KeepWithDuration(Span span, const Json& js, const char* start_key,
                      const char* duration_key, std::vector<Span>* out,
                      Counters* counters) {
  trace::TimeNs duration = 0;
  const bool start_ok = TimeField(js, start_key, 1000, &span.start_ns);
  const bool end_ok = TimeField(js, duration_key, 1000, &duration) &&
                      start_ok && duration <= kMaxTime - span.start_ns;
  span.end_ns = end_ok ? span.start_ns + duration : span.start_ns;
  Keep(std::move(span), start_ok, end_ok, out, counters);
}

// "client", "SERVER", ... (Jaeger's span.kind tag, Zipkin's kind).
SpanKind KindFromName(std::string name, Counters* counters) {
  for (char& c : name)
    c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  if (name == "client") return SpanKind::kClient;
  if (name == "server") return SpanKind::kServer;
  if (name == "producer") return SpanKind::kProducer;
  if (name == "consumer") return SpanKind::kConsumer;
  if (!name.empty() && name != "internal") ++(*counters)["span_unknown_kind"];
  return SpanKind::kInternal;
}

// --- Jaeger (the UI's "Download JSON" and the query API) ---

// Tags are [{"key": K, "type": T, "value": V}]; returns V when a string.
std::string JaegerTag(const Json& span, const char* key) {
  const Json* tags = Field(span, "tags");
  if (tags == nullptr || !tags->is_array()) return {};
  for (const Json& t : *tags) {
    if (StringField(t, "key") == key) return StringField(t, "value");
  }
  return {};
}

void ParseJaegerTrace(const Json& tr, std::vector<Span>* out,
                      Counters* counters) {
  const Json* spans = Field(tr, "spans");
  if (spans == nullptr || !spans->is_array()) {
    ++(*counters)["trace_without_spans"];
    return;
  }
  const Json* processes = Field(tr, "processes");
  const std::string trace_id = StringField(tr, "traceID");
  for (const Json& js : *spans) {
    if (!js.is_object()) {
      ++(*counters)["span_not_an_object"];
      continue;
    }
    Span s;
    s.trace_id = StringField(js, "traceID");
    if (s.trace_id.empty()) s.trace_id = trace_id;
    s.span_id = StringField(js, "spanID");
    s.name = StringField(js, "operationName");
    // The parent: the first CHILD_OF reference within the trace, else the
    // first FOLLOWS_FROM one (Jaeger's OpenTracing model), else the older
    // parentSpanID field.
    if (const Json* refs = Field(js, "references");
        refs != nullptr && refs->is_array()) {
      for (const char* type : {"CHILD_OF", "FOLLOWS_FROM"}) {
        for (const Json& r : *refs) {
          std::string rt = StringField(r, "traceID");
          if (StringField(r, "refType") == type &&
              (rt.empty() || rt == s.trace_id)) {
            s.parent_id = StringField(r, "spanID");
            if (!s.parent_id.empty()) break;
          }
        }
        if (!s.parent_id.empty()) break;
      }
    }
    if (s.parent_id.empty()) s.parent_id = StringField(js, "parentSpanID");
    if (s.parent_id == "0")
      s.parent_id.clear();  // some clients write 0 for none
    s.kind = KindFromName(JaegerTag(js, "span.kind"), counters);
    s.remote_service = JaegerTag(js, "peer.service");
    // The process: embedded (query API) or by id in the trace's table (UI).
    const Json* proc = Field(js, "process");
    if (proc == nullptr && processes != nullptr) {
      proc = Field(*processes, StringField(js, "processID").c_str());
    }
    if (proc != nullptr) s.service = StringField(*proc, "serviceName");
    KeepWithDuration(std::move(s), js, "startTime", "duration", out, counters);
  }
}

Status ParseJaeger(const Json& v, std::vector<Span>* out, Counters* counters) {
  if (const Json* data = Field(v, "data");
      data != nullptr && data->is_array()) {
    for (const Json& tr : *data) ParseJaegerTrace(tr, out, counters);
    return Status::Ok();
  }
  if (Field(v, "spans") != nullptr) {  // one trace on its own
    ParseJaegerTrace(v, out, counters);
    return Status::Ok();
  }
  return Status::Error(
      "not Jaeger JSON (expected an object with a 'data' array of traces, or "
      "one trace with 'spans')");
}

// --- OTLP/JSON (ExportTraceServiceRequest, OTLP 1.x JSON mapping) ---

// Attributes are [{"key": K, "value": {"stringValue": V}}].
std::string OtlpAttribute(const Json& obj, const char* key) {
  const Json* attrs = Field(obj, "attributes");
  if (attrs == nullptr || !attrs->is_array()) return {};
  for (const Json& a : *attrs) {
    if (StringField(a, "key") != key) continue;
    const Json* value = Field(a, "value");
    return value != nullptr ? StringField(*value, "stringValue")
                            : std::string();
  }
  return {};
}

// SpanKind as its number (the protobuf JSON mapping's usual form) or name.
SpanKind OtlpKind(const Json& span, Counters* counters) {
  const Json* k = Field(span, "kind");
  if (k == nullptr) return SpanKind::kInternal;
  if (k->is_number_integer()) {
    switch (k->get<int64_t>()) {
      case 0:  // SPAN_KIND_UNSPECIFIED
      case 1:  // SPAN_KIND_INTERNAL
        return SpanKind::kInternal;
      case 2:
        return SpanKind::kServer;
      case 3:
        return SpanKind::kClient;
      case 4:
        return SpanKind::kProducer;
      case 5:
        return SpanKind::kConsumer;
      default:
        break;
    }
  } else if (k->is_string()) {
    std::string name = k->get<std::string>();
    if (name.rfind("SPAN_KIND_", 0) == 0) name = name.substr(10);
    if (name == "UNSPECIFIED") name = "internal";
    return KindFromName(name, counters);
  }
  ++(*counters)["span_unknown_kind"];
  return SpanKind::kInternal;
}

Status ParseOtlp(const Json& v, std::vector<Span>* out, Counters* counters) {
  const Json* rs = Field(v, "resourceSpans");
  if (rs == nullptr || !rs->is_array()) {
    return Status::Error(
        "not OTLP/JSON (expected an object with a 'resourceSpans' array)");
  }
  for (const Json& r : *rs) {
    std::string service;
    if (const Json* res = Field(r, "resource"))
      service = OtlpAttribute(*res, "service.name");
    // scopeSpans since OTLP 0.15; instrumentationLibrarySpans before.
    const Json* scopes = Field(r, "scopeSpans");
    if (scopes == nullptr) scopes = Field(r, "instrumentationLibrarySpans");
    if (scopes == nullptr || !scopes->is_array()) continue;
    for (const Json& scope : *scopes) {
      const Json* spans = Field(scope, "spans");
      if (spans == nullptr || !spans->is_array()) continue;
      for (const Json& js : *spans) {
        if (!js.is_object()) {
          ++(*counters)["span_not_an_object"];
          continue;
        }
        Span s;
        s.trace_id = StringField(js, "traceId");
        s.span_id = StringField(js, "spanId");
        s.parent_id = StringField(js, "parentSpanId");
        s.name = StringField(js, "name");
        s.kind = OtlpKind(js, counters);
        s.service = service;
        s.remote_service = OtlpAttribute(js, "peer.service");
        bool start_ok = TimeField(js, "startTimeUnixNano", 1, &s.start_ns);
        bool end_ok = TimeField(js, "endTimeUnixNano", 1, &s.end_ns);
        Keep(std::move(s), start_ok, end_ok, out, counters);
      }
    }
  }
  return Status::Ok();
}

// --- Zipkin v2 (a list of spans, or a list of traces as /api/v2/traces) ---

void ParseZipkinSpan(const Json& js, std::vector<Span>* out,
                     Counters* counters) {
  if (!js.is_object()) {
    ++(*counters)["span_not_an_object"];
    return;
  }
  Span s;
  s.trace_id = StringField(js, "traceId");
  s.span_id = StringField(js, "id");
  s.parent_id = StringField(js, "parentId");
  s.name = StringField(js, "name");
  s.kind = KindFromName(StringField(js, "kind"), counters);
  if (const Json* ep = Field(js, "localEndpoint"))
    s.service = StringField(*ep, "serviceName");
  if (const Json* ep = Field(js, "remoteEndpoint")) {
    s.remote_service = StringField(*ep, "serviceName");
  }
  KeepWithDuration(std::move(s), js, "timestamp", "duration", out, counters);
}

Status ParseZipkin(const Json& v, std::vector<Span>* out, Counters* counters) {
  if (!v.is_array()) {
    return Status::Error("not Zipkin v2 JSON (expected an array of spans)");
  }
  for (const Json& e : v) {
    if (e.is_array()) {
      for (const Json& js : e) ParseZipkinSpan(js, out, counters);
    } else {
      ParseZipkinSpan(e, out, counters);
    }
  }
  return Status::Ok();
}

Format Detect(const Json& v) {
  if (v.is_array()) return Format::kZipkin;
  if (Field(v, "resourceSpans") != nullptr) return Format::kOtlp;
  if (Field(v, "data") != nullptr || Field(v, "spans") != nullptr)
    return Format::kJaeger;
  return Format::kAuto;
}

bool IsSpace(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }

// The end of the object or array starting at `begin` (matching brackets
// outside strings), or text.size() when it does not close: the JSON parser
// then reports what is wrong. Lets a file hold several values (JSON Lines).
size_t ValueEnd(std::string_view text, size_t begin) {
  if (text[begin] != '{' && text[begin] != '[') return text.size();
  size_t depth = 0;
  bool in_string = false;
  for (size_t i = begin; i < text.size(); ++i) {
    char c = text[i];
    if (in_string) {
      if (c == '\\') {
        ++i;
      } else if (c == '"') {
        in_string = false;
      }
    } else if (c == '"') {
      in_string = true;
    } else if (c == '{' || c == '[') {
      ++depth;
    } else if (c == '}' || c == ']') {
      if (--depth == 0) return i + 1;
    }
  }
  return text.size();
}

// nlohmann's message without its "[json.exception...] parse error at line L,
// column C: " prefix (the line and column are of the value, not the file;
// the byte offset we print is of the file).
// Bytes outside printable ASCII (the parser quotes what it last read) are
// shown as \xNN, never raw.
std::string ParseErrorText(const std::string& what) {
  size_t p = what.find("column ");
  if (p != std::string::npos) p = what.find(": ", p);
  if (p == std::string::npos) p = what.find("] ");
  const std::string text = p == std::string::npos ? what : what.substr(p + 2);
  std::string out;
  for (char c : text) {
    const auto u = static_cast<unsigned char>(c);
    if (u >= 0x20 && u < 0x7f) {
      out.push_back(c);
    } else {
      static const char kHex[] = "0123456789abcdef";
      out += "\\x";
      out.push_back(kHex[u >> 4]);
      out.push_back(kHex[u & 15]);
    }
  }
  return out;
}

}  // namespace

bool ParseFormat(std::string_view text, Format* out) {
  for (Format f :
       {Format::kAuto, Format::kJaeger, Format::kOtlp, Format::kZipkin}) {
    if (text == FormatName(f)) {
      *out = f;
      return true;
    }
  }
  return false;
}

std::string_view FormatName(Format format) {
  switch (format) {
    case Format::kAuto:
      return "auto";
    case Format::kJaeger:
      return "jaeger";
    case Format::kOtlp:
      return "otlp";
    case Format::kZipkin:
      return "zipkin";
  }
  return "?";
}

Result<Format> ParseSpans(std::string_view text, const std::string& name,
                          Format format, std::vector<Span>* out,
                          Counters* counters) {
  Format last = format;
  size_t pos = 0;
  bool any = false;
  while (true) {
    while (pos < text.size() && IsSpace(text[pos])) ++pos;
    if (pos == text.size()) break;
    const size_t end = ValueEnd(text, pos);
    Json v;
    try {
      v = Json::parse(text.substr(pos, end - pos));
    } catch (const Json::parse_error& e) {
      return Status::Error(name + ": JSON error at byte " +
                           std::to_string(pos + e.byte) + ": " +
                           ParseErrorText(e.what()));
    }
    Format f = format == Format::kAuto ? Detect(v) : format;
    Status s;
    switch (f) {
      case Format::kJaeger:
        s = ParseJaeger(v, out, counters);
        break;
      case Format::kOtlp:
        s = ParseOtlp(v, out, counters);
        break;
      case Format::kZipkin:
        s = ParseZipkin(v, out, counters);
        break;
      case Format::kAuto:
        s = Status::Error(
            "not Jaeger, OTLP or Zipkin JSON (expected an object with 'data' "
            "(Jaeger), an object with 'resourceSpans' (OTLP) or an array of "
            "spans (Zipkin v2))");
        break;
    }
    if (!s.ok()) {
      return s.WithContext(name + ": value at byte " + std::to_string(pos + 1));
    }
    last = f;
    any = true;
    pos = end;
  }
  if (!any) return Status::Error(name + ": empty file (expected span JSON)");
  return last;
}

}  // namespace bbprof::spans
