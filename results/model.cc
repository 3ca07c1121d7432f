#include "results/model.h"

#include <algorithm>

#include "results/validate.h"
#include "viz/style.h"

namespace bbprof::viz {

namespace {

using nlohmann::json;

// Deeper trees than this are not causal paths anyone can read; refusing them
// also bounds our recursion on hostile input.
constexpr int kMaxDepth = 200;

std::string Index(const std::string& path, size_t i) {
  return path + "[" + std::to_string(i) + "]";
}

Status DepthError(const std::string& path) {
  return Status::Error(path + ": pattern nested deeper than " +
                       std::to_string(kMaxDepth) + " calls");
}

// An optional number field of a summary (p50...): 0 when absent.
Result<double> OptionalNumber(const json& obj, const std::string& path,
                              const char* key) {
  if (!obj.contains(key)) return 0.0;
  return GetNumber(obj, path, key);
}

Status ParseHistogram(const json& j, const std::string& path, const char* key,
                      Histogram* out) {
  auto it = j.find(key);
  if (it == j.end()) return Status::Ok();
  const std::string p = JoinPath(path, key);
  if (!it->is_object()) return FieldError(p, "an object", "wrong type");
  const json* edges;
  BBPROF_ASSIGN_OR_RETURN(edges, GetArray(*it, p, "edges_s"));
  const json* counts;
  BBPROF_ASSIGN_OR_RETURN(counts, GetArray(*it, p, "counts"));
  if (!counts->empty() && edges->size() != counts->size() + 1) {
    return Status::Error(p + ".edges_s: " + std::to_string(edges->size()) +
                         " edges for " + std::to_string(counts->size()) +
                         " counts (expected one more edge than counts)");
  }
  for (size_t i = 0; i < edges->size(); ++i) {
    const json& e = (*edges)[i];
    if (!e.is_number())
      return FieldError(Index(p + ".edges_s", i), "a number", "wrong type");
    double v = e.get<double>();
    if (!out->edges_s.empty() && v < out->edges_s.back()) {
      return FieldError(Index(p + ".edges_s", i), "ascending edges",
                        "smaller than the one before");
    }
    out->edges_s.push_back(v);
  }
  for (size_t i = 0; i < counts->size(); ++i) {
    const json& c = (*counts)[i];
    if (!c.is_number_integer() || c.get<int64_t>() < 0) {
      return FieldError(Index(p + ".counts", i), "a non-negative integer",
                        "wrong type");
    }
    out->counts.push_back(c.get<int64_t>());
  }
  if (counts->empty()) out->edges_s.clear();
  return Status::Ok();
}

Status ParseNode(const json& j, const std::string& path, bool is_root,
                 int depth, PatternNode* out) {
  if (depth > kMaxDepth) return DepthError(path);
  if (!j.is_object()) return FieldError(path, "an object", "wrong type");
  BBPROF_ASSIGN_OR_RETURN(out->name, GetString(j, path, "node"));
  // "op" is optional in the result format: absent or null when unknown.
  if (auto op = j.find("op"); op != j.end() && !op->is_null()) {
    if (!op->is_string())
      return FieldError(path + ".op", "a string or null", "wrong type");
    out->op = op->get<std::string>();
  }
  const json* lat;
  BBPROF_ASSIGN_OR_RETURN(lat, Member(j, path, "latency_s", "an object"));
  const std::string lp = path + ".latency_s";
  BBPROF_ASSIGN_OR_RETURN(out->latency_s, GetNumber(*lat, lp, "mean"));
  BBPROF_ASSIGN_OR_RETURN(out->p50_s, OptionalNumber(*lat, lp, "p50"));
  BBPROF_ASSIGN_OR_RETURN(out->p90_s, OptionalNumber(*lat, lp, "p90"));
  BBPROF_ASSIGN_OR_RETURN(out->p99_s, OptionalNumber(*lat, lp, "p99"));
  if (!is_root) {
    // The root's call delay is 0 by definition and not drawn.
    const json* cd;
    BBPROF_ASSIGN_OR_RETURN(cd, Member(j, path, "call_delay_s", "an object"));
    BBPROF_ASSIGN_OR_RETURN(out->call_delay_s,
                            GetNumber(*cd, path + ".call_delay_s", "mean"));
  }
  BBPROF_RETURN_IF_ERROR(
      ParseHistogram(j, path, "latency_hist", &out->latency_hist));
  BBPROF_RETURN_IF_ERROR(
      ParseHistogram(j, path, "own_time_hist", &out->own_time_hist));
  const json* children;
  BBPROF_ASSIGN_OR_RETURN(children, GetArray(j, path, "children"));
  out->children.resize(children->size());
  for (size_t i = 0; i < children->size(); ++i) {
    BBPROF_RETURN_IF_ERROR(ParseNode((*children)[i],
                                     Index(path + ".children", i), false,
                                     depth + 1, &out->children[i]));
  }
  return Status::Ok();
}

void ComputeOwnTimes(PatternNode* n) {
  std::vector<ChildInterval> iv;
  iv.reserve(n->children.size());
  for (auto& c : n->children) {
    ComputeOwnTimes(&c);
    iv.push_back({c.call_delay_s, c.latency_s});
  }
  n->own_s = OwnTime(n->latency_s, iv);
}

Status ParseExampleCall(const json& j, const std::string& path, int depth,
                        ExampleCall* out) {
  if (depth > kMaxDepth) return DepthError(path);
  if (!j.is_object()) return FieldError(path, "an object", "wrong type");
  BBPROF_ASSIGN_OR_RETURN(out->node, GetString(j, path, "node"));
  BBPROF_ASSIGN_OR_RETURN(out->caller, GetString(j, path, "caller"));
  if (auto op = j.find("op"); op != j.end() && !op->is_null()) {
    BBPROF_ASSIGN_OR_RETURN(out->op, GetString(j, path, "op"));
  }
  BBPROF_ASSIGN_OR_RETURN(out->start_s, GetNumber(j, path, "start_s"));
  BBPROF_ASSIGN_OR_RETURN(out->latency_s, GetNumber(j, path, "latency_s"));
  const json* children;
  BBPROF_ASSIGN_OR_RETURN(children, GetArray(j, path, "children"));
  out->children.resize(children->size());
  for (size_t i = 0; i < children->size(); ++i) {
    BBPROF_RETURN_IF_ERROR(ParseExampleCall((*children)[i],
                                            Index(path + ".children", i),
                                            depth + 1, &out->children[i]));
  }
  return Status::Ok();
}

Status ParseExamples(const json& p, const std::string& path, Pattern* pat) {
  auto it = p.find("examples");
  if (it == p.end()) return Status::Ok();
  const std::string ep = path + ".examples";
  if (!it->is_object()) return FieldError(ep, "an object", "wrong type");
  for (auto [key, ex] : {std::pair{"median", &pat->median},
                         std::pair{"slowest", &pat->slowest}}) {
    const json* e;
    BBPROF_ASSIGN_OR_RETURN(e, Member(*it, ep, key, "an object"));
    const std::string xp = JoinPath(ep, key);
    if (!e->is_object()) return FieldError(xp, "an object", "wrong type");
    BBPROF_ASSIGN_OR_RETURN(ex->at_s, GetNumber(*e, xp, "at_s"));
    const json* tree;
    BBPROF_ASSIGN_OR_RETURN(tree, Member(*e, xp, "tree", "an object"));
    BBPROF_RETURN_IF_ERROR(ParseExampleCall(*tree, xp + ".tree", 0, &ex->tree));
    ex->present = true;
  }
  return Status::Ok();
}

Status ParseTimeline(const json& p, const std::string& path, Timeline* t) {
  auto it = p.find("timeline");
  if (it == p.end()) return Status::Ok();
  const std::string tp = path + ".timeline";
  if (!it->is_object()) return FieldError(tp, "an object", "wrong type");
  BBPROF_ASSIGN_OR_RETURN(t->bucket_s, GetNumber(*it, tp, "bucket_s"));
  if (!(t->bucket_s > 0))
    return FieldError(tp + ".bucket_s", "a positive number", "not positive");
  BBPROF_ASSIGN_OR_RETURN(t->start_s, GetNumber(*it, tp, "start_s"));
  const json* counts;
  BBPROF_ASSIGN_OR_RETURN(counts, GetArray(*it, tp, "counts"));
  const json* sums;
  BBPROF_ASSIGN_OR_RETURN(sums, GetArray(*it, tp, "latency_sum_s"));
  if (sums->size() != counts->size()) {
    return Status::Error(tp +
                         ".latency_sum_s: " + std::to_string(sums->size()) +
                         " values for " + std::to_string(counts->size()) +
                         " counts (expected as many)");
  }
  for (size_t i = 0; i < counts->size(); ++i) {
    const json& c = (*counts)[i];
    if (!c.is_number_integer() || c.get<int64_t>() < 0) {
      return FieldError(Index(tp + ".counts", i), "a non-negative integer",
                        "wrong type");
    }
    if (!(*sums)[i].is_number()) {
      return FieldError(Index(tp + ".latency_sum_s", i), "a number",
                        "wrong type");
    }
    t->counts.push_back(c.get<int64_t>());
    t->latency_sum_s.push_back((*sums)[i].get<double>());
  }
  return Status::Ok();
}

Status ParseCulprit(const json& p, const std::string& path, Pattern* pat) {
  auto it = p.find("culprit");
  if (it == p.end() || it->is_null()) {
    pat->culprit_path = FindCulprit(pat->root);
    pat->culprit_own_s = NodeAt(*pat, pat->culprit_path).own_s;
    pat->culprit_added_s = AddedTime(pat->culprit_own_s, pat->count);
    return Status::Ok();
  }
  const std::string cp = path + ".culprit";
  if (!it->is_object()) return FieldError(cp, "an object", "wrong type");
  const json* steps;
  BBPROF_ASSIGN_OR_RETURN(steps, GetArray(*it, cp, "path"));
  const PatternNode* n = &pat->root;
  for (size_t i = 0; i < steps->size(); ++i) {
    const json& s = (*steps)[i];
    if (!s.is_number_integer() || s.get<int64_t>() < 0 ||
        s.get<uint64_t>() >= n->children.size()) {
      return FieldError(Index(cp + ".path", i), "the index of a child",
                        "no such child");
    }
    pat->culprit_path.push_back(s.get<size_t>());
    n = &n->children[pat->culprit_path.back()];
  }
  BBPROF_ASSIGN_OR_RETURN(pat->culprit_own_s, GetNumber(*it, cp, "own_time_s"));
  pat->culprit_added_s = AddedTime(pat->culprit_own_s, pat->count);
  if (it->contains("added_s")) {
    BBPROF_ASSIGN_OR_RETURN(pat->culprit_added_s,
                            GetNumber(*it, cp, "added_s"));
  }
  return Status::Ok();
}

Status ParseSuspects(const json& p, const std::string& path, Pattern* pat) {
  auto it = p.find("suspect");
  if (it == p.end() || it->is_null()) return Status::Ok();
  const std::string sp = path + ".suspect";
  if (!it->is_array()) return FieldError(sp, "an array", "wrong type");
  for (size_t i = 0; i < it->size(); ++i) {
    Suspect s;
    BBPROF_ASSIGN_OR_RETURN(s.kind, GetString((*it)[i], Index(sp, i), "kind"));
    BBPROF_ASSIGN_OR_RETURN(s.reason,
                            GetString((*it)[i], Index(sp, i), "reason"));
    pat->suspects.push_back(std::move(s));
  }
  return Status::Ok();
}

void Culprit(const PatternNode& n, std::vector<size_t>* at,
             std::vector<size_t>* best, double* best_own) {
  if (n.own_s > *best_own) {
    *best = *at;
    *best_own = n.own_s;
  }
  for (size_t i = 0; i < n.children.size(); ++i) {
    at->push_back(i);
    Culprit(n.children[i], at, best, best_own);
    at->pop_back();
  }
}

}  // namespace

Result<std::vector<Pattern>> ParseNest(const json& doc, size_t top) {
  const json* arr;
  BBPROF_ASSIGN_OR_RETURN(arr, GetArray(doc, "", "patterns"));
  size_t n = arr->size();
  if (top != 0) n = std::min(n, top);
  std::vector<Pattern> out(n);
  for (size_t i = 0; i < n; ++i) {
    const json& p = (*arr)[i];
    std::string path = Index("patterns", i);
    if (!p.is_object()) return FieldError(path, "an object", "wrong type");
    Pattern& pat = out[i];
    BBPROF_ASSIGN_OR_RETURN(pat.rank, GetInteger(p, path, "rank"));
    BBPROF_ASSIGN_OR_RETURN(pat.signature, GetString(p, path, "signature"));
    BBPROF_ASSIGN_OR_RETURN(pat.count, GetInteger(p, path, "count"));
    BBPROF_ASSIGN_OR_RETURN(pat.total_latency_s,
                            GetNumber(p, path, "total_latency_s"));
    const json* root;
    BBPROF_ASSIGN_OR_RETURN(root, Member(p, path, "root", "an object"));
    BBPROF_ASSIGN_OR_RETURN(pat.caller,
                            GetString(*root, path + ".root", "caller"));
    BBPROF_RETURN_IF_ERROR(
        ParseNode(*root, path + ".root", true, 0, &pat.root));
    ComputeOwnTimes(&pat.root);
    BBPROF_RETURN_IF_ERROR(ParseCulprit(p, path, &pat));
    BBPROF_RETURN_IF_ERROR(ParseExamples(p, path, &pat));
    BBPROF_RETURN_IF_ERROR(ParseTimeline(p, path, &pat.timeline));
    BBPROF_RETURN_IF_ERROR(ParseSuspects(p, path, &pat));
  }
  return out;
}

const PatternNode& NodeAt(const Pattern& p, const std::vector<size_t>& path) {
  const PatternNode* n = &p.root;
  for (size_t i : path) n = &n->children[i];
  return *n;
}

std::vector<size_t> FindCulprit(const PatternNode& root) {
  std::vector<size_t> at, best;
  double best_own = root.own_s;
  for (size_t i = 0; i < root.children.size(); ++i) {
    at.push_back(i);
    Culprit(root.children[i], &at, &best, &best_own);
    at.pop_back();
  }
  return best;
}

double OwnTime(double latency_s, const std::vector<ChildInterval>& children) {
  // Section 5.4 says the interactive tool "highlights the individual nodes
  // that contribute the most latency". With only means we place each child
  // at [mean call delay, mean call delay + mean latency] inside its parent,
  // clip to the parent's span, and subtract the union of those intervals:
  // sequential children add up, parallel ones are counted once.
  std::vector<std::pair<double, double>> iv;
  for (const auto& c : children) {
    double a = std::clamp(c.call_delay_s, 0.0, std::max(0.0, latency_s));
    double b =
        std::clamp(c.call_delay_s + c.latency_s, 0.0, std::max(0.0, latency_s));
    if (b > a) iv.emplace_back(a, b);
  }
  std::sort(iv.begin(), iv.end());
  double covered = 0, end = -1;
  double start = 0;
  for (const auto& [a, b] : iv) {
    if (a > end) {
      if (end > start) covered += end - start;
      start = a;
      end = b;
    } else {
      end = std::max(end, b);
    }
  }
  if (end > start) covered += end - start;
  return std::max(0.0, latency_s - covered);
}

}  // namespace bbprof::viz
