#include "nesting/report.h"

#include <cstdio>
#include <functional>

namespace bbprof::nesting {

namespace {

nlohmann::ordered_json DistToJson(const Distribution& d) {
  return {{"mean", d.mean()},          {"p50", d.Quantile(0.50)},
          {"p90", d.Quantile(0.90)},   {"p99", d.Quantile(0.99)},
          {"min", d.min()},            {"max", d.max()}};
}

nlohmann::ordered_json NodeToJson(const Pattern& p, int i) {
  const PatternNode& n = p.nodes[i];
  nlohmann::ordered_json j;
  j["node"] = n.node;
  j["caller"] = n.caller;
  j["latency_s"] = DistToJson(n.latency);
  j["call_delay_s"] = DistToJson(n.call_delay);
  j["own_time_s"] = DistToJson(n.own_time);
  nlohmann::ordered_json kids = nlohmann::ordered_json::array();
  for (int c : n.children) kids.push_back(NodeToJson(p, c));
  j["children"] = std::move(kids);
  return j;
}

std::string FormatSeconds(double s) {
  char buf[64];
  double a = s < 0 ? -s : s;
  if (a >= 1 || a == 0) {
    std::snprintf(buf, sizeof buf, "%.3f s", s);
  } else if (a >= 1e-3) {
    std::snprintf(buf, sizeof buf, "%.3f ms", s * 1e3);
  } else {
    std::snprintf(buf, sizeof buf, "%.3f us", s * 1e6);
  }
  return buf;
}

}  // namespace

nlohmann::ordered_json ResultToJson(const NestResult& r) {
  nlohmann::ordered_json j;
  j["tool"] = "bbprof nest";
  j["version"] = "0.1.0";
  j["input"] = {{"path", r.input.path},
                {"messages", r.input.messages},
                {"call_pairs", r.input.call_pairs},
                {"unmatched_calls", r.input.unmatched_calls},
                {"unmatched_returns", r.input.unmatched_returns},
                {"other_messages", r.input.other_messages},
                {"root_calls", r.input.root_calls},
                {"duration_s", r.input.duration_s},
                {"mean_parallelism", r.input.mean_parallelism}};
  j["params"] = {{"penalty_overlap", r.params.penalty_overlap},
                 {"penalty_same", r.params.penalty_same},
                 {"penalty_generic", r.params.penalty_generic},
                 {"skew_window_s", trace::NsToSeconds(r.params.skew_window_ns)},
                 {"smoothing", r.params.smoothing_bins},
                 {"bin_base", r.params.bin_base}};
  nlohmann::ordered_json pats = nlohmann::ordered_json::array();
  for (size_t i = 0; i < r.patterns.size(); ++i) {
    const Pattern& p = r.patterns[i];
    pats.push_back({{"rank", i + 1},
                    {"signature", p.signature},
                    {"count", p.count},
                    {"total_latency_s", p.total_latency_s},
                    {"root", NodeToJson(p, 0)}});
  }
  j["patterns"] = std::move(pats);
  return j;
}

std::string ResultToText(const NestResult& r) {
  std::string out;
  char buf[512];
  std::snprintf(buf, sizeof buf,
                "%s: %llu messages, %llu call pairs, %llu unmatched calls, "
                "%llu unmatched returns, %llu MSG ignored, %.3f s, mean "
                "parallelism %.2f\n%zu patterns shown\n",
                r.input.path.c_str(), static_cast<unsigned long long>(r.input.messages),
                static_cast<unsigned long long>(r.input.call_pairs),
                static_cast<unsigned long long>(r.input.unmatched_calls),
                static_cast<unsigned long long>(r.input.unmatched_returns),
                static_cast<unsigned long long>(r.input.other_messages),
                r.input.duration_s, r.input.mean_parallelism, r.patterns.size());
  out += buf;
  for (size_t i = 0; i < r.patterns.size(); ++i) {
    const Pattern& p = r.patterns[i];
    std::snprintf(buf, sizeof buf, "\n#%zu  count %llu  total latency %s  %s\n", i + 1,
                  static_cast<unsigned long long>(p.count),
                  FormatSeconds(p.total_latency_s).c_str(), p.signature.c_str());
    out += buf;
    int worst = 0;
    std::function<void(int, int)> walk = [&](int n, int depth) {
      const PatternNode& node = p.nodes[n];
      std::string label = std::string(2 * depth + 2, ' ');
      label += depth == 0 ? node.caller + " -> " + node.node : node.node;
      std::snprintf(buf, sizeof buf, "%-40s latency %12s  delay %12s  own %12s\n",
                    label.c_str(), FormatSeconds(node.latency.mean()).c_str(),
                    FormatSeconds(node.call_delay.mean()).c_str(),
                    FormatSeconds(node.own_time.mean()).c_str());
      out += buf;
      if (node.own_time.mean() > p.nodes[worst].own_time.mean()) worst = n;
      for (int c : node.children) walk(c, depth + 1);
    };
    walk(0, 0);
    std::snprintf(buf, sizeof buf, "  most own time: %s (%s of %s mean latency)\n",
                  p.nodes[worst].node.c_str(),
                  FormatSeconds(p.nodes[worst].own_time.mean()).c_str(),
                  FormatSeconds(p.nodes[0].latency.mean()).c_str());
    out += buf;
  }
  return out;
}

}  // namespace bbprof::nesting
