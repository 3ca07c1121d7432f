#include "viz/diff_view.h"

#include <algorithm>
#include <cmath>
#include <map>

#include "viz/graphviz.h"
#include "viz/style.h"

namespace bbprof::viz {

namespace {

using json = nlohmann::json;

// Blue for a node that got faster, as deep as the heat scale's red for the
// same change: the one diverging addition to the style module's colours.
std::string FasterColour(double level) {
  level = std::clamp(level, 0.0, 1.0);
  auto mix = [&](int from, int to) {
    return static_cast<int>(std::lround(from + (to - from) * level));
  };
  char buf[8];
  std::snprintf(buf, sizeof buf, "#%02x%02x%02x", mix(255, 33), mix(255, 102),
                mix(255, 172));
  return buf;
}

double Num(const json& j, const char* key) {
  auto it = j.find(key);
  return it != j.end() && it->is_number() ? it->get<double>() : 0.0;
}

bool Significant(const json& node) {
  auto t = node.find("test");
  return t != node.end() && t->is_object() && t->value("significant", false);
}

double DeltaMean(const json& node) {
  auto d = node.find("delta_s");
  return d != node.end() && d->is_object() ? Num(*d, "mean") : 0.0;
}

std::string Signed(double s) {
  return (s > 0 ? "+" : s < 0 ? "-" : "") + FormatDuration(std::fabs(s));
}

// One pattern's graph: nodes in the diff's depth-first order, each attached
// to the nearest earlier node whose label is its label's prefix.
Result<std::string> PatternSvg(GraphvizSession* gv, const json& p, size_t rank,
                               double max_abs) {
  Canvas cv("d" + std::to_string(rank));
  Canvas::Set(cv.g(), "rankdir", "TB");
  std::map<std::string, Agnode_t*> by_label;
  const json& nodes = p.at("nodes");
  const std::string caller = p.value("caller", "");
  Agnode_t* caller_node = cv.Node("d" + std::to_string(rank) + "-caller");
  Canvas::Set(caller_node, "label", EscapeLabel(caller));
  Canvas::Set(caller_node, "style", "dashed");
  for (size_t i = 0; i < nodes.size(); ++i) {
    const json& n = nodes[i];
    const std::string label = n.value("label", "");
    const std::string id =
        "d" + std::to_string(rank) + "-n" + std::to_string(i);
    Agnode_t* node = cv.Node(id);
    Canvas::Set(node, "id", id);
    const double delta = DeltaMean(n);
    std::string text = EscapeLabel(n.value("node", ""));
    if (n.contains("op") && n["op"].is_string())
      text += "\\n" + EscapeLabel(n["op"].get<std::string>());
    const bool both = n.contains("delta_s");
    text += both ? "\\n" + Signed(delta) : "";
    Canvas::Set(node, "label", text);
    Canvas::Set(node, "style", "filled");
    std::string fill = "#ffffff";
    if (both && Significant(n) && max_abs > 0) {
      fill = delta > 0 ? HeatScale::ColourAt(delta / max_abs)
                       : FasterColour(-delta / max_abs);
      Canvas::Set(node, "penwidth", "3");
    }
    Canvas::Set(node, "fillcolor", fill);
    Canvas::Set(node, "fontcolor",
                fill == "#ffffff" || std::fabs(delta) < 0.5 * max_abs
                    ? "#000000"
                    : "#ffffff");
    by_label[label] = node;
    Agnode_t* parent = caller_node;
    const size_t cut = label.rfind(" > ");
    if (cut != std::string::npos) {
      auto it = by_label.find(label.substr(0, cut));
      if (it != by_label.end()) parent = it->second;
    }
    Agedge_t* e = cv.Edge(parent, node);
    if (parent == caller_node) Canvas::Set(e, "penwidth", "2");
  }
  auto svg = gv->Render(cv.g(), Format::kSvg);
  if (!svg.ok()) return svg.status();
  return InlineSvg(*svg);
}

std::string TestCell(const json& node) {
  auto t = node.find("test");
  if (t == node.end() || !t->is_object()) return "<td>not tested</td>";
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.2g", Num(*t, "p_adjusted"));
  return std::string("<td>") + (t->value("significant", false) ? "<b>" : "") +
         buf + (t->value("significant", false) ? " *</b>" : "") + "</td>";
}

}  // namespace

Result<std::string> RenderDiffHtml(const json& diff, int top) {
  if (!diff.is_object() || diff.value("tool", "") != "bbprof diff" ||
      !diff.contains("patterns") || !diff["patterns"].is_array()) {
    return Status::Error("not a 'bbprof diff' document");
  }
  const json& pats = diff["patterns"];
  const size_t shown =
      top > 0 ? std::min(pats.size(), static_cast<size_t>(top)) : pats.size();
  // One scale for the page: the largest significant change of a mean.
  double max_abs = 0;
  for (size_t i = 0; i < shown; ++i) {
    for (const json& n : pats[i].at("nodes")) {
      if (Significant(n)) max_abs = std::max(max_abs, std::fabs(DeltaMean(n)));
    }
  }
  const json before = diff.value("before", json::object());
  const json after = diff.value("after", json::object());
  std::string html =
      "<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>bbprof "
      "diff</title>"
      "<style>body{font-family:sans-serif;margin:1.5em}table{border-collapse:"
      "collapse}"
      "td,th{border:1px solid #ccc;padding:2px 6px;text-align:right}"
      "td:first-child{text-align:left}.sw{display:inline-block;width:2em;"
      "height:1em;"
      "border:1px solid #888;vertical-align:middle}</style></head><body>\n"
      "<h1>bbprof diff</h1>\n<p>before: " +
      HtmlEscape(before.value("path", "")) + " (" +
      std::to_string(before.value("requests", 0)) +
      " requests)<br>after: " + HtmlEscape(after.value("path", "")) + " (" +
      std::to_string(after.value("requests", 0)) +
      " requests)</p>\n<p>Patterns ranked by impact on total time. Node fill: "
      "change in mean "
      "latency, significant changes only (Mann-Whitney U, Holm-adjusted over "
      "every test of "
      "the diff): <span class=\"sw\" style=\"background:" +
      HeatScale::ColourAt(1) + "\"></span> slower by " +
      FormatDuration(max_abs) +
      ", <span class=\"sw\" style=\"background:" + FasterColour(1) +
      "\"></span> faster by " + FormatDuration(max_abs) +
      ", white: no significant change; thick border: significant. Node label: "
      "name, "
      "operation, change in mean latency.</p>\n";
  GraphvizSession gv;
  for (size_t i = 0; i < shown; ++i) {
    const json& p = pats[i];
    html += "<section><h2>#" + std::to_string(i + 1) + " " +
            HtmlEscape(p.value("signature", "")) + " (" +
            HtmlEscape(p.value("change", "")) +
            (p.value("significant", false) ? ", significant" : "") +
            ")</h2>\n<p>impact " + Signed(Num(p, "impact_s")) + "; count " +
            std::to_string(p.value("count_before", 0)) + " &rarr; " +
            std::to_string(p.value("count_after", 0)) + "</p>\n";
    auto svg = PatternSvg(&gv, p, i + 1, max_abs);
    if (!svg.ok()) return svg.status();
    html += *svg +
            "\n<table><tr><th>node</th><th>mean before</th><th>mean after</th>"
            "<th>&Delta; mean</th><th>&Delta; p50</th><th>&Delta; p90</th>"
            "<th>&Delta; p99</th><th>&Delta; own</th><th>p (Holm)</th></tr>\n";
    for (const json& n : p.at("nodes")) {
      html += "<tr><td>" + HtmlEscape(n.value("label", "")) + "</td>";
      const json b = n.value("latency_before_s", json());
      const json a = n.value("latency_after_s", json());
      html += "<td>" + (b.is_object() ? FormatDuration(Num(b, "mean")) : "") +
              "</td><td>" +
              (a.is_object() ? FormatDuration(Num(a, "mean")) : "") + "</td>";
      const json d = n.value("delta_s", json());
      for (const char* k : {"mean", "p50", "p90", "p99", "own_time"}) {
        html += "<td>" + (d.is_object() ? Signed(Num(d, k)) : "") + "</td>";
      }
      html += TestCell(n) + "</tr>\n";
    }
    html += "</table></section>\n";
  }
  html += "</body></html>\n";
  return html;
}

}  // namespace bbprof::viz
