#include "results/writer.h"

#include <algorithm>
#include <cstdio>
#include <sstream>
#include <utility>
#include <vector>

#include "base/duration.h"
#include "base/version.h"
#include "nesting/intervals.h"

namespace bbprof::nesting {

namespace {

nlohmann::ordered_json SummaryJson(const LogHistogram& h) {
  Summary s = h.Summarize();
  nlohmann::ordered_json j;
  j["mean"] = s.mean;
  j["p50"] = s.p50;
  j["p90"] = s.p90;
  j["p99"] = s.p99;
  j["min"] = s.min;
  j["max"] = s.max;
  return j;
}

// Bins of the latency_hist and own_time_hist of every node: enough for a
// readable picture, few enough that hundreds of patterns stay small.
constexpr int kHistogramBins = 40;

nlohmann::ordered_json HistJson(const LogHistogram& h) {
  BinnedCounts b = h.Rebin(kHistogramBins);
  nlohmann::ordered_json j;
  j["edges_s"] = b.edges_s;
  j["counts"] = b.counts;
  return j;
}

nlohmann::ordered_json ExampleCallJson(const ExampleCall& e) {
  nlohmann::ordered_json j;
  j["node"] = e.node;
  j["caller"] = e.caller;
  if (!e.op.empty()) j["op"] = e.op;
  j["start_s"] = trace::NsToSeconds(e.start_ns);
  j["latency_s"] = trace::NsToSeconds(e.latency_ns);
  j["children"] = nlohmann::ordered_json::array();
  for (const auto& c : e.children) j["children"].push_back(ExampleCallJson(c));
  return j;
}

nlohmann::ordered_json ExampleJson(const Example& e) {
  return {{"at_s", trace::NsToSeconds(e.at_ns)},
          {"tree", ExampleCallJson(e.tree)}};
}

nlohmann::ordered_json TimelineJson(const Timeline& t) {
  nlohmann::ordered_json j;
  j["bucket_s"] = trace::NsToSeconds(t.bucket_ns);
  j["start_s"] = trace::NsToSeconds(t.start_ns);
  j["counts"] = t.counts;
  auto& sums = j["latency_sum_s"] = nlohmann::ordered_json::array();
  for (trace::TimeNs ns : t.latency_sum_ns)
    sums.push_back(trace::NsToSeconds(ns));
  return j;
}

nlohmann::ordered_json NodeJson(const PatternNode& n,
                                const std::string* caller) {
  nlohmann::ordered_json j;
  j["node"] = n.node;
  // The node's operation; null when unknown (or, grouped by node only,
  // when its instances carry several).
  j["op"] =
      n.op.empty() ? nlohmann::ordered_json() : nlohmann::ordered_json(n.op);
  if (caller != nullptr) j["caller"] = *caller;
  j["latency_s"] = SummaryJson(n.latency);
  j["call_delay_s"] = SummaryJson(n.call_delay);
  j["own_time_s"] = OwnTimeSeconds(n);
  j["latency_hist"] = HistJson(n.latency);
  j["own_time_hist"] = HistJson(n.own_time);
  j["children"] = nlohmann::ordered_json::array();
  for (const auto& c : n.children)
    j["children"].push_back(NodeJson(c, nullptr));
  return j;
}


void FindCulpritIn(const PatternNode& n, std::vector<size_t>& at,
                   Culprit* best) {
  double o = OwnTimeSeconds(n);
  if (best->node == nullptr || o > best->own_time_s) {
    best->node = &n;
    best->own_time_s = o;
    best->path = at;
  }
  for (size_t i = 0; i < n.children.size(); ++i) {
    at.push_back(i);
    FindCulpritIn(n.children[i], at, best);
    at.pop_back();
  }
}

void TextNode(const PatternNode& n, int depth, std::ostringstream& out) {
  out << "  " << std::string(static_cast<size_t>(depth) * 4, ' ') << n.node;
  if (!n.op.empty()) out << " [" << n.op << "]";
  out << "  latency " << FormatSeconds(n.latency.mean_s());
  if (depth > 0) out << "  call delay " << FormatSeconds(n.call_delay.mean_s());
  out << "  own " << FormatSeconds(OwnTimeSeconds(n)) << "\n";
  for (const auto& c : n.children) TextNode(c, depth + 1, out);
}

}  // namespace

Culprit FindCulprit(const Pattern& pattern) {
  Culprit c;
  std::vector<size_t> at;
  FindCulpritIn(pattern.root, at, &c);
  c.added_s = c.own_time_s * static_cast<double>(pattern.count);
  return c;
}

double OwnTimeSeconds(const PatternNode& node) {
  double lat = node.latency.mean_s();
  std::vector<std::pair<double, double>> iv;
  for (const auto& c : node.children) {
    double start = std::max(0.0, c.call_delay.mean_s());
    double end = std::min(lat, start + c.latency.mean_s());
    if (end > start) iv.emplace_back(start, end);
  }
  const double covered = UnionLength(&iv);
  return std::max(0.0, lat - covered);
}

nlohmann::ordered_json ResultToJson(const NestingResult& r) {
  nlohmann::ordered_json j;
  j["tool"] = "bbprof nest";
  j["version"] = kVersion;
  auto& in = j["input"];
  in["path"] = r.input.path;
  in["bytes"] = r.input.bytes;
  if (r.input.has_crc32) {
    char crc[9];
    std::snprintf(crc, sizeof crc, "%08x", r.input.crc32);
    in["crc32"] = crc;
  }
  in["messages"] = r.input.messages;
  in["call_pairs"] = r.input.call_pairs;
  in["unmatched_calls"] = r.input.unmatched_calls;
  in["unmatched_returns"] = r.input.unmatched_returns;
  in["pending_calls_evicted"] = r.input.pending_calls_evicted;
  in["node_names_folded"] = r.input.node_names_folded;
  in["unfinished_roots"] = r.input.unfinished_roots;
  in["duration_s"] = r.input.duration_s;
  in["mean_parallelism"] = r.input.mean_parallelism;
  in["free_messages"] = r.input.free_messages;
  in["nodes"] = r.input.nodes;
  in["meta"] = r.input.meta;
  auto& p = j["params"];
  p["penalty_overlap"] = r.params.penalty_overlap;
  p["penalty_same"] = r.params.penalty_same;
  p["penalty_generic"] = r.params.penalty_generic;
  p["skew_window_s"] = trace::NsToSeconds(r.params.skew_window);
  p["skew"] = r.params.skew_auto ? "auto" : "fixed";
  if (r.params.skew_auto) {
    auto& offsets = p["clock_offsets"];
    offsets = nlohmann::ordered_json::array();
    for (const NodeClockOffset& o : r.clock_offsets) {
      offsets.push_back({{"node", o.node},
                         {"offset_s", o.offset_s},
                         {"drift_ppm", o.drift_ppm},
                         {"reference", o.reference}});
    }
    auto& edges = p["skew_windows"];
    edges = nlohmann::ordered_json::array();
    for (const EdgeSkew& e : r.skew) {
      edges.push_back({{"caller", e.caller},
                       {"callee", e.callee},
                       {"start_window_s", e.start_window_s},
                       {"end_window_s", e.end_window_s},
                       {"children", e.children},
                       {"missed", e.missed}});
    }
  }
  p["smoothing"] = r.params.smooth_bins;
  p["bin_base"] = r.params.bin_base;
  p["score"] = r.params.raw_bin_scores ? "raw" : "density";
  p["refine_passes"] = r.params.refine_passes;
  p["timeline_passes"] = r.params.timeline_passes;
  p["assign"] = r.params.assign == Assign::kFcfs ? "fcfs" : "model";
  p["group_by"] = r.params.group_by_op ? "op" : "node";
  p["op_keys"] = r.params.op_keys;
  p["clients"] = r.params.clients.spec;
  p["sort"] = SortKeyName(r.sort);
  j["warnings"] = r.warnings;
  j["patterns"] = nlohmann::ordered_json::array();
  int rank = 0;
  for (const auto& pat : r.patterns) {
    nlohmann::ordered_json pj;
    pj["rank"] = ++rank;
    pj["signature"] = pat.signature;
    pj["count"] = pat.count;
    pj["total_latency_s"] = pat.total_latency_s();
    // The node adding the most absolute time: the largest mean own time.
    Culprit c = FindCulprit(pat);
    pj["culprit"] = {{"path", c.path},
                     {"node", c.node->node},
                     {"own_time_s", c.own_time_s},
                     {"added_s", c.added_s}};
    if (!pat.suspects.empty()) {
      auto& sj = pj["suspect"];
      for (const Suspect& s : pat.suspects) {
        sj.push_back({{"kind", s.kind}, {"reason", s.reason}});
      }
    }
    pj["root"] = NodeJson(pat.root, &pat.caller);
    if (pat.count > 0) {
      pj["examples"] = {{"median", ExampleJson(pat.median)},
                        {"slowest", ExampleJson(pat.slowest)}};
      pj["timeline"] = TimelineJson(pat.timeline);
    }
    j["patterns"].push_back(std::move(pj));
  }
  return j;
}

std::string ResultToText(const NestingResult& r) {
  std::ostringstream out;
  char buf[256];
  std::snprintf(buf, sizeof buf,
                "%s: %llu messages, %llu call pairs (%llu calls and %llu "
                "returns unmatched), %.3f s, mean parallelism %.2f\n",
                r.input.path.c_str(),
                static_cast<unsigned long long>(r.input.messages),
                static_cast<unsigned long long>(r.input.call_pairs),
                static_cast<unsigned long long>(r.input.unmatched_calls),
                static_cast<unsigned long long>(r.input.unmatched_returns),
                r.input.duration_s, r.input.mean_parallelism);
  out << buf;
  if (r.input.unfinished_roots > 0) {
    out << r.input.unfinished_roots
        << " root call(s) whose return was never seen (lost, or in flight at "
           "the end) are left out of the patterns\n";
  }
  if (r.patterns.empty()) {
    if (r.input.call_pairs == 0) {
      out << "\nno path patterns found: the trace has no matched call/return "
             "pair\n";
    } else {
      // Every matched call had a candidate parent, or the root calls' own
      // returns were never seen, or --min-count and --top kept none.
      out << "\nno path patterns found: no matched call was a complete "
             "root (a call with no candidate parent whose return was seen) "
             "that the filters kept; nodes that call themselves (a client "
             "and a server named alike) leave no root\n";
    }
    return out.str();
  }
  int rank = 0;
  for (const auto& pat : r.patterns) {
    double mean =
        pat.count ? pat.total_latency_s() / static_cast<double>(pat.count) : 0;
    out << "\n#" << ++rank << "  " << pat.signature << "\n";
    std::snprintf(buf, sizeof buf,
                  "  count %llu, total latency %s, mean latency %s\n",
                  static_cast<unsigned long long>(pat.count),
                  FormatSeconds(pat.total_latency_s()).c_str(),
                  FormatSeconds(mean).c_str());
    out << buf;
    Culprit culprit = FindCulprit(pat);
    if (pat.root.latency.mean_s() > 0) {
      std::snprintf(buf, sizeof buf,
                    "  most time added by %s: %s a request (%.0f%% of the "
                    "path's latency), %s in all\n",
                    culprit.node->node.c_str(),
                    FormatSeconds(culprit.own_time_s).c_str(),
                    100.0 * culprit.own_time_s / pat.root.latency.mean_s(),
                    FormatSeconds(culprit.added_s).c_str());
      out << buf;
    }
    for (const Suspect& s : pat.suspects) {
      out << "  suspect (" << s.kind << "): " << s.reason << "\n";
    }
    out << "  " << pat.caller << " ->\n";
    TextNode(pat.root, 0, out);
  }
  return out.str();
}

}  // namespace bbprof::nesting
