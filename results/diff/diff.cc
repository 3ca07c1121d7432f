#include "results/diff/diff.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <numeric>
#include <sstream>
#include <utility>

#include "base/duration.h"
#include "base/version.h"
#include "results/writer.h"

namespace bbprof::nesting {

namespace {

using json = nlohmann::json;
using ojson = nlohmann::ordered_json;

std::string Label(const std::string& node, const std::string& op) {
  return op.empty() ? node : node + "[" + op + "]";
}

// Sorts every node's children into the canonical order (by their own
// canonical keys; equal subtrees by mean call delay, so that the first of
// two AUTH calls matches the first) and returns the node's key.
std::string Canonicalise(SideNode& n) {
  std::vector<std::pair<std::string, size_t>> keys;
  for (size_t i = 0; i < n.children.size(); ++i) {
    keys.emplace_back(Canonicalise(n.children[i]), i);
  }
  std::stable_sort(keys.begin(), keys.end(), [&](const auto& a, const auto& b) {
    if (a.first != b.first) return a.first < b.first;
    return n.children[a.second].call_delay_mean_s <
           n.children[b.second].call_delay_mean_s;
  });
  std::vector<SideNode> sorted;
  sorted.reserve(n.children.size());
  std::string key = Label(n.node, n.op);
  if (!keys.empty()) key += '(';
  for (size_t i = 0; i < keys.size(); ++i) {
    key += (i ? "," : "") + keys[i].first;
    sorted.push_back(std::move(n.children[keys[i].second]));
  }
  if (!keys.empty()) key += ')';
  n.children = std::move(sorted);
  return key;
}

Result<Summary> SummaryFromJson(const json& j, const std::string& at) {
  Summary s;
  if (!j.is_object()) return Status::Error(at + ": expected an object");
  for (auto [name, field] :
       {std::pair{"mean", &s.mean}, std::pair{"p50", &s.p50},
        std::pair{"p90", &s.p90}, std::pair{"p99", &s.p99},
        std::pair{"min", &s.min}, std::pair{"max", &s.max}}) {
    auto it = j.find(name);
    if (it == j.end() || !it->is_number()) {
      return Status::Error(at + "." + name + ": missing (expected a number)");
    }
    *field = it->get<double>();
  }
  return s;
}

// A result JSON histogram: {"edges_s": [n + 1 ascending], "counts": [n]}.
Result<std::vector<Cell>> CellsFromJson(const json& h, const std::string& at) {
  if (!h.is_object() || !h.contains("edges_s") || !h.contains("counts") ||
      !h["edges_s"].is_array() || !h["counts"].is_array()) {
    return Status::Error(at +
                         ": expected {\"edges_s\": [...], \"counts\": [...]}");
  }
  const json& e = h["edges_s"];
  const json& c = h["counts"];
  if (c.empty() && e.empty()) return std::vector<Cell>{};
  if (e.size() != c.size() + 1) {
    return Status::Error(at + ": " + std::to_string(e.size()) + " edges for " +
                         std::to_string(c.size()) +
                         " counts (expected one more edge)");
  }
  std::vector<Cell> out;
  for (size_t i = 0; i < c.size(); ++i) {
    if (!e[i].is_number() || !e[i + 1].is_number() ||
        !std::isfinite(e[i].get<double>()) ||
        !std::isfinite(e[i + 1].get<double>())) {
      return Status::Error(at + ".edges_s[" + std::to_string(i) +
                           "]: expected a number");
    }
    if (!c[i].is_number_integer() || c[i].get<int64_t>() < 0) {
      return Status::Error(at + ".counts[" + std::to_string(i) +
                           "]: expected a non-negative integer");
    }
    Cell cell{e[i].get<double>(), e[i + 1].get<double>(), c[i].get<uint64_t>(),
              i + 1 == c.size()};
    if (cell.hi_s < cell.lo_s) {
      return Status::Error(at + ".edges_s[" + std::to_string(i + 1) +
                           "]: edges must ascend");
    }
    if (cell.count > 0) out.push_back(cell);
  }
  return out;
}

Result<SideNode> NodeFromJson(const json& j, const std::string& at,
                              std::vector<size_t>& path, int depth) {
  if (depth > 200) return Status::Error(at + ": tree deeper than 200 calls");
  if (!j.is_object()) return Status::Error(at + ": expected an object");
  SideNode n;
  if (!j.contains("node") || !j["node"].is_string()) {
    return Status::Error(at + ".node: missing (expected a string)");
  }
  n.node = j["node"].get<std::string>();
  if (j.contains("op") && j["op"].is_string())
    n.op = j["op"].get<std::string>();
  if (!j.contains("latency_s"))
    return Status::Error(at + ".latency_s: missing");
  auto lat = SummaryFromJson(j["latency_s"], at + ".latency_s");
  if (!lat.ok()) return lat.status();
  n.latency = *lat;
  if (j.contains("call_delay_s") && j["call_delay_s"].is_object() &&
      j["call_delay_s"].contains("mean") &&
      j["call_delay_s"]["mean"].is_number()) {
    n.call_delay_mean_s = j["call_delay_s"]["mean"].get<double>();
  }
  if (j.contains("own_time_s") && j["own_time_s"].is_number()) {
    n.own_time_s = j["own_time_s"].get<double>();
  }
  if (j.contains("latency_hist")) {
    auto cells = CellsFromJson(j["latency_hist"], at + ".latency_hist");
    if (!cells.ok()) return cells.status();
    n.latency_cells = std::move(*cells);
  }
  n.display_path = path;
  if (!j.contains("children") || !j["children"].is_array()) {
    return Status::Error(at + ".children: missing (expected an array)");
  }
  for (size_t i = 0; i < j["children"].size(); ++i) {
    path.push_back(i);
    auto c = NodeFromJson(j["children"][i],
                          at + ".children[" + std::to_string(i) + "]", path,
                          depth + 1);
    path.pop_back();
    if (!c.ok()) return c.status();
    n.children.push_back(std::move(*c));
  }
  return n;
}

SideNode NodeFromResult(const PatternNode& p, std::vector<size_t>& path) {
  SideNode n;
  n.node = p.node;
  n.op = p.op;
  n.latency = p.latency.Summarize();
  n.own_time_s = OwnTimeSeconds(p);
  n.call_delay_mean_s = p.call_delay.mean_s();
  p.latency.ForEachBin([&](double lo_ns, double hi_ns, uint64_t count) {
    n.latency_cells.push_back(
        {lo_ns / 1e9, hi_ns / 1e9, count, lo_ns == hi_ns});
  });
  n.display_path = path;
  for (size_t i = 0; i < p.children.size(); ++i) {
    path.push_back(i);
    n.children.push_back(NodeFromResult(p.children[i], path));
    path.pop_back();
  }
  return n;
}

void FinishSide(DiffSide& side) {
  side.requests = 0;
  side.pattern_count = side.patterns.size();
  for (SidePattern& p : side.patterns) {
    p.key = p.caller + "->" + Canonicalise(p.root);
    side.requests += p.count;
  }
}

double NormalTwoSidedP(double z) {
  return std::erfc(std::fabs(z) / std::sqrt(2.0));
}

double LogChoose(double n, double k) {
  return std::lgamma(n + 1) - std::lgamma(k + 1) - std::lgamma(n - k + 1);
}

// Walks two matched trees (same canonical shape) together, depth first.
void DiffNodes(const SideNode* b, const SideNode* a, const std::string& prefix,
               std::vector<NodeDiff>& out) {
  const SideNode& any = a != nullptr ? *a : *b;
  NodeDiff d;
  d.node = any.node;
  d.op = any.op;
  d.label = prefix.empty() ? Label(any.node, any.op)
                           : prefix + " > " + Label(any.node, any.op);
  if (b != nullptr) {
    d.has_before = true;
    d.path_before = b->display_path;
    d.before = b->latency;
    d.own_before_s = b->own_time_s;
  }
  if (a != nullptr) {
    d.has_after = true;
    d.path_after = a->display_path;
    d.after = a->latency;
    d.own_after_s = a->own_time_s;
  }
  const std::string label = d.label;
  out.push_back(std::move(d));
  for (size_t i = 0; i < any.children.size(); ++i) {
    DiffNodes(b != nullptr ? &b->children[i] : nullptr,
              a != nullptr ? &a->children[i] : nullptr, label, out);
  }
}

// The latency cells of the nodes of a tree, in the order DiffNodes visits.
void CellsInOrder(const SideNode& n,
                  std::vector<const std::vector<Cell>*>& out) {
  out.push_back(&n.latency_cells);
  for (const SideNode& c : n.children) CellsInOrder(c, out);
}

// diff's text writes a zero as milliseconds, beside the changes it sits with.
constexpr SecondsFormat kLevel{.zero_in_ms = true};
constexpr SecondsFormat kChange{.sign = true, .zero_in_ms = true};

std::string FormatP(double p) {
  if (p < 1e-16) return "< 1e-16";
  char buf[32];
  std::snprintf(buf, sizeof buf, p < 1e-4 ? "%.1e" : "%.4f", p);
  return buf;
}

ojson SummaryJson(const Summary& s) {
  return {{"mean", s.mean}, {"p50", s.p50}, {"p90", s.p90}, {"p99", s.p99}};
}

ojson TestJson(const Test& t) {
  if (!t.tested) return ojson();
  return {
      {"p", t.p}, {"p_adjusted", t.p_adjusted}, {"significant", t.significant}};
}

const char* ChangeName(PatternChange c) {
  switch (c) {
    case PatternChange::kBoth:
      return "changed";
    case PatternChange::kAppeared:
      return "appeared";
    case PatternChange::kVanished:
      return "vanished";
  }
  return "changed";
}

bool AnySignificant(const PatternDiff& p) {
  if (p.count.significant) return true;
  for (const NodeDiff& n : p.nodes) {
    if (n.latency.significant) return true;
  }
  return false;
}

ojson SideJson(const DiffSide& s) {
  return {{"path", s.path},
          {"source", s.source},
          {"requests", s.requests},
          {"duration_s", s.duration_s},
          {"mean_parallelism", s.mean_parallelism},
          {"patterns", s.pattern_count}};
}

}  // namespace

Result<DiffSide> DiffSideFromJson(const json& doc, const std::string& where) {
  DiffSide side;
  side.path = where;
  side.source = "result";
  if (!doc.is_object() || doc.value("tool", "") != "bbprof nest") {
    return Status::Error(where +
                         ": not a 'bbprof nest' result (field \"tool\")");
  }
  if (doc.contains("input") && doc["input"].is_object()) {
    const json& in = doc["input"];
    if (in.contains("path") && in["path"].is_string()) side.path = in["path"];
    if (in.contains("duration_s") && in["duration_s"].is_number()) {
      side.duration_s = in["duration_s"].get<double>();
    }
    if (in.contains("mean_parallelism") && in["mean_parallelism"].is_number()) {
      side.mean_parallelism = in["mean_parallelism"].get<double>();
    }
  }
  if (!doc.contains("patterns") || !doc["patterns"].is_array()) {
    return Status::Error(where + ": patterns: missing (expected an array)");
  }
  const json& pats = doc["patterns"];
  for (size_t i = 0; i < pats.size(); ++i) {
    const std::string at = where + ": patterns[" + std::to_string(i) + "]";
    const json& p = pats[i];
    if (!p.is_object() || !p.contains("count") ||
        !p["count"].is_number_integer() || p["count"].get<int64_t>() < 0) {
      return Status::Error(at +
                           ".count: missing (expected a non-negative integer)");
    }
    if (!p.contains("signature") || !p["signature"].is_string()) {
      return Status::Error(at + ".signature: missing (expected a string)");
    }
    if (!p.contains("total_latency_s") || !p["total_latency_s"].is_number()) {
      return Status::Error(at +
                           ".total_latency_s: missing (expected a number)");
    }
    if (!p.contains("root") || !p["root"].is_object() ||
        !p["root"].contains("caller") || !p["root"]["caller"].is_string()) {
      return Status::Error(at + ".root.caller: missing (expected a string)");
    }
    SidePattern sp;
    sp.signature = p["signature"].get<std::string>();
    sp.caller = p["root"]["caller"].get<std::string>();
    sp.count = p["count"].get<uint64_t>();
    sp.total_latency_s = p["total_latency_s"].get<double>();
    std::vector<size_t> path;
    auto root = NodeFromJson(p["root"], at + ".root", path, 0);
    if (!root.ok()) return root.status();
    sp.root = std::move(*root);
    side.patterns.push_back(std::move(sp));
  }
  FinishSide(side);
  return side;
}

DiffSide DiffSideFromResult(const NestingResult& r) {
  DiffSide side;
  side.path = r.input.path;
  side.source = "trace";
  side.duration_s = r.input.duration_s;
  side.mean_parallelism = r.input.mean_parallelism;
  for (const Pattern& p : r.patterns) {
    SidePattern sp;
    sp.signature = p.signature;
    sp.caller = p.caller;
    sp.count = p.count;
    sp.total_latency_s = p.total_latency_s();
    std::vector<size_t> path;
    sp.root = NodeFromResult(p.root, path);
    side.patterns.push_back(std::move(sp));
  }
  FinishSide(side);
  return side;
}

double MannWhitneyP(const std::vector<Cell>& a, const std::vector<Cell>& b,
                    double* prob_slower) {
  // Each side's values are taken as spread evenly within their bins, and
  // both are laid on the union of the two sides' bin edges (a value's share
  // of every elementary interval its bin covers). U counts, for every pair,
  // P(after > before): 1 or 0 for values in disjoint intervals, one half
  // within one interval. On one grid (two traces: the engine's 1% bins) the
  // intervals are the bins themselves; on two grids (two result files) the
  // spreading replaces an ordering the histograms do not record. (Merging
  // overlapping bins into tie groups instead chains two interleaved grids
  // into one group, leaving only each side's extremes to compare, which made
  // false alarms.)
  constexpr double kPoint = 1e-12;  // a single value's bin, as an interval
  auto bounds = [&](const Cell& c) {
    return std::pair{c.lo_s, c.hi_s > c.lo_s ? c.hi_s : c.lo_s + kPoint};
  };
  std::vector<double> edges;
  for (const auto* side : {&a, &b}) {
    for (const Cell& c : *side) {
      if (c.count == 0) continue;
      auto [lo, hi] = bounds(c);
      edges.push_back(lo);
      edges.push_back(hi);
    }
  }
  std::sort(edges.begin(), edges.end());
  edges.erase(std::unique(edges.begin(), edges.end()), edges.end());
  if (prob_slower != nullptr) *prob_slower = 0.5;
  if (edges.size() < 2) return 1.0;
  auto spread = [&](const std::vector<Cell>& cells, std::vector<double>& mass) {
    mass.assign(edges.size() - 1, 0.0);
    double n = 0;
    for (const Cell& c : cells) {
      if (c.count == 0) continue;
      auto [lo, hi] = bounds(c);
      size_t k = static_cast<size_t>(
          std::lower_bound(edges.begin(), edges.end(), lo) - edges.begin());
      const double width = hi - lo;
      for (; k + 1 < edges.size() && edges[k] < hi; ++k) {
        mass[k] +=
            static_cast<double>(c.count) * (edges[k + 1] - edges[k]) / width;
      }
      n += static_cast<double>(c.count);
    }
    return n;
  };
  std::vector<double> ma, mb;
  const double n1 = spread(a, ma), n2 = spread(b, mb);
  if (n1 == 0 || n2 == 0) return 1.0;
  double u = 0, below = 0;
  for (size_t k = 0; k < ma.size(); ++k) {
    u += mb[k] * (below + ma[k] / 2);
    below += ma[k];
  }
  if (prob_slower != nullptr) *prob_slower = u / (n1 * n2);
  // The variance without ties: spread evenly, no two values are equal.
  const double var = n1 * n2 * (n1 + n2 + 1) / 12;
  const double dev =
      std::max(0.0, std::fabs(u - n1 * n2 / 2) - 0.5);  // continuity
  return std::min(1.0, NormalTwoSidedP(dev / std::sqrt(var)));
}

double FisherExactP(uint64_t a, uint64_t b, uint64_t c, uint64_t d) {
  const double r1 = static_cast<double>(a + b), r2 = static_cast<double>(c + d);
  const double c1 = static_cast<double>(a + c);
  const double n = r1 + r2;
  if (n == 0) return 1.0;
  const double lo = std::max(0.0, c1 - r2), hi = std::min(r1, c1);
  const double base = LogChoose(n, c1);
  auto log_p = [&](double x) {
    return LogChoose(r1, x) + LogChoose(r2, c1 - x) - base;
  };
  const double observed = log_p(static_cast<double>(a));
  // Terms beyond 40 standard deviations of the mode are below e^-800 and
  // cannot change the sum; skipping them keeps huge tables cheap.
  const double mode = std::floor((c1 + 1) * (r1 + 1) / (n + 2));
  const double sd = std::sqrt(std::max(
      1.0, r1 * c1 * (n - r1) * (n - c1) / (n * n * std::max(1.0, n - 1))));
  const double from = std::max(lo, std::floor(mode - 40 * sd - 10));
  const double to = std::min(hi, std::ceil(mode + 40 * sd + 10));
  double p = 0;
  for (double x = from; x <= to; x += 1) {
    const double lp = log_p(x);
    if (lp <= observed + 1e-7) p += std::exp(lp);
  }
  return std::clamp(std::max(p, std::exp(observed)), 0.0, 1.0);
}

void HolmAdjust(std::vector<double>& p) {
  const size_t m = p.size();
  std::vector<size_t> order(m);
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t x, size_t y) { return p[x] < p[y]; });
  double running = 0;
  std::vector<double> adj(m);
  for (size_t r = 0; r < m; ++r) {
    running = std::max(running,
                       std::min(1.0, static_cast<double>(m - r) * p[order[r]]));
    adj[order[r]] = running;
  }
  p = std::move(adj);
}

DiffResult Diff(DiffSide before, DiffSide after, const DiffOptions& options) {
  DiffResult r;
  r.options = options;
  r.scale = before.requests > 0 && after.requests > 0
                ? static_cast<double>(after.requests) /
                      static_cast<double>(before.requests)
                : 1.0;
  std::map<std::string, const SidePattern*> bmap, amap;
  for (const SidePattern& p : before.patterns) bmap.emplace(p.key, &p);
  for (const SidePattern& p : after.patterns) amap.emplace(p.key, &p);
  std::vector<std::string> keys;
  for (const auto& [k, p] : bmap) keys.push_back(k);
  for (const auto& [k, p] : amap) {
    if (!bmap.count(k)) keys.push_back(k);
  }

  // Every test of the diff, for one Holm adjustment: (pattern, node or -1).
  std::vector<std::pair<size_t, long>> tests;
  std::vector<double> ps;
  for (const std::string& k : keys) {
    auto bi = bmap.find(k);
    auto ai = amap.find(k);
    const SidePattern* b = bi == bmap.end() ? nullptr : bi->second;
    const SidePattern* a = ai == amap.end() ? nullptr : ai->second;
    PatternDiff d;
    d.key = k;
    const SidePattern& any = a != nullptr ? *a : *b;
    d.signature = any.signature;
    d.caller = any.caller;
    d.change = a == nullptr   ? PatternChange::kVanished
               : b == nullptr ? PatternChange::kAppeared
                              : PatternChange::kBoth;
    if (b != nullptr) {
      d.count_before = b->count;
      d.total_before_s = b->total_latency_s;
    }
    if (a != nullptr) {
      d.count_after = a->count;
      d.total_after_s = a->total_latency_s;
    }
    d.impact_s = d.total_after_s - r.scale * d.total_before_s;
    DiffNodes(b != nullptr ? &b->root : nullptr,
              a != nullptr ? &a->root : nullptr, "", d.nodes);
    const size_t pi = r.patterns.size();
    if (before.requests > 0 && after.requests > 0) {
      d.count.tested = true;
      d.count.p = FisherExactP(d.count_before, before.requests - d.count_before,
                               d.count_after, after.requests - d.count_after);
      tests.emplace_back(pi, -1);
      ps.push_back(d.count.p);
    }
    if (a != nullptr && b != nullptr && a->count >= options.min_samples &&
        b->count >= options.min_samples) {
      std::vector<const std::vector<Cell>*> bc, ac;
      CellsInOrder(b->root, bc);
      CellsInOrder(a->root, ac);
      for (size_t i = 0; i < d.nodes.size(); ++i) {
        if (bc[i]->empty() || ac[i]->empty()) continue;
        NodeDiff& n = d.nodes[i];
        n.latency.tested = true;
        n.latency.p = MannWhitneyP(*bc[i], *ac[i], &n.prob_slower);
        tests.emplace_back(pi, static_cast<long>(i));
        ps.push_back(n.latency.p);
      }
    }
    r.patterns.push_back(std::move(d));
  }
  HolmAdjust(ps);
  r.tests = ps.size();
  for (size_t t = 0; t < tests.size(); ++t) {
    PatternDiff& d = r.patterns[tests[t].first];
    Test& test = tests[t].second < 0
                     ? d.count
                     : d.nodes[static_cast<size_t>(tests[t].second)].latency;
    test.p_adjusted = ps[t];
    test.significant = ps[t] < options.alpha;
  }
  std::stable_sort(r.patterns.begin(), r.patterns.end(),
                   [](const PatternDiff& x, const PatternDiff& y) {
                     if (std::fabs(x.impact_s) != std::fabs(y.impact_s)) {
                       return std::fabs(x.impact_s) > std::fabs(y.impact_s);
                     }
                     return x.key < y.key;
                   });
  before.patterns.clear();
  after.patterns.clear();
  r.before = std::move(before);
  r.after = std::move(after);
  return r;
}

ojson DiffToJson(const DiffResult& r) {
  ojson j;
  j["tool"] = "bbprof diff";
  j["version"] = kVersion;
  j["before"] = SideJson(r.before);
  j["after"] = SideJson(r.after);
  j["scale"] = r.scale;
  j["method"] = {{"latency", "mann-whitney-u"},
                 {"count", "fisher-exact"},
                 {"adjust", "holm"},
                 {"alpha", r.options.alpha},
                 {"min_samples", r.options.min_samples},
                 {"tests", r.tests}};
  j["patterns"] = ojson::array();
  int rank = 0;
  for (const PatternDiff& p : r.patterns) {
    ojson pj;
    pj["rank"] = ++rank;
    pj["signature"] = p.signature;
    pj["caller"] = p.caller;
    pj["change"] = ChangeName(p.change);
    pj["significant"] = AnySignificant(p);
    pj["count_before"] = p.count_before;
    pj["count_after"] = p.count_after;
    pj["total_latency_before_s"] = p.total_before_s;
    pj["total_latency_after_s"] = p.total_after_s;
    pj["impact_s"] = p.impact_s;
    pj["count_test"] = TestJson(p.count);
    pj["nodes"] = ojson::array();
    for (const NodeDiff& n : p.nodes) {
      ojson nj;
      nj["label"] = n.label;
      nj["node"] = n.node;
      nj["op"] = n.op.empty() ? ojson() : ojson(n.op);
      nj["path_before"] = n.has_before ? ojson(n.path_before) : ojson();
      nj["path_after"] = n.has_after ? ojson(n.path_after) : ojson();
      nj["latency_before_s"] = n.has_before ? SummaryJson(n.before) : ojson();
      nj["latency_after_s"] = n.has_after ? SummaryJson(n.after) : ojson();
      if (n.has_before && n.has_after) {
        nj["delta_s"] = {{"mean", n.after.mean - n.before.mean},
                         {"p50", n.after.p50 - n.before.p50},
                         {"p90", n.after.p90 - n.before.p90},
                         {"p99", n.after.p99 - n.before.p99},
                         {"own_time", n.own_after_s - n.own_before_s}};
        nj["prob_slower"] = n.prob_slower;
      }
      nj["own_time_before_s"] = n.has_before ? ojson(n.own_before_s) : ojson();
      nj["own_time_after_s"] = n.has_after ? ojson(n.own_after_s) : ojson();
      nj["test"] = TestJson(n.latency);
      pj["nodes"].push_back(std::move(nj));
    }
    j["patterns"].push_back(std::move(pj));
  }
  return j;
}

std::string DiffToText(const DiffResult& r) {
  std::ostringstream out;
  char buf[512];
  for (const auto& [name, s] :
       {std::pair{"before", &r.before}, std::pair{"after", &r.after}}) {
    std::snprintf(buf, sizeof buf,
                  "%-6s %s (%s): %llu requests in %zu patterns, %.3f s, mean "
                  "parallelism %.2f\n",
                  name, s->path.c_str(), s->source.c_str(),
                  static_cast<unsigned long long>(s->requests),
                  s->pattern_count, s->duration_s, s->mean_parallelism);
    out << buf;
  }
  std::snprintf(
      buf, sizeof buf,
      "ranked by impact on total time (before scaled by %.4f to the after "
      "side's "
      "requests);\nsignificant (*): Holm-adjusted p < %.3g over %llu tests "
      "(latency: "
      "Mann-Whitney U; count: Fisher exact on the share of requests)\n",
      r.scale, r.options.alpha, static_cast<unsigned long long>(r.tests));
  out << buf;
  if (r.patterns.empty()) {
    out << "\nno patterns on either side\n";
    return out.str();
  }
  int rank = 0;
  size_t significant = 0;
  for (const PatternDiff& p : r.patterns) significant += AnySignificant(p);
  out << significant << " of " << r.patterns.size()
      << " patterns changed significantly\n";
  for (const PatternDiff& p : r.patterns) {
    out << "\n#" << ++rank << "  " << p.signature;
    if (p.change != PatternChange::kBoth)
      out << "  (" << ChangeName(p.change) << ")";
    out << (AnySignificant(p) ? "  *" : "") << "\n";
    std::snprintf(buf, sizeof buf, "  impact %s; count %llu -> %llu",
                  FormatSeconds(p.impact_s, kChange).c_str(),
                  static_cast<unsigned long long>(p.count_before),
                  static_cast<unsigned long long>(p.count_after));
    out << buf;
    if (p.count.tested) {
      out << " (p " << FormatP(p.count.p_adjusted)
          << (p.count.significant ? " *" : "") << ")";
    }
    out << "\n";
    for (const NodeDiff& n : p.nodes) {
      out << "    " << n.label << ": ";
      if (n.has_before && n.has_after) {
        out << "mean " << FormatSeconds(n.before.mean, kLevel) << " -> "
            << FormatSeconds(n.after.mean, kLevel) << " ("
            << FormatSeconds(n.after.mean - n.before.mean, kChange) << "), p50 "
            << FormatSeconds(n.after.p50 - n.before.p50, kChange) << ", p90 "
            << FormatSeconds(n.after.p90 - n.before.p90, kChange) << ", p99 "
            << FormatSeconds(n.after.p99 - n.before.p99, kChange) << ", own "
            << FormatSeconds(n.own_after_s - n.own_before_s, kChange);
        if (n.latency.tested) {
          out << " (p " << FormatP(n.latency.p_adjusted)
              << (n.latency.significant ? " *" : "") << ")";
        } else {
          out << " (not tested: too few instances or no histograms)";
        }
      } else {
        const Summary& s = n.has_after ? n.after : n.before;
        out << "mean " << FormatSeconds(s.mean, kLevel) << ", p50 "
            << FormatSeconds(s.p50, kLevel) << ", p99 "
            << FormatSeconds(s.p99, kLevel);
      }
      out << "\n";
    }
  }
  return out.str();
}

}  // namespace bbprof::nesting
