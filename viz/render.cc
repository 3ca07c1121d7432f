#include "viz/render.h"

#include <algorithm>
#include <filesystem>

#include "base/atomic_file.h"
#include "results/validate.h"
#include "viz/convolution_graph.h"
#include "viz/graphviz.h"
#include "viz/pattern_graph.h"

namespace bbprof::viz {

namespace {

using nlohmann::json;

std::string IndexPage(const std::string& title, const std::string& body) {
  return "<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>" +
         HtmlEscape(title) + "</title></head>\n<body>\n<h1>" +
         HtmlEscape(title) + "</h1>\n" + body + "</body></html>\n";
}

// What the nest index lists as a pattern's culprit (plain text).
std::string PlainCulprit(const Pattern& p) {
  const PatternNode& c = NodeAt(p, p.culprit_path);
  return CulpritText(c.name, p.culprit_own_s, p.count, p.root.latency_s);
}

// The legend of every picture, once more on the index page.
std::string LegendHtml(const std::vector<std::string>& lines) {
  std::string out = "<ul>\n";
  for (const auto& l : lines) out += "<li>" + HtmlEscape(l) + "</li>\n";
  return out + "</ul>\n";
}

Result<std::vector<RenderedFile>> RenderNest(GraphvizSession* gv,
                                             const json& doc,
                                             const RenderOptions& options) {
  std::vector<Pattern> patterns;
  BBPROF_ASSIGN_OR_RETURN(patterns, ParseNest(doc, options.top));
  const std::string ext = FormatExtension(options.format);
  std::vector<RenderedFile> files;
  std::string body;
  if (patterns.empty()) {
    std::string text = "no patterns";
    if (doc.contains("input") && doc["input"].is_object() &&
        doc["input"].contains("path") && doc["input"]["path"].is_string()) {
      text += "\\nin " + EscapeLabel(doc["input"]["path"].get<std::string>());
    }
    std::string contents;
    BBPROF_ASSIGN_OR_RETURN(
        contents, RenderMessage(gv, "no_patterns", text, options.format));
    files.push_back({"patterns." + ext, std::move(contents)});
    body = "<p>No patterns: <a href=\"patterns." + ext + "\">patterns." + ext +
           "</a></p>\n";
    files.push_back(
        {"index.html", IndexPage("bbprof nest: path patterns", body)});
    return files;
  }
  // One scale for every picture of this render, so colours compare across
  // files and the one page.
  const HeatScale scale(MaxAddedTime(patterns));
  PatternGraphOptions graph_options;
  graph_options.highlight = options.highlight;
  std::vector<std::string> pictures;
  body =
      "<table>\n<tr><th>rank</th><th>pattern</th><th>instances</th>"
      "<th>total latency</th><th>mean latency</th>" +
      std::string(options.highlight ? "<th>culprit</th>" : "") + "</tr>\n";
  for (size_t i = 0; i < patterns.size(); ++i) {
    const Pattern& p = patterns[i];
    std::string contents;
    BBPROF_ASSIGN_OR_RETURN(
        contents,
        RenderPattern(gv, p, i, scale, graph_options, options.format));
    std::string name = "pattern-" + PatternId(i).substr(1) + "." + ext;
    std::string link =
        options.one_page ? "patterns." + ext + "#" + PatternId(i) : name;
    body += "<tr><td>" + std::to_string(p.rank) + "</td><td><a href=\"" + link +
            "\">" + HtmlEscape(p.signature) + "</a></td><td>" +
            std::to_string(p.count) + "</td><td>" +
            HtmlEscape(FormatDuration(p.total_latency_s)) + "</td><td>" +
            HtmlEscape(FormatDuration(p.root.latency_s)) + "</td>" +
            (options.highlight ? "<td>" + HtmlEscape(PlainCulprit(p)) + "</td>"
                               : std::string()) +
            "</tr>\n";
    if (options.one_page) {
      pictures.push_back(std::move(contents));
    } else {
      files.push_back({std::move(name), std::move(contents)});
    }
  }
  body += "</table>\n";
  auto legend = PatternLegend(scale.max_s());
  if (!options.highlight) legend.pop_back();
  body += LegendHtml(legend);
  if (options.one_page) {
    std::string page;
    if (options.format == Format::kSvg) {
      BBPROF_ASSIGN_OR_RETURN(page, StackSvgs(pictures));
    } else if (options.format == Format::kDot) {
      // A sequence of graphs, which `dot` reads one after another.
      for (const auto& g : pictures) page += g;
    } else {
      return Status::Error("--one-page is available for svg and dot, not png");
    }
    files.push_back({"patterns." + ext, std::move(page)});
  }
  files.push_back(
      {"index.html", IndexPage("bbprof nest: path patterns", body)});
  return files;
}

Result<std::vector<RenderedFile>> RenderConvolve(GraphvizSession* gv,
                                                 const json& doc,
                                                 const RenderOptions& options) {
  ConvGraph cg;
  BBPROF_ASSIGN_OR_RETURN(cg, ParseConvolve(doc));
  const std::string name =
      std::string("convolution.") + FormatExtension(options.format);
  std::string contents;
  BBPROF_ASSIGN_OR_RETURN(
      contents, RenderConvolution(gv, cg, options.highlight, options.format));
  std::vector<RenderedFile> files;
  files.push_back({name, std::move(contents)});
  files.push_back(
      {"index.html",
       IndexPage("bbprof convolve: message graph",
                 "<p><a href=\"" + name + "\">" + name + "</a></p>\n" +
                     LegendHtml({std::string(kLegendConvEdge)}))});
  return files;
}

}  // namespace

bool ParseFormat(const std::string& text, Format* format) {
  if (text == "dot") {
    *format = Format::kDot;
  } else if (text == "svg") {
    *format = Format::kSvg;
  } else if (text == "png") {
    *format = Format::kPng;
  } else {
    return false;
  }
  return true;
}

const char* FormatExtension(Format format) {
  switch (format) {
    case Format::kDot:
      return "dot";
    case Format::kSvg:
      return "svg";
    case Format::kPng:
      return "png";
  }
  return "svg";
}

Result<std::vector<RenderedFile>> RenderResult(const nlohmann::json& result,
                                               const RenderOptions& options) {
  BBPROF_RETURN_IF_ERROR(ValidateResult(result));
  std::string tool;
  BBPROF_ASSIGN_OR_RETURN(tool, GetString(result, "", "tool"));
  if (options.one_page && options.format == Format::kPng &&
      tool == "bbprof nest") {
    return Status::Error("--one-page is available for svg and dot, not png");
  }
  GraphvizSession gv;
  if (gv.gvc() == nullptr)
    return Status::Error("cannot start graphviz (gvContext failed)");
  if (tool == "bbprof nest") return RenderNest(&gv, result, options);
  return RenderConvolve(&gv, result, options);
}

Status RenderResultToDir(const nlohmann::json& result,
                         const RenderOptions& options, const std::string& dir) {
  auto files = RenderResult(result, options);
  if (!files.ok()) return files.status();
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) return Status::Error(dir + ": cannot create folder: " + ec.message());
  for (const auto& f : *files) {
    BBPROF_RETURN_IF_ERROR(WriteFileAtomically(dir + "/" + f.name, f.contents));
  }
  return Status::Ok();
}

}  // namespace bbprof::viz
