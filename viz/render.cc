#include "viz/render.h"

#include <graphviz/cgraph.h>
#include <graphviz/gvc.h>

#include <algorithm>
#include <cinttypes>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <mutex>
#include <string_view>

#include "base/atomic_file.h"
#include "viz/result_json.h"

namespace bbprof::viz {

namespace {

using nlohmann::json;

// ---------------------------------------------------------------------------
// Reading the result document, after ValidateResult (viz/result_json.h) has
// checked it: the accessors still name the JSON path of anything amiss.

#define VIZ_CONCAT_INNER(a, b) a##b
#define VIZ_CONCAT(a, b) VIZ_CONCAT_INNER(a, b)
#define VIZ_ASSIGN(lhs, expr) \
  VIZ_ASSIGN_IMPL(VIZ_CONCAT(viz_r_, __LINE__), lhs, expr)
#define VIZ_ASSIGN_IMPL(tmp, lhs, expr) \
  auto tmp = (expr);                    \
  if (!tmp.ok()) return tmp.status();   \
  lhs = std::move(tmp).value()

// A node of a nesting pattern (spec: patterns[].root, recursively).
struct PatternNode {
  std::string name;
  std::string op;  // the node's operation; empty when unknown
  double latency_s = 0;
  double call_delay_s = 0;
  std::vector<PatternNode> children;
  double own_s = 0;  // computed: OwnTime()
};

struct Pattern {
  int64_t rank = 0;
  std::string signature;
  int64_t count = 0;
  double total_latency_s = 0;
  std::string caller;
  PatternNode root;
};

// Deeper trees than this are not causal paths anyone can read; refusing them
// also bounds our recursion on hostile input.
constexpr int kMaxDepth = 200;

Status ParseNode(const json& j, const std::string& path, bool is_root,
                 int depth, PatternNode* out) {
  if (depth > kMaxDepth) {
    return Status::Error(path + ": pattern nested deeper than " +
                         std::to_string(kMaxDepth) + " calls");
  }
  if (!j.is_object()) return FieldError(path, "an object", "wrong type");
  VIZ_ASSIGN(out->name, GetString(j, path, "node"));
  // "op" came later (issue 14): absent or null in older results.
  if (auto op = j.find("op"); op != j.end() && !op->is_null()) {
    if (!op->is_string())
      return FieldError(path + ".op", "a string or null", "wrong type");
    out->op = op->get<std::string>();
  }
  const json* lat;
  VIZ_ASSIGN(lat, Member(j, path, "latency_s", "an object"));
  VIZ_ASSIGN(out->latency_s, GetNumber(*lat, path + ".latency_s", "mean"));
  if (!is_root) {
    // The root's call delay is 0 by definition and not drawn.
    const json* cd;
    VIZ_ASSIGN(cd, Member(j, path, "call_delay_s", "an object"));
    VIZ_ASSIGN(out->call_delay_s,
               GetNumber(*cd, path + ".call_delay_s", "mean"));
  }
  const json* children;
  VIZ_ASSIGN(children, GetArray(j, path, "children"));
  out->children.resize(children->size());
  for (size_t i = 0; i < children->size(); ++i) {
    BBPROF_RETURN_IF_ERROR(
        ParseNode((*children)[i], path + ".children[" + std::to_string(i) + "]",
                  false, depth + 1, &out->children[i]));
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

Result<std::vector<Pattern>> ParseNest(const json& doc, size_t top) {
  const json* arr;
  VIZ_ASSIGN(arr, GetArray(doc, "", "patterns"));
  size_t n = arr->size();
  if (top != 0) n = std::min(n, top);
  std::vector<Pattern> out(n);
  for (size_t i = 0; i < n; ++i) {
    const json& p = (*arr)[i];
    std::string path = "patterns[" + std::to_string(i) + "]";
    if (!p.is_object()) return FieldError(path, "an object", "wrong type");
    Pattern& pat = out[i];
    VIZ_ASSIGN(pat.rank, GetInteger(p, path, "rank"));
    VIZ_ASSIGN(pat.signature, GetString(p, path, "signature"));
    VIZ_ASSIGN(pat.count, GetInteger(p, path, "count"));
    VIZ_ASSIGN(pat.total_latency_s, GetNumber(p, path, "total_latency_s"));
    const json* root;
    VIZ_ASSIGN(root, Member(p, path, "root", "an object"));
    VIZ_ASSIGN(pat.caller, GetString(*root, path + ".root", "caller"));
    BBPROF_RETURN_IF_ERROR(
        ParseNode(*root, path + ".root", true, 0, &pat.root));
    ComputeOwnTimes(&pat.root);
  }
  return out;
}

struct ConvDelay {
  double delay_s;
  int64_t count;
};
struct ConvEdge {
  int64_t from, to, count;
  std::vector<ConvDelay> delays;
};
struct ConvGraph {
  std::vector<std::string> roots;
  std::vector<std::pair<int64_t, std::string>> vertices;  // id, node
  std::vector<ConvEdge> edges;
};

Result<ConvGraph> ParseConvolve(const json& doc) {
  ConvGraph g;
  const json* roots;
  VIZ_ASSIGN(roots, GetArray(doc, "", "roots"));
  for (size_t i = 0; i < roots->size(); ++i) {
    if (!(*roots)[i].is_string()) {
      return FieldError("roots[" + std::to_string(i) + "]", "a string",
                        "wrong type");
    }
    g.roots.push_back((*roots)[i].get<std::string>());
  }
  const json* vertices;
  VIZ_ASSIGN(vertices, GetArray(doc, "", "vertices"));
  for (size_t i = 0; i < vertices->size(); ++i) {
    std::string path = "vertices[" + std::to_string(i) + "]";
    int64_t id;
    std::string node;
    VIZ_ASSIGN(id, GetInteger((*vertices)[i], path, "id"));
    VIZ_ASSIGN(node, GetString((*vertices)[i], path, "node"));
    for (const auto& v : g.vertices) {
      if (v.first == id)
        return Status::Error(path + ".id: duplicate vertex id " +
                             std::to_string(id));
    }
    g.vertices.emplace_back(id, std::move(node));
  }
  auto known = [&](int64_t id) {
    return std::any_of(g.vertices.begin(), g.vertices.end(),
                       [&](const auto& v) { return v.first == id; });
  };
  const json* edges;
  VIZ_ASSIGN(edges, GetArray(doc, "", "edges"));
  for (size_t i = 0; i < edges->size(); ++i) {
    std::string path = "edges[" + std::to_string(i) + "]";
    const json& e = (*edges)[i];
    ConvEdge ce;
    VIZ_ASSIGN(ce.from, GetInteger(e, path, "from"));
    VIZ_ASSIGN(ce.to, GetInteger(e, path, "to"));
    VIZ_ASSIGN(ce.count, GetInteger(e, path, "count"));
    if (!known(ce.from))
      return Status::Error(path + ".from: no vertex with id " +
                           std::to_string(ce.from));
    if (!known(ce.to))
      return Status::Error(path + ".to: no vertex with id " +
                           std::to_string(ce.to));
    const json* delays;
    VIZ_ASSIGN(delays, GetArray(e, path, "delays"));
    for (size_t k = 0; k < delays->size(); ++k) {
      std::string dp = path + ".delays[" + std::to_string(k) + "]";
      ConvDelay d;
      VIZ_ASSIGN(d.delay_s, GetNumber((*delays)[k], dp, "delay_s"));
      VIZ_ASSIGN(d.count, GetInteger((*delays)[k], dp, "count"));
      ce.delays.push_back(d);
    }
    // The spec promises declining count order; keep it even if a producer
    // forgot (stable, so equal counts keep the producer's order).
    std::stable_sort(ce.delays.begin(), ce.delays.end(),
                     [](const ConvDelay& a, const ConvDelay& b) {
                       return a.count > b.count;
                     });
    g.edges.push_back(std::move(ce));
  }
  return g;
}

// ---------------------------------------------------------------------------
// Labels. Graphviz interprets backslash escapes in labels (\n, \N, \G...) and
// HTML entities (&amp;), so user names are escaped for both; '<', '>' and '"'
// are escaped by the SVG writer and by agwrite themselves.

std::string EscapeLabel(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (char c : s) {
    if (c == '\\') {
      out += "\\\\";
    } else if (c == '&') {
      out += "&#38;";
    } else if (c == '\n' || c == '\r') {
      out += ' ';
    } else {
      out += c;
    }
  }
  return out;
}

std::string Printf(const char* fmt, double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, fmt, v);
  return buf;
}

std::string Percent(double share) {
  return Printf("%.0f%%", std::round(share * 100.0));
}

// ---------------------------------------------------------------------------
// Graphviz handles. Errors from cgraph/gvc go to a buffer instead of stderr
// so they can be returned as a Status.

std::string* g_graphviz_errors = nullptr;

int CollectGraphvizError(char* message) {
  if (g_graphviz_errors != nullptr) *g_graphviz_errors += message;
  return 0;
}

int PutString(void* chan, const char* str) {
  static_cast<std::string*>(chan)->append(str);
  return 1;
}
int FlushNothing(void*) { return 0; }

// agwrite() writes through the graph's I/O discipline: ours appends to a
// std::string, so dot text never touches a FILE*.
Agiodisc_t kStringIo = {nullptr, PutString, FlushNothing};
Agdisc_t kStringDisc = {&AgMemDisc, &AgIdDisc, &kStringIo};

struct GraphCloser {
  void operator()(Agraph_t* g) const { agclose(g); }
};
using GraphPtr = std::unique_ptr<Agraph_t, GraphCloser>;

class Canvas {
 public:
  explicit Canvas(const std::string& name)
      : g_(agopen(const_cast<char*>(name.c_str()), Agdirected, &kStringDisc)) {
    Set(g_.get(), "fontname", "Helvetica");
    agattr(g_.get(), AGNODE, const_cast<char*>("fontname"),
           const_cast<char*>("Helvetica"));
    agattr(g_.get(), AGEDGE, const_cast<char*>("fontname"),
           const_cast<char*>("Helvetica"));
    agattr(g_.get(), AGEDGE, const_cast<char*>("fontsize"),
           const_cast<char*>("10"));
  }
  Agraph_t* g() { return g_.get(); }

  static void Set(void* obj, const char* key, const std::string& value) {
    agsafeset(obj, const_cast<char*>(key), const_cast<char*>(value.c_str()),
              const_cast<char*>(""));
  }
  Agnode_t* Node(const std::string& name) {
    return agnode(g_.get(), const_cast<char*>(name.c_str()), 1);
  }
  Agedge_t* Edge(Agnode_t* t, Agnode_t* h) {
    return agedge(g_.get(), t, h, nullptr, 1);
  }

 private:
  GraphPtr g_;
};

struct GvcCloser {
  void operator()(GVC_t* gvc) const { gvFreeContext(gvc); }
};
using GvcPtr = std::unique_ptr<GVC_t, GvcCloser>;

// One Graphviz context for the whole process, freed at exit. Plugins (the
// dot layout, the SVG and PNG writers) come from Graphviz's installed
// configuration (config6a, written by `dot -c` when the package is
// installed). A context per render would be cleaner, but Graphviz 2.42's
// pango plugin caches a font name owned by the first context and reads it
// after gvFreeContext() freed it (a use-after-free ASan reports on the second
// context), so the context must outlive every render.
GVC_t* SharedContext() {
  static GvcPtr context(gvContext());
  return context.get();
}

Result<std::string> RenderGraph(GVC_t* gvc, Agraph_t* g, Format format) {
  std::string out;
  if (format == Format::kDot) {
    // The graph as built, before layout: portable, readable, and the same
    // bytes whatever fonts the machine has.
    if (agwrite(g, &out) != 0) return Status::Error("cannot write dot text");
    return out;
  }
  std::string errors;
  g_graphviz_errors = &errors;
  agusererrf previous = agseterrf(CollectGraphvizError);
  Status status;
  if (gvLayout(gvc, g, "dot") != 0) {
    status = Status::Error("graphviz layout failed: " + errors);
  } else {
    char* data = nullptr;
    unsigned int length = 0;
    const char* fmt = format == Format::kSvg ? "svg" : "png";
    if (gvRenderData(gvc, g, fmt, &data, &length) != 0 || data == nullptr) {
      status = Status::Error(
          std::string("graphviz cannot render ") + fmt +
          " (is its plugin installed? run 'dot -c' as root): " + errors);
    } else {
      out.assign(data, length);
    }
    gvFreeRenderData(data);
    gvFreeLayout(gvc, g);
  }
  agseterrf(previous);
  g_graphviz_errors = nullptr;
  if (!status.ok()) return status;
  return out;
}

// ---------------------------------------------------------------------------
// Figure 8: one nesting pattern.

std::string PatternId(size_t index) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "p%03zu", index + 1);
  return buf;
}

struct Culprit {
  const PatternNode* node = nullptr;
  double own_s = -1;
};

void FindCulprit(const PatternNode& n, Culprit* c) {
  if (n.own_s > c->own_s) {
    c->node = &n;
    c->own_s = n.own_s;
  }
  for (const auto& ch : n.children) FindCulprit(ch, c);
}

std::string CulpritLine(const Pattern& p) {
  Culprit c;
  FindCulprit(p.root, &c);
  if (c.node == nullptr || p.root.latency_s <= 0) return "";
  return EscapeLabel(c.node->name) + " adds " +
         Percent(c.own_s / p.root.latency_s) + " of this path's latency";
}

std::string TitleFor(const Pattern& p, const RenderOptions& options) {
  std::string t = "#" + std::to_string(p.rank) + "  " +
                  EscapeLabel(p.signature) + "\\l" + std::to_string(p.count) +
                  " instances, " + FormatDuration(p.total_latency_s) +
                  " total, " + FormatDuration(p.root.latency_s) + " mean\\l";
  if (options.highlight) {
    std::string line = CulpritLine(p);
    if (!line.empty()) t += line + "\\l";
  }
  return t;
}

// Fill from white (no own time) to red (all of the path's latency), in HSV so
// the hue stays constant and only the saturation says "how much".
std::string FillFor(double share) {
  share = std::clamp(share, 0.0, 1.0);
  return Printf("0.000 %.3f 1.000", share * 0.85);
}

void AddPatternNodes(Canvas* cv, const PatternNode& n, Agnode_t* parent,
                     const std::string& prefix, double path_latency,
                     const RenderOptions& options, int* counter,
                     const PatternNode* culprit, Agnode_t** out) {
  std::string id = prefix + "-n" + std::to_string((*counter)++);
  Agnode_t* node = cv->Node(id);
  Canvas::Set(node, "id", id);
  // The operation goes under the node's name: two operations of one node
  // are two boxes of one name.
  const std::string op_line = n.op.empty() ? "" : "\\n" + EscapeLabel(n.op);
  Canvas::Set(
      node, "label",
      EscapeLabel(n.name) + op_line + "\\n" + FormatDuration(n.latency_s));
  double share = path_latency > 0 ? n.own_s / path_latency : 0;
  Canvas::Set(
      node, "tooltip",
      EscapeLabel(n.name) + (n.op.empty() ? "" : " " + EscapeLabel(n.op)) +
          ": latency " + FormatDuration(n.latency_s) + ", own time " +
          FormatDuration(n.own_s) + " (" + Percent(share) + " of the path)");
  if (options.highlight) {
    Canvas::Set(node, "style", "filled");
    Canvas::Set(node, "fillcolor", FillFor(share));
    if (&n == culprit) Canvas::Set(node, "penwidth", "3");
  }
  if (parent != nullptr) {
    Agedge_t* e = cv->Edge(parent, node);
    Canvas::Set(e, "id", id + "-call");
    Canvas::Set(e, "label", FormatDuration(n.call_delay_s));
  }
  if (out != nullptr) *out = node;
  for (const auto& c : n.children) {
    AddPatternNodes(cv, c, node, prefix, path_latency, options, counter,
                    culprit, nullptr);
  }
}

Result<std::string> RenderPattern(GVC_t* gvc, const Pattern& p, size_t index,
                                  const RenderOptions& options) {
  std::string prefix = PatternId(index);
  Canvas cv("pattern_" + prefix.substr(1));
  Canvas::Set(cv.g(), "id", prefix);
  Canvas::Set(cv.g(), "label", TitleFor(p, options));
  Canvas::Set(cv.g(), "labelloc", "t");
  Canvas::Set(cv.g(), "labeljust", "l");
  Canvas::Set(cv.g(), "fontsize", "12");
  Agnode_t* caller = cv.Node(prefix + "-caller");
  Canvas::Set(caller, "id", prefix + "-caller");
  Canvas::Set(caller, "label", EscapeLabel(p.caller));
  Canvas::Set(caller, "style", "dashed");
  Culprit c;
  FindCulprit(p.root, &c);
  int counter = 0;
  Agnode_t* root = nullptr;
  AddPatternNodes(&cv, p.root, nullptr, prefix, p.root.latency_s, options,
                  &counter, c.node, &root);
  // Section 5.4: the instance count and total latency sit on the first edge.
  Agedge_t* first = cv.Edge(caller, root);
  Canvas::Set(first, "id", prefix + "-first");
  Canvas::Set(first, "label",
              std::to_string(p.count) + " calls\\n" +
                  FormatDuration(p.total_latency_s) + " total");
  Canvas::Set(first, "style", "bold");
  return RenderGraph(gvc, cv.g(), options.format);
}

Result<std::string> RenderMessage(GVC_t* gvc, const std::string& name,
                                  const std::string& text, Format format) {
  Canvas cv(name);
  Canvas::Set(cv.g(), "id", name);
  Agnode_t* n = cv.Node("message");
  Canvas::Set(n, "id", "message");
  Canvas::Set(n, "shape", "box");
  Canvas::Set(n, "style", "rounded");
  Canvas::Set(n, "label", text);
  return RenderGraph(gvc, cv.g(), format);
}

// ---------------------------------------------------------------------------
// One page of many patterns. Each pattern is laid out on its own (fast and
// readable: dot on one graph of hundreds of clusters is neither) and the
// pictures are stacked: SVG nests each <svg> at its offset; dot text is a
// sequence of graphs, which `dot` reads one after another.

void ReplaceAttr(std::string* tag, const char* attr, const std::string& value) {
  std::string key = std::string(" ") + attr + "=\"";
  size_t at = tag->find(key);
  if (at == std::string::npos) return;
  size_t start = at + key.size();
  size_t end = tag->find('"', start);
  tag->replace(start, end - start, value);
}

Result<std::string> StackSvgs(const std::vector<std::string>& svgs) {
  constexpr double kGap = 24;
  std::string body;
  double width = 0, y = 0;
  for (const auto& svg : svgs) {
    size_t open = svg.find("<svg");
    if (open == std::string::npos)
      return Status::Error("graphviz SVG without <svg>");
    size_t close = svg.find('>', open);
    std::string tag = svg.substr(open, close - open);
    // The viewBox holds the exact size; width/height are rounded to points.
    double w = 0, h = 0;
    size_t vb = tag.find("viewBox=\"");
    if (vb == std::string::npos ||
        std::sscanf(tag.c_str() + vb + 9, "%*f %*f %lf %lf", &w, &h) != 2) {
      return Status::Error("graphviz SVG without a viewBox");
    }
    // Inner sizes in the page's user units (1 unit = 1 pt), not absolute pt.
    ReplaceAttr(&tag, "width", Printf("%.2f", w));
    ReplaceAttr(&tag, "height", Printf("%.2f", h));
    body += tag.substr(0, 4) + " x=\"0\" y=\"" + Printf("%.2f", y) + "\"" +
            tag.substr(4);
    body += svg.substr(close);
    if (!body.empty() && body.back() != '\n') body += '\n';
    width = std::max(width, w);
    y += h + kGap;
  }
  double height = std::max(0.0, y - kGap);
  std::string page =
      "<?xml version=\"1.0\" encoding=\"UTF-8\" standalone=\"no\"?>\n"
      "<svg xmlns=\"http://www.w3.org/2000/svg\" "
      "xmlns:xlink=\"http://www.w3.org/1999/xlink\" width=\"" +
      Printf("%.2f", width) + "pt\" height=\"" + Printf("%.2f", height) +
      "pt\" viewBox=\"0.00 0.00 " + Printf("%.2f", width) + " " +
      Printf("%.2f", height) +
      "\">\n<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n" + body +
      "</svg>\n";
  return page;
}

std::string HtmlEscape(std::string_view s) {
  std::string out;
  for (char c : s) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      default:
        out += c;
    }
  }
  return out;
}

std::string IndexPage(const std::string& title, const std::string& rows) {
  return "<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>" +
         HtmlEscape(title) + "</title></head>\n<body>\n<h1>" +
         HtmlEscape(title) + "</h1>\n" + rows + "</body></html>\n";
}

// What the nest index lists for a pattern (plain text; escaped by the caller).
std::string PlainCulprit(const Pattern& p) {
  Culprit c;
  FindCulprit(p.root, &c);
  if (c.node == nullptr || p.root.latency_s <= 0) return "";
  return c.node->name + " adds " + Percent(c.own_s / p.root.latency_s);
}

Result<std::vector<RenderedFile>> RenderNest(GVC_t* gvc, const json& doc,
                                             const RenderOptions& options) {
  std::vector<Pattern> patterns;
  VIZ_ASSIGN(patterns, ParseNest(doc, options.top));
  const std::string ext = FormatExtension(options.format);
  std::vector<RenderedFile> files;
  std::string rows;
  if (patterns.empty()) {
    std::string text = "no patterns";
    if (doc.contains("input") && doc["input"].is_object() &&
        doc["input"].contains("path") && doc["input"]["path"].is_string()) {
      text += "\\nin " + EscapeLabel(doc["input"]["path"].get<std::string>());
    }
    std::string contents;
    VIZ_ASSIGN(contents,
               RenderMessage(gvc, "no_patterns", text, options.format));
    files.push_back({"patterns." + ext, std::move(contents)});
    rows = "<p>No patterns: <a href=\"patterns." + ext + "\">patterns." + ext +
           "</a></p>\n";
  } else {
    std::vector<std::string> pictures;
    rows =
        "<table>\n<tr><th>rank</th><th>pattern</th><th>instances</th>"
        "<th>total latency</th><th>mean latency</th><th>culprit</th></tr>\n";
    for (size_t i = 0; i < patterns.size(); ++i) {
      const Pattern& p = patterns[i];
      std::string contents;
      VIZ_ASSIGN(contents, RenderPattern(gvc, p, i, options));
      std::string name = "pattern-" + PatternId(i).substr(1) + "." + ext;
      std::string link =
          options.one_page ? "patterns." + ext + "#" + PatternId(i) : name;
      rows += "<tr><td>" + std::to_string(p.rank) + "</td><td><a href=\"" +
              link + "\">" + HtmlEscape(p.signature) + "</a></td><td>" +
              std::to_string(p.count) + "</td><td>" +
              HtmlEscape(FormatDuration(p.total_latency_s)) + "</td><td>" +
              HtmlEscape(FormatDuration(p.root.latency_s)) + "</td><td>" +
              HtmlEscape(PlainCulprit(p)) + "</td></tr>\n";
      if (options.one_page) {
        pictures.push_back(std::move(contents));
      } else {
        files.push_back({std::move(name), std::move(contents)});
      }
    }
    rows += "</table>\n";
    if (options.one_page) {
      std::string page;
      if (options.format == Format::kSvg) {
        VIZ_ASSIGN(page, StackSvgs(pictures));
      } else if (options.format == Format::kDot) {
        for (const auto& g : pictures) page += g;
      } else {
        return Status::Error(
            "--one-page is available for svg and dot, not png");
      }
      files.push_back({"patterns." + ext, std::move(page)});
    }
  }
  files.push_back(
      {"index.html", IndexPage("bbprof nest: path patterns", rows)});
  return files;
}

Result<std::vector<RenderedFile>> RenderConvolve(GVC_t* gvc, const json& doc,
                                                 const RenderOptions& options) {
  ConvGraph cg;
  VIZ_ASSIGN(cg, ParseConvolve(doc));
  const std::string ext = FormatExtension(options.format);
  std::string name = "convolution." + ext;
  std::string contents;
  if (cg.edges.empty()) {
    VIZ_ASSIGN(contents,
               RenderMessage(gvc, "no_paths", "no paths", options.format));
  } else {
    Canvas cv("convolution");
    Canvas::Set(cv.g(), "id", "convolution");
    std::string title =
        "bbprof convolve: " + std::to_string(cg.edges.size()) + " edges";
    if (!cg.roots.empty()) {
      title += ", roots";
      for (const auto& r : cg.roots) title += " " + EscapeLabel(r);
    }
    Canvas::Set(cv.g(), "label", title);
    Canvas::Set(cv.g(), "labelloc", "t");
    Canvas::Set(cv.g(), "fontsize", "12");
    std::vector<std::pair<int64_t, Agnode_t*>> nodes;
    for (const auto& [id, node] : cg.vertices) {
      std::string nid = "v" + std::to_string(id);
      Agnode_t* n = cv.Node(nid);
      Canvas::Set(n, "id", nid);
      Canvas::Set(n, "label", EscapeLabel(node));
      if (std::find(cg.roots.begin(), cg.roots.end(), node) != cg.roots.end()) {
        Canvas::Set(n, "penwidth", "2");
      }
      nodes.emplace_back(id, n);
    }
    auto find = [&](int64_t id) {
      for (auto& [i, n] : nodes) {
        if (i == id) return n;
      }
      return static_cast<Agnode_t*>(nullptr);
    };
    for (size_t i = 0; i < cg.edges.size(); ++i) {
      const ConvEdge& e = cg.edges[i];
      Agedge_t* ge = cv.Edge(find(e.from), find(e.to));
      Canvas::Set(ge, "id", "e" + std::to_string(i));
      // Figure 9: the message count, then the delays in declining frequency.
      std::string label = std::to_string(e.count) + " msgs";
      for (const auto& d : e.delays) {
        label += "\\n" + FormatDuration(d.delay_s) + " (" +
                 std::to_string(d.count) + ")";
      }
      Canvas::Set(ge, "label", label);
    }
    VIZ_ASSIGN(contents, RenderGraph(gvc, cv.g(), options.format));
  }
  std::vector<RenderedFile> files;
  files.push_back({name, std::move(contents)});
  files.push_back({"index.html", IndexPage("bbprof convolve: message graph",
                                           "<p><a href=\"" + name + "\">" +
                                               name + "</a></p>\n")});
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

std::string FormatDuration(double seconds) {
  double a = std::fabs(seconds);
  if (a == 0) return "0 s";
  auto three = [](double v, const char* unit) {
    // Three significant digits.
    const char* fmt = std::fabs(v) >= 100  ? "%.0f %s"
                      : std::fabs(v) >= 10 ? "%.1f %s"
                                           : "%.2f %s";
    char buf[64];
    std::snprintf(buf, sizeof buf, fmt, v, unit);
    return std::string(buf);
  };
  if (a >= 1) return three(seconds, "s");
  if (a >= 1e-3) return three(seconds * 1e3, "ms");
  if (a >= 1e-6) return three(seconds * 1e6, "\xC2\xB5s");
  return three(seconds * 1e9, "ns");
}

Result<std::vector<RenderedFile>> RenderResult(const nlohmann::json& result,
                                               const RenderOptions& options) {
  BBPROF_RETURN_IF_ERROR(ValidateResult(result));
  std::string tool;
  VIZ_ASSIGN(tool, GetString(result, "", "tool"));
  if (options.one_page && options.format == Format::kPng &&
      tool == "bbprof nest") {
    return Status::Error("--one-page is available for svg and dot, not png");
  }
  // Graphviz keeps global state (error handler, the pango plugin's font
  // cache), so renders are serialised.
  static std::mutex mutex;
  std::lock_guard<std::mutex> lock(mutex);
  GVC_t* gvc = SharedContext();
  if (gvc == nullptr)
    return Status::Error("cannot start graphviz (gvContext failed)");
  if (tool == "bbprof nest") return RenderNest(gvc, result, options);
  return RenderConvolve(gvc, result, options);
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
