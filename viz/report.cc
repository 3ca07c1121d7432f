#include "viz/report.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>

#include "base/atomic_file.h"
#include "base/json_text.h"
#include "results/marks.h"
#include "results/model.h"
#include "results/validate.h"
#include "viz/charts.h"
#include "viz/convolution_graph.h"
#include "viz/graphviz.h"
#include "viz/pattern_graph.h"
#include "viz/report_assets.h"
#include "viz/service_map.h"
#include "viz/style.h"

namespace bbprof::viz {

namespace {

using nlohmann::json;


std::string Td(const std::string& text) {
  return "<td>" + HtmlEscape(text) + "</td>";
}
// A numeric cell: shown formatted, sorted by its value.
std::string NumTd(double v, const std::string& shown) {
  return "<td class=\"n\" data-v=\"" + Printf("%.9g", v) + "\">" +
         HtmlEscape(shown) + "</td>";
}
std::string DurTd(double v) { return NumTd(v, FormatDuration(v)); }

std::string InputValue(const json& in, const char* key) {
  auto it = in.find(key);
  if (it == in.end()) return "";
  if (it->is_string()) return it->get<std::string>();
  if (it->is_number_integer()) return std::to_string(it->get<int64_t>());
  if (it->is_number()) return Printf("%.6g", it->get<double>());
  return JsonCompact(*it);
}

// "What the input was": the input object, the trace's meta lines (the
// producer's header, capture counters and drops), and warnings drawn from
// them.
std::string InputSection(const json& doc,
                         const std::vector<Pattern>* patterns) {
  std::string out = "<section id=\"input\"><h2>What the input was</h2>";
  std::vector<std::string> warnings;
  if (auto w = doc.find("warnings"); w != doc.end() && w->is_array()) {
    for (const auto& s : *w) {
      if (s.is_string()) warnings.push_back(s.get<std::string>());
    }
  }
  out += "<table>";
  auto in = doc.find("input");
  if (in != doc.end() && in->is_object()) {
    static constexpr std::pair<const char*, const char*> kRows[] = {
        {"path", "source"},
        {"bytes", "bytes"},
        {"messages", "messages"},
        {"call_pairs", "call pairs"},
        {"unmatched_calls", "calls without a return"},
        {"unmatched_returns", "returns without a call"},
        {"unfinished_roots", "requests left unfinished"},
        {"free_messages", "free-form messages (not RPC)"},
        {"duration_s", "duration (s)"},
        {"mean_parallelism", "mean per-node parallelism"},
        {"nodes", "nodes"}};
    for (const auto& [key, label] : kRows) {
      std::string v = InputValue(*in, key);
      if (!v.empty())
        out += "<tr><th>" + std::string(label) + "</th>" + Td(v) + "</tr>";
    }
    for (const char* key :
         {"unmatched_calls", "unmatched_returns", "unfinished_roots"}) {
      auto it = in->find(key);
      if (it != in->end() && it->is_number_integer() &&
          it->get<int64_t>() > 0) {
        warnings.push_back(
            std::to_string(it->get<int64_t>()) + " " +
            (std::string(key) == "unmatched_calls"
                 ? "calls have no return (lost by the capture, or "
                   "in flight at its end)"
             : std::string(key) == "unmatched_returns"
                 ? "returns have no call (the capture started "
                   "after their call)"
                 : "requests never finished and are left out"));
      }
    }
    // Results made since nest marks its doubts carry them in "warnings"
    // (read above); an older result gets the same parallelism rule here.
    if (auto p = in->find("mean_parallelism");
        !doc.contains("warnings") && p != in->end() && p->is_number() &&
        p->get<double>() >= nesting::kHighParallelism) {
      warnings.push_back("mean per-node parallelism " +
                         Printf("%.2g", p->get<double>()) +
                         " is where docs/nesting.md measured poor accuracy: "
                         "rare patterns may be artefacts of the inference");
    }
    std::string counters;
    std::string header;
    if (auto m = in->find("meta"); m != in->end() && m->is_array()) {
      for (const auto& line : *m) {
        if (!line.is_string()) continue;
        const std::string s = line.get<std::string>();
        if (s.rfind("capture_stats", 0) == 0) {
          counters += s.substr(std::min<size_t>(s.size(), 14)) + "\n";
          for (const char* drop : {"kernel_drops=", "interface_drops="}) {
            size_t at = s.find(drop);
            if (at == std::string::npos) continue;
            unsigned long long n = std::strtoull(
                s.c_str() + at + std::char_traits<char>::length(drop), nullptr,
                10);
            if (n > 0) {
              warnings.push_back("the capture dropped packets (" +
                                 s.substr(at, s.find(' ', at) - at) + ")");
            }
          }
        } else {
          header += s + "\n";
        }
      }
    }
    if (!header.empty())
      out += "<tr><th>trace header</th><td class=\"meta\">" +
             HtmlEscape(header) + "</td></tr>";
    if (!counters.empty())
      out += "<tr><th>capture counters</th><td class=\"meta\">" +
             HtmlEscape(counters) + "</td></tr>";
  }
  if (auto t = doc.find("tool"); t != doc.end() && t->is_string()) {
    out += "<tr><th>analysis</th>" +
           Td(t->get<std::string>() + " " + InputValue(doc, "version")) +
           "</tr>";
  }
  if (patterns != nullptr) {
    out += "<tr><th>patterns</th>" + Td(std::to_string(patterns->size())) +
           "</tr>";
  }
  out += "</table>";
  for (const auto& w : warnings)
    out += "<div class=\"warn\">" + HtmlEscape(w) + "</div>";
  return out + "</section>";
}

std::string Page(const std::string& title, const std::string& nav,
                 const std::string& body) {
  return "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
         "<meta name=\"viewport\" content=\"width=device-width\">"
         "<title>" +
         HtmlEscape(title) + "</title><style>" + std::string(kReportCss) +
         "</style></head>\n<body>\n<h1>" + HtmlEscape(title) + "</h1>\n<nav>" +
         nav + "</nav>\n" + body + "\n<script>" + std::string(kReportScript) +
         "</script>\n</body></html>\n";
}

std::string Marks(const Pattern& p, const PhaseRow* phase) {
  std::string out;
  for (const auto& s : p.suspects) {
    out += "<span class=\"mark\" title=\"" + HtmlEscape(s.reason) + "\">" +
           HtmlEscape(s.kind) + "</span>";
  }
  if (phase != nullptr && !phase->burst.empty()) {
    out += "<span class=\"mark\" title=\"" + HtmlEscape(phase->burst) +
           "\">bursty</span>";
  }
  return out;
}

std::string TableRow(const Pattern& p, size_t index, const PhaseRow* phase) {
  const PatternNode& c = NodeAt(p, p.culprit_path);
  std::string culprit = c.name + (c.op.empty() ? "" : " " + c.op);
  std::string row = "<tr data-pattern=\"" + PatternId(index) + "\">";
  row += NumTd(static_cast<double>(p.rank), std::to_string(p.rank));
  row += "<td class=\"sig\"><a href=\"#" + PatternId(index) + "\">" +
         HtmlEscape(p.signature) + "</a></td>";
  row += Td(p.root.op);
  row += NumTd(static_cast<double>(p.count), std::to_string(p.count));
  row += DurTd(p.total_latency_s);
  row += DurTd(p.root.latency_s);
  row += DurTd(p.root.p50_s);
  row += DurTd(p.root.p90_s);
  row += DurTd(p.root.p99_s);
  row += Td(culprit);
  row += DurTd(p.culprit_added_s);
  row += "<td>" + Marks(p, phase) + "</td></tr>\n";
  return row;
}

void NodeHistograms(const PatternNode& n, std::string* out, int* shown) {
  constexpr int kMaxNodes = 24;
  if (*shown >= kMaxNodes) return;
  if (!n.own_time_hist.counts.empty()) {
    *out += HistogramSvg(n.own_time_hist, "own time of " + n.name +
                                              (n.op.empty() ? "" : " " + n.op));
    ++*shown;
  }
  for (const auto& c : n.children) NodeHistograms(c, out, shown);
}

Result<std::string> PatternDetails(GraphvizSession* gv, const Pattern& p,
                                   size_t index, const HeatScale& scale,
                                   bool open) {
  PatternGraphOptions go;
  go.legend = false;  // once, at the top of the page
  std::string svg;
  BBPROF_ASSIGN_OR_RETURN(svg,
                          RenderPattern(gv, p, index, scale, go, Format::kSvg));
  const PatternNode& c = NodeAt(p, p.culprit_path);
  std::string out = "<details class=\"pattern\" id=\"" + PatternId(index) +
                    "\"" + (open ? " open" : "") + "><summary>#" +
                    std::to_string(p.rank) + " " + HtmlEscape(p.signature) +
                    " &mdash; " + std::to_string(p.count) + " instances, " +
                    HtmlEscape(FormatDuration(p.total_latency_s)) +
                    " total</summary>";
  out += "<p>" +
         HtmlEscape(
             CulpritText(c.name, p.culprit_own_s, p.count, p.root.latency_s)) +
         "</p>";
  for (const auto& s : p.suspects) {
    out += "<div class=\"warn\">suspect (" + HtmlEscape(s.kind) +
           "): " + HtmlEscape(s.reason) + "</div>";
  }
  out += "<div class=\"pbody\"><div class=\"graph\">" + InlineSvg(svg) +
         "</div><div><div class=\"charts\">";
  out += HistogramSvg(p.root.latency_hist,
                      "latency: p50 " + FormatDuration(p.root.p50_s) +
                          ", p90 " + FormatDuration(p.root.p90_s) + ", p99 " +
                          FormatDuration(p.root.p99_s));
  int shown = 0;
  NodeHistograms(p.root, &out, &shown);
  out += "</div><div class=\"charts\">";
  if (p.median.present) {
    out += WaterfallSvg(
        p.median,
        "median request (" + FormatDuration(p.median.tree.latency_s) + ")");
  }
  if (p.slowest.present) {
    out += WaterfallSvg(
        p.slowest,
        "slowest request (" + FormatDuration(p.slowest.tree.latency_s) + ")");
  }
  return out + "</div></div></div></details>\n";
}

std::string LegendSection(double max_s) {
  std::string out = "<section id=\"legend\"><h2>How to read the pictures</h2>" +
                    ScaleSvg(max_s) + "<ul class=\"legend\">";
  for (const auto& line : PatternLegend(max_s))
    out += "<li>" + HtmlEscape(line) + "</li>";
  out += "<li>" + HtmlEscape(kLegendWaterfall) + "</li>";
  out +=
      "<li>histograms: bars of equal width between the smallest and the "
      "largest value (log-spaced bins when the values span a decade or "
      "more)</li>";
  out +=
      "<li>culprit: the node adding the most time on its pattern; "
      "&ldquo;adds&rdquo; is that time over all instances</li>";
  return out + "</ul></section>";
}

Result<std::string> NestReport(GraphvizSession* gv, const json& doc,
                               const ReportOptions& options) {
  std::vector<Pattern> patterns;
  BBPROF_ASSIGN_OR_RETURN(patterns, ParseNest(doc, options.top));
  const HeatScale scale(MaxAddedTime(patterns));
  double window =
      options.window_s > 0 ? options.window_s : DefaultWindow(patterns);
  Phases phases = BuildPhases(patterns, window);
  std::vector<const PhaseRow*> phase_of(patterns.size(), nullptr);
  for (const auto& r : phases.rows) phase_of[r.pattern] = &r;

  std::string body = InputSection(doc, &patterns);
  body += LegendSection(scale.max_s());
  body +=
      "<section id=\"patterns\"><h2>Patterns</h2><p><input id=\"filter\" "
      "type=\"search\" placeholder=\"filter: words in a signature, op, "
      "culprit or mark\"> <span id=\"shown\"></span></p>"
      "<table id=\"pattern-table\"><thead><tr>"
      "<th data-type=\"num\" class=\"n\">rank</th><th>pattern</th><th>op</th>"
      "<th data-type=\"num\" class=\"n\">count</th>"
      "<th data-type=\"num\" class=\"n\">total</th>"
      "<th data-type=\"num\" class=\"n\">mean</th>"
      "<th data-type=\"num\" class=\"n\">p50</th>"
      "<th data-type=\"num\" class=\"n\">p90</th>"
      "<th data-type=\"num\" class=\"n\">p99</th>"
      "<th>culprit</th><th data-type=\"num\" class=\"n\">adds</th>"
      "<th>marks</th></tr></thead><tbody>\n";
  for (size_t i = 0; i < patterns.size(); ++i)
    body += TableRow(patterns[i], i, phase_of[i]);
  body += "</tbody></table></section>";

  ServiceMap map = BuildServiceMap(patterns);
  std::string map_svg;
  BBPROF_ASSIGN_OR_RETURN(map_svg, RenderServiceMap(gv, map, Format::kSvg));
  body += "<section id=\"map\"><h2>Service map</h2><p>" +
          HtmlEscape(kLegendMap) + "</p><div class=\"graph\">" +
          InlineSvg(map_svg) + "</div></section>";

  body += "<section id=\"phases\"><h2>Phases</h2><p>" +
          HtmlEscape(kLegendPhases) +
          "; * marks a pattern frequent only for a while (most of its "
          "instances in a fifth of the windows or fewer).</p>" +
          PhasesSvg(phases, patterns) + "</section>";

  body += "<section id=\"details\"><h2>Each pattern</h2>";
  for (size_t i = 0; i < patterns.size(); ++i) {
    std::string d;
    BBPROF_ASSIGN_OR_RETURN(
        d, PatternDetails(gv, patterns[i], i, scale, i < options.open));
    body += d;
  }
  body += "</section>";
  const std::string nav =
      "<a href=\"#input\">input</a><a href=\"#legend\">legend</a>"
      "<a href=\"#patterns\">patterns</a><a href=\"#map\">service map</a>"
      "<a href=\"#phases\">phases</a><a href=\"#details\">each pattern</a>";
  std::string title = "bbprof report";
  if (doc.contains("input") && doc["input"].is_object() &&
      doc["input"].contains("path") && doc["input"]["path"].is_string()) {
    title += ": " + doc["input"]["path"].get<std::string>();
  }
  return Page(title, nav, body);
}

Result<std::string> ConvolveReport(GraphvizSession* gv, const json& doc) {
  ConvGraph cg;
  BBPROF_ASSIGN_OR_RETURN(cg, ParseConvolve(doc));
  std::string svg;
  BBPROF_ASSIGN_OR_RETURN(svg, RenderConvolution(gv, cg, true, Format::kSvg));
  std::string body = InputSection(doc, nullptr);
  body += "<section id=\"graph\"><h2>Message graph</h2><p>" +
          HtmlEscape(kLegendConvEdge) + "</p><div class=\"graph\">" +
          InlineSvg(svg) + "</div></section>";
  return Page("bbprof report: convolution",
              "<a href=\"#input\">input</a><a href=\"#graph\">graph</a>", body);
}

}  // namespace

Result<std::string> BuildReport(const json& result,
                                const ReportOptions& options) {
  BBPROF_RETURN_IF_ERROR(ValidateResult(result));
  std::string tool;
  BBPROF_ASSIGN_OR_RETURN(tool, GetString(result, "", "tool"));
  if (options.window_s < 0) return Status::Error("the window must be positive");
  GraphvizSession gv;
  if (gv.gvc() == nullptr)
    return Status::Error("cannot start graphviz (gvContext failed)");
  if (tool == "bbprof nest") return NestReport(&gv, result, options);
  return ConvolveReport(&gv, result);
}

Status WriteReport(const json& result, const ReportOptions& options,
                   const std::string& path) {
  auto page = BuildReport(result, options);
  if (!page.ok()) return page.status();
  return WriteFileAtomically(path, *page);
}

}  // namespace bbprof::viz
