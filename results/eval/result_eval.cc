#include "results/eval/result_eval.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <functional>
#include <istream>
#include <limits>
#include <sstream>
#include <streambuf>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "nesting/requests/request_export.h"
#include "results/writer.h"
#include "trace/byte_stream.h"
#include "trace/reader.h"

namespace bbprof::nesting {

namespace {

using json = nlohmann::json;

// A pattern as both sides describe it: its shape (the tree with children in
// a canonical order, so that two display orders of one tree compare equal),
// instance count and mean root latency.
struct ScoredPattern {
  std::string shape;
  std::string signature;
  uint64_t count = 0;
  double mean_latency_s = 0;
};

// Canonical key of a result JSON node: name (and operation, when the node
// has one), then the children's keys sorted.
std::string ShapeKey(const json& node) {
  std::string key = node.at("node").get<std::string>();
  if (node.contains("op") && node["op"].is_string() &&
      !node["op"].get<std::string>().empty()) {
    key += "[" + node["op"].get<std::string>() + "]";
  }
  std::vector<std::string> kids;
  if (node.contains("children")) {
    for (const json& c : node.at("children")) kids.push_back(ShapeKey(c));
  }
  std::sort(kids.begin(), kids.end());
  if (!kids.empty()) {
    key += '(';
    for (size_t i = 0; i < kids.size(); ++i) key += (i ? "," : "") + kids[i];
    key += ')';
  }
  return key;
}

// The patterns of a result document, ranked by count (then as listed).
Result<std::vector<ScoredPattern>> PatternsOf(const json& doc,
                                              const std::string& where) {
  std::vector<ScoredPattern> out;
  try {
    for (const json& p : doc.at("patterns")) {
      const json& root = p.at("root");
      ScoredPattern s;
      s.shape = root.at("caller").get<std::string>() + "->" + ShapeKey(root);
      s.signature = p.at("signature").get<std::string>();
      s.count = p.at("count").get<uint64_t>();
      s.mean_latency_s = root.at("latency_s").at("mean").get<double>();
      out.push_back(std::move(s));
    }
  } catch (const json::exception& e) {
    return Status::Error(where + ": bad \"patterns\": " + e.what());
  }
  std::stable_sort(out.begin(), out.end(),
                   [](const ScoredPattern& a, const ScoredPattern& b) {
                     return a.count > b.count;
                   });
  return out;
}

// Pattern false negatives and positives, Figure 17's top-N curve and the
// latency error of correctly found patterns (section 7.5.1).
void ScorePatterns(const std::vector<ScoredPattern>& tp,
                   const std::vector<ScoredPattern>& ip,
                   const EvalOptions& options, Evaluation* e) {
  std::unordered_map<std::string, const ScoredPattern*> imap, tmap;
  for (const auto& p : ip) imap.emplace(p.shape, &p);
  for (const auto& p : tp) tmap.emplace(p.shape, &p);
  e->true_patterns = tp.size();
  e->inferred_patterns = ip.size();
  for (const auto& p : tp) e->pattern_false_negatives += !imap.count(p.shape);
  for (const auto& p : ip) e->pattern_false_positives += !tmap.count(p.shape);
  const int nt = static_cast<int>(tp.size()), ni = static_cast<int>(ip.size());
  for (int n = 1; n <= options.max_n && n <= nt; ++n) {
    std::unordered_set<std::string> itop;
    for (int k = 0; k < n && k < ni; ++k)
      itop.insert(ip[static_cast<size_t>(k)].shape);
    const double nth =
        n <= ni ? static_cast<double>(ip[static_cast<size_t>(n - 1)].count)
                : 0.0;
    TopNPoint pt;
    pt.n = n;
    for (int k = 0; k < n; ++k) {
      const ScoredPattern& t = tp[static_cast<size_t>(k)];
      if (itop.count(t.shape)) continue;
      ++pt.false_negatives;
      auto it = imap.find(t.shape);
      double have =
          it == imap.end() ? 0.0 : static_cast<double>(it->second->count);
      if (have < (1.0 - options.tolerance) * nth) ++pt.false_negatives_tolerant;
      if (n == std::min(10, nt)) e->missing_top_patterns.push_back(t.signature);
    }
    e->top_n.push_back(pt);
  }
  double wsum = 0, wtot = 0;
  for (const auto& t : tp) {
    auto it = imap.find(t.shape);
    if (it == imap.end() || t.mean_latency_s <= 0) continue;
    double err = std::fabs(it->second->mean_latency_s - t.mean_latency_s) /
                 t.mean_latency_s;
    wsum += err * static_cast<double>(t.count);
    wtot += static_cast<double>(t.count);
    if (t.count >= options.min_count_for_latency &&
        err > e->latency_error_max) {
      e->latency_error_max = err;
      e->latency_error_max_signature = t.signature;
    }
  }
  e->latency_error_weighted = wtot > 0 ? wsum / wtot : 0.0;
}

// One exported span, as much of it as scoring needs.
struct Span {
  std::string trace, id, parent;
  std::string caller, callee, callid;
  trace::TimeNs call_ns = 0;
};

std::string MatchKey(std::string_view caller, std::string_view callee,
                     std::string_view callid, trace::TimeNs call_ns) {
  std::string k;
  k.reserve(caller.size() + callee.size() + callid.size() + 24);
  k.append(caller).push_back('\0');
  k.append(callee).push_back('\0');
  k.append(callid).push_back('\0');
  k.append(std::to_string(call_ns));
  return k;
}

// An InputStream (plain, gzip or zstd) as a std::istream, so the exports
// are parsed as they are read, never held whole.
class InputStreamBuf final : public std::streambuf {
 public:
  explicit InputStreamBuf(trace::InputStream* in) : in_(in), buf_(1 << 16) {}
  const Status& status() const { return status_; }

 protected:
  int_type underflow() override {
    if (gptr() < egptr()) return traits_type::to_int_type(*gptr());
    Result<size_t> n = in_->Read(buf_.data(), buf_.size());
    if (!n.ok()) {
      status_ = n.status();
      return traits_type::eof();
    }
    if (*n == 0) return traits_type::eof();
    setg(buf_.data(), buf_.data(), buf_.data() + *n);
    return traits_type::to_int_type(*gptr());
  }

 private:
  trace::InputStream* in_;
  std::vector<char> buf_;
  Status status_;
};

// SAX handler that builds one element of the top-level "data" array at a
// time (a Jaeger trace) and hands it over, so memory holds one trace.
class DataElements final : public json::json_sax_t {
 public:
  explicit DataElements(std::function<Status(const json&)> on_element)
      : on_element_(std::move(on_element)) {}
  bool saw_data() const { return saw_data_; }
  const Status& status() const { return status_; }
  const std::string& error() const { return error_; }

  bool null() override { return Value(nullptr); }
  bool boolean(bool v) override { return Value(v); }
  bool number_integer(json::number_integer_t v) override { return Value(v); }
  bool number_unsigned(json::number_unsigned_t v) override { return Value(v); }
  bool number_float(json::number_float_t v, const json::string_t&) override {
    return Value(v);
  }
  bool string(json::string_t& v) override { return Value(v); }
  bool binary(json::binary_t& v) override { return Value(json::binary(v)); }
  bool key(json::string_t& k) override {
    key_ = k;
    if (stack_.empty() && depth_ == 1) top_key_ = k;
    return true;
  }
  bool start_object(std::size_t) override { return Open(json::object()); }
  bool start_array(std::size_t) override {
    if (stack_.empty() && depth_ == 1 && top_key_ == "data") {
      in_data_ = saw_data_ = true;
      ++depth_;
      return true;
    }
    return Open(json::array());
  }
  bool end_object() override { return Close(); }
  bool end_array() override {
    if (stack_.empty() && in_data_ && depth_ == 2) in_data_ = false;
    return Close();
  }
  bool parse_error(std::size_t, const std::string&,
                   const nlohmann::detail::exception& e) override {
    error_ = e.what();
    return false;
  }

 private:
  json* Insert(json v) {
    json& top = *stack_.back();
    if (top.is_object()) {
      json& slot = top[key_];
      slot = std::move(v);
      return &slot;
    }
    top.push_back(std::move(v));
    return &top.back();
  }
  bool Value(json v) {
    if (!stack_.empty()) Insert(std::move(v));
    return true;
  }
  bool Open(json v) {
    if (!stack_.empty()) {
      stack_.push_back(Insert(std::move(v)));
    } else if (in_data_ && depth_ == 2) {
      element_ = std::move(v);
      stack_.push_back(&element_);
    } else {
      ++depth_;
    }
    return true;
  }
  bool Close() {
    if (stack_.empty()) {
      --depth_;
      return true;
    }
    stack_.pop_back();
    if (stack_.empty()) {
      status_ = on_element_(element_);
      element_ = nullptr;
      return status_.ok();
    }
    return true;
  }

  std::function<Status(const json&)> on_element_;
  std::vector<json*> stack_;  // open containers of the element being built
  json element_;
  std::string key_, top_key_;
  int depth_ = 0;  // open containers outside any element
  bool in_data_ = false, saw_data_ = false;
  Status status_;
  std::string error_;
};

trace::TimeNs ParseNs(const json& v) {
  return v.is_string() ? std::stoll(v.get<std::string>())
                       : v.get<trace::TimeNs>();
}

// Jaeger UI JSON: callee from the span's process, caller from peer.service,
// the exact call time from the bbprof.call_ns tag.
Status ReadJaeger(const std::string& path, std::istream& in,
                  std::vector<Span>* spans, uint64_t* requests) {
  size_t t = 0;
  DataElements handler([&](const json& tr) -> Status {
    ++t;
    ++*requests;
    size_t k = 0;
    try {
      const json& procs = tr.at("processes");
      for (const json& s : tr.at("spans")) {
        ++k;
        Span sp;
        sp.trace = s.at("traceID").get<std::string>();
        sp.id = s.at("spanID").get<std::string>();
        for (const json& r : s.at("references")) {
          if (r.at("refType") == "CHILD_OF") {
            sp.parent = r.at("spanID").get<std::string>();
          }
        }
        sp.callee =
            procs.at(s.at("processID").get<std::string>()).at("serviceName");
        bool have_ns = false;
        for (const json& tag : s.at("tags")) {
          const std::string key = tag.at("key").get<std::string>();
          if (key == "peer.service") {
            sp.caller = tag.at("value").get<std::string>();
          }
          if (key == "bbprof.callid") {
            sp.callid = tag.at("value").get<std::string>();
          }
          if (key == "bbprof.call_ns") {
            sp.call_ns = ParseNs(tag.at("value"));
            have_ns = true;
          }
        }
        if (!have_ns) {
          return Status::Error(
              path + ": trace " + std::to_string(t) + ", span " +
              std::to_string(k) +
              ": no bbprof.call_ns tag (not written by 'bbprof nest "
              "--requests')");
        }
        spans->push_back(std::move(sp));
      }
    } catch (const std::exception& e) {
      return Status::Error(path + ": trace " + std::to_string(t) + ", span " +
                           std::to_string(k) + ": " + e.what());
    }
    return Status::Ok();
  });
  const bool parsed = json::sax_parse(in, &handler);
  BBPROF_RETURN_IF_ERROR(handler.status());
  if (!parsed) return Status::Error(path + ": not JSON: " + handler.error());
  if (!handler.saw_data()) {
    return Status::Error(path + ": not a Jaeger JSON document (no \"data\")");
  }
  return Status::Ok();
}

// OTLP/JSON lines: callee from service.name, caller from peer.service, the
// call time from startTimeUnixNano (or bbprof.call_ns where nest wrote one
// because the span could not show it).
Status ReadOtlp(const std::string& path, std::istream& lines,
                std::vector<Span>* spans, uint64_t* requests) {
  std::string line;
  size_t line_no = 0;
  while (std::getline(lines, line)) {
    ++line_no;
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    const std::string where = path + ":" + std::to_string(line_no);
    json doc = json::parse(line, nullptr, false);
    if (doc.is_discarded() || !doc.is_object() ||
        !doc.contains("resourceSpans")) {
      return Status::Error(
          where + ": not an OTLP/JSON TracesData line (no \"resourceSpans\")");
    }
    ++*requests;
    try {
      for (const json& rs : doc.at("resourceSpans")) {
        std::string service;
        for (const json& a : rs.at("resource").at("attributes")) {
          if (a.at("key") == "service.name") {
            service = a.at("value").at("stringValue");
          }
        }
        for (const json& ss : rs.at("scopeSpans")) {
          for (const json& s : ss.at("spans")) {
            Span sp;
            sp.trace = s.at("traceId").get<std::string>();
            sp.id = s.at("spanId").get<std::string>();
            sp.parent = s.value("parentSpanId", std::string());
            sp.callee = service;
            sp.call_ns = ParseNs(s.at("startTimeUnixNano"));
            for (const json& a : s.value("attributes", json::array())) {
              const std::string key = a.at("key").get<std::string>();
              const json& v = a.at("value");
              if (key == "peer.service") sp.caller = v.at("stringValue");
              if (key == "bbprof.callid") sp.callid = v.at("stringValue");
              if (key == "bbprof.call_ns") {
                sp.call_ns = ParseNs(v.at("intValue"));
              }
            }
            spans->push_back(std::move(sp));
          }
        }
      }
    } catch (const std::exception& e) {
      return Status::Error(where + ": " + e.what());
    }
  }
  return Status::Ok();
}

constexpr uint32_t kUnassigned = kNoParent - 1;  // not in any exported request
constexpr uint32_t kBadParent = kNoParent - 2;   // parent span not a truth call

// Instance, message and request accuracy of the exported parent choices.
Status ScoreRequests(const std::string& path, const std::string& format_name,
                     const DetailedResult& truth, ResultEvaluation* r) {
  auto format = format_name.empty() ? RequestFormatForPath(path)
                                    : RequestFormatFromName(format_name);
  if (format != RequestFormat::kJaeger && format != RequestFormat::kOtlp) {
    return Status::Error(
        path +
        ": eval reads requests exported as Jaeger UI JSON (.jaeger.json) or "
        "OTLP/JSON (.otlp.json); the other formats do not keep the trees");
  }
  auto input = trace::OpenInputStream(path);
  if (!input.ok()) return input.status();
  InputStreamBuf buf(input->get());
  std::istream in(&buf);
  std::vector<Span> spans;
  uint64_t requests = 0;
  Status read = format == RequestFormat::kJaeger
                    ? ReadJaeger(path, in, &spans, &requests)
                    : ReadOtlp(path, in, &spans, &requests);
  BBPROF_RETURN_IF_ERROR(buf.status());
  BBPROF_RETURN_IF_ERROR(read);

  const auto& tc = truth.calls;
  const uint32_t n = static_cast<uint32_t>(tc.size());
  std::unordered_map<std::string, uint32_t> by_key;
  by_key.reserve(n);
  for (uint32_t i = 0; i < n; ++i) {
    if (!tc[i].matched) continue;
    by_key.emplace(
        MatchKey(truth.node_names[tc[i].caller], truth.node_names[tc[i].callee],
                 truth.labels.callids[i], tc[i].call_ns),
        i);
  }
  // Every span to its truth call (kNoParent when none).
  std::vector<uint32_t> span_call(spans.size(), kNoParent);
  std::unordered_map<std::string, uint32_t> by_span;  // trace + span id
  std::vector<char> seen(n, 0);
  for (size_t s = 0; s < spans.size(); ++s) {
    auto it = by_key.find(MatchKey(spans[s].caller, spans[s].callee,
                                   spans[s].callid, spans[s].call_ns));
    if (it == by_key.end() || seen[it->second]) {
      ++r->unknown_calls;
      continue;
    }
    seen[it->second] = 1;
    span_call[s] = it->second;
    by_span.emplace(spans[s].trace + "/" + spans[s].id, it->second);
  }
  // The exported parent of every truth call, and each exported request's
  // root (trace id -> root call, or kBadParent when a span is unknown).
  std::vector<uint32_t> ip(n, kUnassigned);
  std::unordered_map<std::string, uint32_t> trace_root;
  std::unordered_set<std::string> broken;
  for (size_t s = 0; s < spans.size(); ++s) {
    const uint32_t c = span_call[s];
    if (c == kNoParent) {
      broken.insert(spans[s].trace);
      continue;
    }
    if (spans[s].parent.empty()) {
      ip[c] = kNoParent;
      trace_root[spans[s].trace] = c;
    } else {
      auto it = by_span.find(spans[s].trace + "/" + spans[s].parent);
      ip[c] = it == by_span.end() ? kBadParent : it->second;
    }
  }
  // A request with a call out of place is wrong, as is the true tree the
  // call came from.
  for (size_t s = 0; s < spans.size(); ++s) {
    const uint32_t c = span_call[s];
    if (c != kNoParent && ip[c] != tc[c].parent) broken.insert(spans[s].trace);
  }
  r->exported_requests = requests;
  r->exported_calls = spans.size();

  // As the re-run evaluation counts them: a true instance is a true root's
  // tree; it is found when an exported request is exactly it (every call of
  // the true tree exported with its true parent, and no other call).
  Evaluation& e = r->figures;
  std::vector<uint32_t> troot(n, kNoParent);
  std::vector<char> tbad(n, 0);
  std::vector<uint64_t> tmsgs(n, 0);
  for (uint32_t i = 0; i < n; ++i) {
    if (!tc[i].matched) continue;
    uint32_t root = i;
    for (int guard = 0; tc[root].parent != kNoParent && guard < 100000;
         ++guard) {
      root = tc[root].parent;
    }
    troot[i] = root;
    const uint64_t msgs = tc[i].imputed ? 1 : 2;  // an imputed call lost one
    e.messages += msgs;
    tmsgs[root] += msgs;
    if (ip[i] != tc[i].parent) tbad[root] = 1;
  }
  std::unordered_set<uint32_t> roots_in_broken;
  for (const std::string& t : broken) {
    auto it = trace_root.find(t);
    if (it != trace_root.end()) roots_in_broken.insert(it->second);
  }
  for (uint32_t i = 0; i < n; ++i) {
    if (!tc[i].matched || tc[i].parent != kNoParent) continue;
    ++e.true_instances;
    if (ip[i] == kNoParent && !tbad[i] && !roots_in_broken.count(i)) {
      ++e.correct_instances;
      e.messages_correct += tmsgs[i];
    }
  }
  e.inferred_instances = requests;
  auto rate = [](uint64_t good, uint64_t all) {
    return all ? 1.0 - static_cast<double>(good) / static_cast<double>(all)
               : 0.0;
  };
  e.instance_fn_rate = rate(e.correct_instances, e.true_instances);
  e.instance_fp_rate = rate(e.correct_instances, e.inferred_instances);
  e.message_error_rate = rate(e.messages_correct, e.messages);

  // Requests by pathid, by the same rule as the re-run evaluation.
  ScoreRequestTrees(tc, ip, &e);
  r->true_requests = e.requests;
  r->correct_requests = e.requests_correct;
  r->request_accuracy = e.request_accuracy;
  r->requests_scored = true;
  r->requests_path = path;
  return Status::Ok();
}

std::string Crc32Hex(uint32_t v) {
  char buf[9];
  std::snprintf(buf, sizeof buf, "%08x", v);
  return buf;
}

}  // namespace

Result<ResultEvaluation> EvaluateResult(const ResultEvalInput& in,
                                        const EvalOptions& options) {
  // The result must name its input exactly; an older result cannot be
  // checked, so it is refused rather than scored against anything.
  uint64_t bytes = 0;
  std::string crc;
  try {
    const json& input = in.result.at("input");
    bytes = input.at("bytes").get<uint64_t>();
    crc = input.at("crc32").get<std::string>();
  } catch (const json::exception&) {
    return Status::Error(
        in.result_path +
        ": the result does not record its input's size and CRC-32 "
        "(input.bytes, input.crc32), so no truth trace can be checked "
        "against it; run 'bbprof nest' again");
  }
  auto mismatch = [&](uint64_t got_bytes, const std::string& got_crc) {
    return Status::Error(in.truth_trace + ": not the input of " +
                         in.result_path + " (" + std::to_string(got_bytes) +
                         " bytes" +
                         (got_crc.empty() ? "" : ", CRC-32 " + got_crc) +
                         "; the result was computed from " +
                         std::to_string(bytes) + " bytes, CRC-32 " + crc + ")");
  };
  if (uint64_t size = trace::FileSizeOrZero(in.truth_trace);
      size != 0 && size != bytes) {
    return mismatch(size, "");
  }
  trace::ReaderOptions ropts;
  ropts.numeric_ids = true;
  auto reader = trace::OpenTraceReader(in.truth_trace, nullptr, ropts);
  if (!reader.ok()) return reader.status();
  Params truth_params = in.params;
  truth_params.use_pathids = true;
  DetailOptions dopts;
  dopts.call_labels = !in.requests_path.empty();
  Result<DetailedResult> truth =
      RunNestingDetailed(**reader, truth_params, dopts);
  if (!truth.ok()) return truth.status();
  const InputStats& ts = truth->result.input;
  const std::string got_crc = ts.has_crc32 ? Crc32Hex(ts.crc32) : "";
  if (ts.bytes != bytes || got_crc != crc) return mismatch(ts.bytes, got_crc);

  ResultEvaluation r;
  r.figures.tolerance = options.tolerance;
  auto ip = PatternsOf(in.result, in.result_path);
  if (!ip.ok()) return ip.status();
  auto tp = PatternsOf(json(ResultToJson(truth->result)), in.truth_trace);
  if (!tp.ok()) return tp.status();
  ScorePatterns(*tp, *ip, options, &r.figures);
  if (!in.requests_path.empty()) {
    BBPROF_RETURN_IF_ERROR(
        ScoreRequests(in.requests_path, in.requests_format, *truth, &r));
  }
  return r;
}

nlohmann::ordered_json ResultEvaluationToJson(const ResultEvaluation& r) {
  nlohmann::ordered_json j = EvaluationToJson(r.figures);
  if (r.requests_scored) {
    j["requests"] = {{"path", r.requests_path},
                     {"exported", r.exported_requests},
                     {"exported_calls", r.exported_calls},
                     {"unknown_calls", r.unknown_calls},
                     {"true", r.true_requests},
                     {"correct", r.correct_requests}};
    j["request_accuracy"] = r.request_accuracy;
  } else {
    // Not measured: without the exported requests there are no parent
    // choices to score.
    j.erase("instances");
    j.erase("messages");
    j.erase("requests");
    j.erase("request_accuracy");
  }
  return j;
}

std::string ResultEvaluationToText(const ResultEvaluation& r) {
  // The figures' own requests line is replaced by the fuller one below, and
  // without the requests the instance and message figures were not
  // measured: drop those lines.
  std::string text;
  {
    std::istringstream in(EvaluationToText(r.figures));
    std::string line;
    while (std::getline(in, line)) {
      if (line.rfind("requests:", 0) == 0) continue;
      if (!r.requests_scored && (line.rfind("path instances:", 0) == 0 ||
                                 line.rfind("messages:", 0) == 0)) {
        continue;
      }
      text += line + "\n";
    }
  }
  if (!r.requests_scored) {
    return text +
           "path instances and messages: not scored (give the requests 'bbprof "
           "nest "
           "--requests' wrote, as --requests FILE)\n";
  }
  char buf[256];
  std::snprintf(buf, sizeof buf,
                "requests:       %llu true (pathids), %llu with every call's "
                "parent right: "
                "request accuracy %.2f%% (%llu exported calls, %llu not in the "
                "truth trace)\n",
                static_cast<unsigned long long>(r.true_requests),
                static_cast<unsigned long long>(r.correct_requests),
                100 * r.request_accuracy,
                static_cast<unsigned long long>(r.exported_calls),
                static_cast<unsigned long long>(r.unknown_calls));
  return text + buf;
}

}  // namespace bbprof::nesting
