#include "viz/convolution_graph.h"

#include <algorithm>

#include "results/validate.h"
#include "viz/style.h"

namespace bbprof::viz {

using nlohmann::json;

Result<ConvGraph> ParseConvolve(const json& doc) {
  ConvGraph g;
  const json* roots;
  BBPROF_ASSIGN_OR_RETURN(roots, GetArray(doc, "", "roots"));
  for (size_t i = 0; i < roots->size(); ++i) {
    if (!(*roots)[i].is_string()) {
      return FieldError("roots[" + std::to_string(i) + "]", "a string",
                        "wrong type");
    }
    g.roots.push_back((*roots)[i].get<std::string>());
  }
  const json* vertices;
  BBPROF_ASSIGN_OR_RETURN(vertices, GetArray(doc, "", "vertices"));
  for (size_t i = 0; i < vertices->size(); ++i) {
    std::string path = "vertices[" + std::to_string(i) + "]";
    int64_t id;
    std::string node;
    BBPROF_ASSIGN_OR_RETURN(id, GetInteger((*vertices)[i], path, "id"));
    BBPROF_ASSIGN_OR_RETURN(node, GetString((*vertices)[i], path, "node"));
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
  BBPROF_ASSIGN_OR_RETURN(edges, GetArray(doc, "", "edges"));
  for (size_t i = 0; i < edges->size(); ++i) {
    std::string path = "edges[" + std::to_string(i) + "]";
    const json& e = (*edges)[i];
    ConvEdge ce;
    BBPROF_ASSIGN_OR_RETURN(ce.from, GetInteger(e, path, "from"));
    BBPROF_ASSIGN_OR_RETURN(ce.to, GetInteger(e, path, "to"));
    BBPROF_ASSIGN_OR_RETURN(ce.count, GetInteger(e, path, "count"));
    if (!known(ce.from))
      return Status::Error(path + ".from: no vertex with id " +
                           std::to_string(ce.from));
    if (!known(ce.to))
      return Status::Error(path + ".to: no vertex with id " +
                           std::to_string(ce.to));
    const json* delays;
    BBPROF_ASSIGN_OR_RETURN(delays, GetArray(e, path, "delays"));
    for (size_t k = 0; k < delays->size(); ++k) {
      std::string dp = path + ".delays[" + std::to_string(k) + "]";
      ConvDelay d;
      BBPROF_ASSIGN_OR_RETURN(d.delay_s,
                              GetNumber((*delays)[k], dp, "delay_s"));
      BBPROF_ASSIGN_OR_RETURN(d.count, GetInteger((*delays)[k], dp, "count"));
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

double EdgeAddedTime(const ConvEdge& e) {
  double t = 0;
  for (const auto& d : e.delays)
    t += std::max(0.0, d.delay_s) * static_cast<double>(d.count);
  return t;
}

Result<std::string> RenderConvolution(GraphvizSession* gv, const ConvGraph& cg,
                                      bool highlight, Format format) {
  if (cg.edges.empty())
    return RenderMessage(gv, "no_paths", "no paths", format);
  Canvas cv("convolution");
  Canvas::Set(cv.g(), "id", "convolution");
  std::string title =
      "bbprof convolve: " + std::to_string(cg.edges.size()) + " edges";
  if (!cg.roots.empty()) {
    title += ", roots";
    for (const auto& r : cg.roots) title += " " + EscapeLabel(r);
  }
  double max_added = 0;
  for (const auto& e : cg.edges)
    max_added = std::max(max_added, EdgeAddedTime(e));
  title += "\\l" + EscapeLabel(kLegendConvEdge);
  if (highlight && max_added > 0) {
    title += EscapeLabel(" (the most: " + FormatDuration(max_added) + ")");
  }
  title += "\\l";
  Canvas::Set(cv.g(), "label", title);
  Canvas::Set(cv.g(), "labelloc", "t");
  Canvas::Set(cv.g(), "labeljust", "l");
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
  const HeatScale scale(max_added);
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
    const double added = EdgeAddedTime(e);
    Canvas::Set(ge, "tooltip",
                "adds " + FormatDuration(added) + " (messages x delay)");
    if (highlight && IsSlowEdge(added, max_added)) {
      Canvas::Set(ge, "color", scale.Colour(added));
      Canvas::Set(ge, "fontcolor", scale.Colour(max_added));
      Canvas::Set(ge, "penwidth",
                  Printf("%.1f", 1.0 + 3.0 * scale.Level(added)));
    }
  }
  return gv->Render(cv.g(), format);
}

}  // namespace bbprof::viz
