#include "viz/graphviz.h"

#include <algorithm>
#include <cstdio>
#include <mutex>

#include "viz/style.h"

// Under AddressSanitizer (the asan preset), LeakSanitizer is told to ignore
// what gvContext() allocates: see SharedContext.
#if defined(__has_feature)
#if __has_feature(address_sanitizer)
#define BBPROF_LSAN 1
#endif
#endif
#if defined(__SANITIZE_ADDRESS__) && !defined(BBPROF_LSAN)
#define BBPROF_LSAN 1
#endif
#ifdef BBPROF_LSAN
#include <sanitizer/lsan_interface.h>
#endif

namespace bbprof::viz {

namespace {

// Errors from cgraph/gvc go to a buffer instead of stderr so they can be
// returned as a Status.
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
//
// gvContext() reads that configuration (gvconfig) into a buffer the plugin
// tables point into and never frees, even in gvFreeContext(). A suppression
// by function name (tests/lsan.supp) only matches with LSan's slow unwinder,
// as Graphviz is built without frame pointers, and the slow unwinder on every
// malloc made the whole ASan suite 6.5 times slower (a nest test: 48 s
// against 7.4 s). So LeakSanitizer ignores what this one call allocates.
GVC_t* SharedContext() {
  static GvcPtr context([] {
#ifdef BBPROF_LSAN
    __lsan::ScopedDisabler leaks_ignored;
#endif
    return gvContext();
  }());
  return context.get();
}

std::mutex g_session_mutex;

void ReplaceAttr(std::string* tag, const char* attr, const std::string& value) {
  std::string key = std::string(" ") + attr + "=\"";
  size_t at = tag->find(key);
  if (at == std::string::npos) return;
  size_t start = at + key.size();
  size_t end = tag->find('"', start);
  tag->replace(start, end - start, value);
}

}  // namespace

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

Canvas::Canvas(const std::string& name)
    : g_(agopen(const_cast<char*>(name.c_str()), Agdirected, &kStringDisc)) {
  Set(g_.get(), "fontname", "Helvetica");
  agattr(g_.get(), AGNODE, const_cast<char*>("fontname"),
         const_cast<char*>("Helvetica"));
  agattr(g_.get(), AGEDGE, const_cast<char*>("fontname"),
         const_cast<char*>("Helvetica"));
  agattr(g_.get(), AGEDGE, const_cast<char*>("fontsize"),
         const_cast<char*>("10"));
}

void Canvas::Set(void* obj, const char* key, const std::string& value) {
  agsafeset(obj, const_cast<char*>(key), const_cast<char*>(value.c_str()),
            const_cast<char*>(""));
}

Agnode_t* Canvas::Node(const std::string& name) {
  return agnode(g_.get(), const_cast<char*>(name.c_str()), 1);
}

Agedge_t* Canvas::Edge(Agnode_t* tail, Agnode_t* head) {
  return agedge(g_.get(), tail, head, nullptr, 1);
}

GraphvizSession::GraphvizSession() {
  g_session_mutex.lock();
  gvc_ = SharedContext();
}

GraphvizSession::~GraphvizSession() { g_session_mutex.unlock(); }

Result<std::string> GraphvizSession::Render(Agraph_t* g, Format format) {
  std::string out;
  if (format == Format::kDot) {
    // The graph as built, before layout: portable, readable, and the same
    // bytes whatever fonts the machine has.
    if (agwrite(g, &out) != 0) return Status::Error("cannot write dot text");
    return out;
  }
  if (gvc_ == nullptr)
    return Status::Error("cannot start graphviz (gvContext failed)");
  std::string errors;
  g_graphviz_errors = &errors;
  agusererrf previous = agseterrf(CollectGraphvizError);
  Status status;
  if (gvLayout(gvc_, g, "dot") != 0) {
    status = Status::Error("graphviz layout failed: " + errors);
  } else {
    char* data = nullptr;
    unsigned int length = 0;
    const char* fmt = format == Format::kSvg ? "svg" : "png";
    if (gvRenderData(gvc_, g, fmt, &data, &length) != 0 || data == nullptr) {
      status = Status::Error(
          std::string("graphviz cannot render ") + fmt +
          " (is its plugin installed? run 'dot -c' as root): " + errors);
    } else {
      out.assign(data, length);
    }
    gvFreeRenderData(data);
    gvFreeLayout(gvc_, g);
  }
  agseterrf(previous);
  g_graphviz_errors = nullptr;
  if (!status.ok()) return status;
  return out;
}

Result<std::string> RenderMessage(GraphvizSession* gv, const std::string& name,
                                  const std::string& text, Format format) {
  Canvas cv(name);
  Canvas::Set(cv.g(), "id", name);
  Agnode_t* n = cv.Node("message");
  Canvas::Set(n, "id", "message");
  Canvas::Set(n, "shape", "box");
  Canvas::Set(n, "style", "rounded");
  Canvas::Set(n, "label", text);
  return gv->Render(cv.g(), format);
}

// One page of many patterns. Each pattern is laid out on its own (fast and
// readable: dot on one graph of hundreds of clusters is neither) and the
// pictures are stacked: SVG nests each <svg> at its offset.
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

std::string InlineSvg(const std::string& svg) {
  size_t open = svg.find("<svg");
  if (open == std::string::npos) return svg;
  std::string out;
  out.reserve(svg.size() - open);
  // Drop what a page of hundreds of graphs need not repeat: comments and
  // <title> elements (Graphviz writes them per node and edge, naming its
  // ids; tooltips are the xlink:title of their links) and the font family
  // on every text (the page's style sheet sets it).
  static constexpr std::string_view kFont =
      " font-family=\"Helvetica,sans-Serif\"";
  size_t i = open;
  while (i < svg.size()) {
    std::string_view skip_to;
    if (svg.compare(i, 4, "<!--") == 0) {
      skip_to = "-->";
    } else if (svg.compare(i, 7, "<title>") == 0) {
      skip_to = "</title>";
    } else if (svg.compare(i, kFont.size(), kFont) == 0) {
      i += kFont.size();
      continue;
    }
    if (!skip_to.empty()) {
      size_t end = svg.find(skip_to, i);
      if (end == std::string::npos) break;
      i = end + skip_to.size();
      while (i < svg.size() && svg[i] == '\n') ++i;
      continue;
    }
    out += svg[i++];
  }
  return out;
}

}  // namespace bbprof::viz
