#include "results/validate.h"

#include <cmath>
#include <cstdio>
#include <set>
#include <vector>

#include "base/atomic_file.h"

namespace bbprof::viz {

using nlohmann::json;

namespace {

// Deeper trees than this are not causal paths anyone can read; refusing them
// also bounds the recursion on hostile input.
constexpr int kMaxDepth = 200;

// A value that must not be below `min`.
Status AtLeast(const json& obj, const std::string& path, const std::string& key,
               double min, const char* expected) {
  auto v = GetNumber(obj, path, key);
  if (!v.ok()) return v.status();
  if (*v < min) return FieldError(JoinPath(path, key), expected, "negative");
  return Status::Ok();
}

Status IntegerAtLeast(const json& obj, const std::string& path,
                      const std::string& key, int64_t min,
                      const char* expected) {
  auto v = GetInteger(obj, path, key);
  if (!v.ok()) return v.status();
  if (*v < min) {
    return FieldError(JoinPath(path, key), expected,
                      *v < 0 ? "negative" : "too small");
  }
  return Status::Ok();
}

// Optional number: absent is fine, present must be a finite number.
Status OptionalNumber(const json& obj, const std::string& path,
                      const std::string& key) {
  if (!obj.contains(key)) return Status::Ok();
  auto v = GetNumber(obj, path, key);
  return v.ok() ? Status::Ok() : v.status();
}

// A latency or call-delay summary: "mean" required, the quantiles optional.
// Neither is bounded: in a trace captured at several points (section 6.5),
// a call is stamped by one clock and its return by another, so a latency,
// like a call delay, may come out negative (nest reports what the trace
// says; tests/e2e/real_stack.py's skewed captures have such calls).
Status CheckSummary(const json& node, const std::string& path,
                    const char* key) {
  auto m = Member(node, path, key, "an object");
  if (!m.ok()) return m.status();
  const std::string p = JoinPath(path, key);
  if (!(*m)->is_object()) return FieldError(p, "an object", "wrong type");
  BBPROF_RETURN_IF_ERROR(GetNumber(**m, p, "mean").status());
  for (const char* q : {"p50", "p90", "p99", "min", "max"}) {
    BBPROF_RETURN_IF_ERROR(OptionalNumber(**m, p, q));
  }
  return Status::Ok();
}

Status CheckNestNode(const json& j, const std::string& path, bool is_root,
                     int depth) {
  if (depth > kMaxDepth) {
    return Status::Error(path + ": pattern nested deeper than " +
                         std::to_string(kMaxDepth) + " calls");
  }
  if (!j.is_object()) return FieldError(path, "an object", "wrong type");
  BBPROF_RETURN_IF_ERROR(GetString(j, path, "node").status());
  if (is_root) BBPROF_RETURN_IF_ERROR(GetString(j, path, "caller").status());
  BBPROF_RETURN_IF_ERROR(CheckSummary(j, path, "latency_s"));
  // The root's call delay is 0 by definition: optional there, but checked
  // when given.
  if (!is_root || j.contains("call_delay_s")) {
    BBPROF_RETURN_IF_ERROR(CheckSummary(j, path, "call_delay_s"));
  }
  if (j.contains("own_time_s")) {  // a latency less its children's: any sign
    BBPROF_RETURN_IF_ERROR(GetNumber(j, path, "own_time_s").status());
  }
  auto children = GetArray(j, path, "children");
  if (!children.ok()) return children.status();
  for (size_t i = 0; i < (*children)->size(); ++i) {
    BBPROF_RETURN_IF_ERROR(CheckNestNode(
        (**children)[i], path + ".children[" + std::to_string(i) + "]", false,
        depth + 1));
  }
  return Status::Ok();
}

Status CheckNest(const json& doc) {
  auto arr = GetArray(doc, "", "patterns");
  if (!arr.ok()) return arr.status();
  for (size_t i = 0; i < (*arr)->size(); ++i) {
    const json& p = (**arr)[i];
    const std::string path = "patterns[" + std::to_string(i) + "]";
    if (!p.is_object()) return FieldError(path, "an object", "wrong type");
    BBPROF_RETURN_IF_ERROR(
        IntegerAtLeast(p, path, "rank", 1, "an integer >= 1"));
    BBPROF_RETURN_IF_ERROR(GetString(p, path, "signature").status());
    BBPROF_RETURN_IF_ERROR(
        IntegerAtLeast(p, path, "count", 0, "an integer >= 0"));
    BBPROF_RETURN_IF_ERROR(GetNumber(p, path, "total_latency_s").status());
    auto root = Member(p, path, "root", "an object");
    if (!root.ok()) return root.status();
    BBPROF_RETURN_IF_ERROR(CheckNestNode(**root, path + ".root", true, 0));
  }
  return Status::Ok();
}

Status CheckStringArray(const json& obj, const std::string& path,
                        const std::string& key, size_t min_size) {
  auto arr = GetArray(obj, path, key);
  if (!arr.ok()) return arr.status();
  const std::string p = JoinPath(path, key);
  if ((*arr)->size() < min_size) {
    return FieldError(p, "a non-empty array", "empty");
  }
  for (size_t i = 0; i < (*arr)->size(); ++i) {
    if (!(**arr)[i].is_string()) {
      return FieldError(p + "[" + std::to_string(i) + "]", "a string",
                        "wrong type");
    }
  }
  return Status::Ok();
}

Status CheckConvolve(const json& doc) {
  BBPROF_RETURN_IF_ERROR(CheckStringArray(doc, "", "roots", 0));
  auto vertices = GetArray(doc, "", "vertices");
  if (!vertices.ok()) return vertices.status();
  std::set<int64_t> ids;
  for (size_t i = 0; i < (*vertices)->size(); ++i) {
    const std::string path = "vertices[" + std::to_string(i) + "]";
    const json& v = (**vertices)[i];
    auto id = GetInteger(v, path, "id");
    if (!id.ok()) return id.status();
    BBPROF_RETURN_IF_ERROR(GetString(v, path, "node").status());
    if (!ids.insert(*id).second) {
      return Status::Error(path + ".id: duplicate vertex id " +
                           std::to_string(*id));
    }
  }
  auto edges = GetArray(doc, "", "edges");
  if (!edges.ok()) return edges.status();
  for (size_t i = 0; i < (*edges)->size(); ++i) {
    const std::string path = "edges[" + std::to_string(i) + "]";
    const json& e = (**edges)[i];
    for (const char* end : {"from", "to"}) {
      auto id = GetInteger(e, path, end);
      if (!id.ok()) return id.status();
      if (!ids.contains(*id)) {
        return Status::Error(path + "." + end + ": no vertex with id " +
                             std::to_string(*id));
      }
    }
    BBPROF_RETURN_IF_ERROR(
        IntegerAtLeast(e, path, "count", 0, "an integer >= 0"));
    auto delays = GetArray(e, path, "delays");
    if (!delays.ok()) return delays.status();
    for (size_t k = 0; k < (*delays)->size(); ++k) {
      const std::string dp = path + ".delays[" + std::to_string(k) + "]";
      BBPROF_RETURN_IF_ERROR(AtLeast((**delays)[k], dp, "delay_s", 0,
                                     "a non-negative number of seconds"));
      BBPROF_RETURN_IF_ERROR(
          IntegerAtLeast((**delays)[k], dp, "count", 0, "an integer >= 0"));
    }
  }
  auto paths = GetArray(doc, "", "paths");
  if (!paths.ok()) return paths.status();
  for (size_t i = 0; i < (*paths)->size(); ++i) {
    const std::string path = "paths[" + std::to_string(i) + "]";
    const json& p = (**paths)[i];
    BBPROF_RETURN_IF_ERROR(CheckStringArray(p, path, "nodes", 1));
    auto delays = GetArray(p, path, "delays_s");
    if (!delays.ok()) return delays.status();
    // Spec: the delay of each hop after the first.
    const size_t hops = p["nodes"].size() - 1;
    const size_t want = hops > 0 ? hops - 1 : 0;
    if ((*delays)->size() != want) {
      return Status::Error(path +
                           ".delays_s: " + std::to_string((*delays)->size()) +
                           " delays for " + std::to_string(hops) +
                           " hops (expected one per hop after the first: " +
                           std::to_string(want) + ")");
    }
    for (size_t k = 0; k < want; ++k) {
      const json& d = (**delays)[k];
      const std::string dp = path + ".delays_s[" + std::to_string(k) + "]";
      if (!d.is_number()) return FieldError(dp, "a number", "wrong type");
      double v = d.get<double>();
      if (!std::isfinite(v))
        return FieldError(dp, "a finite number", "not finite");
      if (v < 0)
        return FieldError(dp, "a non-negative number of seconds", "negative");
    }
    BBPROF_RETURN_IF_ERROR(
        IntegerAtLeast(p, path, "count", 0, "an integer >= 0"));
  }
  return Status::Ok();
}

}  // namespace

Status FieldError(const std::string& path, const char* expected,
                  const char* what) {
  return Status::Error(path + ": " + what + " (expected " + expected + ")");
}

std::string JoinPath(const std::string& path, const std::string& key) {
  return path.empty() ? key : path + "." + key;
}

Result<const json*> Member(const json& obj, const std::string& path,
                           const std::string& key, const char* expected) {
  std::string p = JoinPath(path, key);
  if (!obj.is_object()) {
    return FieldError(path.empty() ? "$" : path, "an object", "not an object");
  }
  auto it = obj.find(key);
  if (it == obj.end()) return FieldError(p, expected, "missing");
  return &*it;
}

Result<std::string> GetString(const json& obj, const std::string& path,
                              const std::string& key) {
  auto m = Member(obj, path, key, "a string");
  if (!m.ok()) return m.status();
  if (!(*m)->is_string()) {
    return FieldError(JoinPath(path, key), "a string", "wrong type");
  }
  return (*m)->get<std::string>();
}

Result<double> GetNumber(const json& obj, const std::string& path,
                         const std::string& key) {
  auto m = Member(obj, path, key, "a number");
  if (!m.ok()) return m.status();
  if (!(*m)->is_number()) {
    return FieldError(JoinPath(path, key), "a number", "wrong type");
  }
  double v = (*m)->get<double>();
  if (!std::isfinite(v)) {
    return FieldError(JoinPath(path, key), "a finite number", "not finite");
  }
  return v;
}

Result<int64_t> GetInteger(const json& obj, const std::string& path,
                           const std::string& key) {
  auto m = Member(obj, path, key, "an integer");
  if (!m.ok()) return m.status();
  if ((*m)->is_number_unsigned()) {
    uint64_t u = (*m)->get<uint64_t>();
    if (u > static_cast<uint64_t>(INT64_MAX)) {
      return FieldError(JoinPath(path, key), "an integer below 2^63",
                        "too large");
    }
    return static_cast<int64_t>(u);
  }
  if (!(*m)->is_number_integer()) {
    return FieldError(JoinPath(path, key), "an integer", "wrong type");
  }
  return (*m)->get<int64_t>();
}

Result<const json*> GetArray(const json& obj, const std::string& path,
                             const std::string& key) {
  auto m = Member(obj, path, key, "an array");
  if (!m.ok()) return m.status();
  if (!(*m)->is_array()) {
    return FieldError(JoinPath(path, key), "an array", "wrong type");
  }
  return *m;
}

Status ValidateResult(const json& doc) {
  if (!doc.is_object()) {
    return Status::Error("$: expected a JSON object (a bbprof result)");
  }
  auto tool = GetString(doc, "", "tool");
  if (!tool.ok()) return tool.status();
  if (*tool == "bbprof nest") return CheckNest(doc);
  if (*tool == "bbprof convolve") return CheckConvolve(doc);
  return Status::Error("tool: '" + *tool +
                       "' is not a result bbprof knows (expected 'bbprof "
                       "nest' or 'bbprof convolve')");
}

Result<nlohmann::json> LoadResultJson(const std::string& path) {
  std::string text;
  if (path == "-") {
    char buf[1 << 16];
    size_t n;
    while ((n = std::fread(buf, 1, sizeof buf, stdin)) > 0) text.append(buf, n);
    if (std::ferror(stdin)) return Status::Error("standard input: read error");
  } else {
    auto read = ReadWholeFile(path);
    if (!read.ok()) return read.status();
    text = std::move(read).value();
  }
  try {
    return nlohmann::json::parse(text);
  } catch (const nlohmann::json::parse_error& e) {
    // e.what() names the line and column ("at line 3, column 7").
    return Status::Error(path + ": not valid JSON: " + e.what());
  }
}

}  // namespace bbprof::viz
