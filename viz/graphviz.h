// The one doorway to Graphviz's C libraries for every picture of viz/: a
// Canvas over a cgraph graph, layout and rendering in-process through gvc
// (no `dot` program), and the SVG stacking of the one-page output.
#ifndef BBPROF_VIZ_GRAPHVIZ_H_
#define BBPROF_VIZ_GRAPHVIZ_H_

#include <graphviz/cgraph.h>
#include <graphviz/gvc.h>

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "viz/render.h"

namespace bbprof::viz {

// Graphviz interprets backslash escapes in labels (\n, \N, \G...) and HTML
// entities (&amp;), so user names are escaped for both; '<', '>' and '"' are
// escaped by the SVG writer and by agwrite themselves.
std::string EscapeLabel(std::string_view s);

// A directed graph being built, freed with its owner. Default fonts set
// (Helvetica; edge labels at 10 pt).
class Canvas {
 public:
  explicit Canvas(const std::string& name);
  Agraph_t* g() { return g_.get(); }
  static void Set(void* obj, const char* key, const std::string& value);
  Agnode_t* Node(const std::string& name);
  Agedge_t* Edge(Agnode_t* tail, Agnode_t* head);

 private:
  struct Closer {
    void operator()(Agraph_t* g) const { agclose(g); }
  };
  std::unique_ptr<Agraph_t, Closer> g_;
};

// Holds Graphviz for one drawing session: Graphviz keeps global state (its
// error handler, the pango plugin's font cache), so drawings are
// serialised, and one context serves the whole process (see graphviz.cc).
class GraphvizSession {
 public:
  GraphvizSession();
  ~GraphvizSession();
  GraphvizSession(const GraphvizSession&) = delete;
  GraphvizSession& operator=(const GraphvizSession&) = delete;
  // Null when gvContext failed.
  GVC_t* gvc() const { return gvc_; }
  // Dot text before layout, or the laid-out SVG or PNG.
  Result<std::string> Render(Agraph_t* g, Format format);

 private:
  GVC_t* gvc_;
};

// A one-node graph saying `text` ("no patterns").
Result<std::string> RenderMessage(GraphvizSession* gv, const std::string& name,
                                  const std::string& text, Format format);

// Stacks Graphviz SVGs vertically into one SVG document.
Result<std::string> StackSvgs(const std::vector<std::string>& svgs);

// A Graphviz SVG made fit to sit inside an HTML page: the XML prolog,
// doctype and comments dropped, the size kept as the viewBox says.
std::string InlineSvg(const std::string& svg);

}  // namespace bbprof::viz

#endif  // BBPROF_VIZ_GRAPHVIZ_H_
