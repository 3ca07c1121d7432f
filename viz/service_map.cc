#include "viz/service_map.h"

#include <algorithm>

#include "viz/style.h"

namespace bbprof::viz {

namespace {

void Merge(const PatternNode& n, const std::string& caller, int64_t count,
           ServiceMap* map) {
  ServiceNode& node = map->nodes[n.name];
  node.called = true;
  node.calls += count;
  node.added_s += AddedTime(n.own_s, count);
  map->nodes.try_emplace(caller);
  ServiceEdge& e = map->edges[{caller, n.name}];
  e.calls += count;
  e.latency_sum_s += n.latency_s * static_cast<double>(count);
  for (const auto& c : n.children) Merge(c, n.name, count, map);
}

}  // namespace

ServiceMap BuildServiceMap(const std::vector<Pattern>& patterns) {
  ServiceMap map;
  for (const auto& p : patterns) {
    Merge(p.root, p.caller, p.count, &map);
    map.total_s += p.total_latency_s;
  }
  return map;
}

Result<std::string> RenderServiceMap(GraphvizSession* gv, const ServiceMap& map,
                                     Format format) {
  Canvas cv("service_map");
  Canvas::Set(cv.g(), "id", "service_map");
  Canvas::Set(cv.g(), "rankdir", "LR");
  double max_added = 0;
  for (const auto& [name, n] : map.nodes)
    max_added = std::max(max_added, n.added_s);
  const HeatScale scale(max_added);
  std::map<std::string, Agnode_t*> ids;
  int counter = 0;
  for (const auto& [name, n] : map.nodes) {
    std::string id = "m" + std::to_string(counter++);
    Agnode_t* g = cv.Node(id);
    ids[name] = g;
    Canvas::Set(g, "id", "map_" + id);
    if (!n.called) {
      Canvas::Set(g, "label", EscapeLabel(name));
      Canvas::Set(g, "style", "dashed");
      continue;
    }
    const double share = map.total_s > 0 ? n.added_s / map.total_s : 0;
    Canvas::Set(g, "label",
                EscapeLabel(name) + "\\n" + std::to_string(n.calls) +
                    " calls\\nadds " + FormatDuration(n.added_s) + " (" +
                    Percent(share) + ")");
    Canvas::Set(g, "tooltip",
                EscapeLabel(name) + ": " + std::to_string(n.calls) +
                    " calls, adds " + FormatDuration(n.added_s) + ", " +
                    Percent(share) + " of all requests' time");
    Canvas::Set(g, "style", "filled");
    Canvas::Set(g, "fillcolor", scale.Colour(n.added_s));
    Canvas::Set(g, "fontcolor", scale.TextColour(n.added_s));
  }
  counter = 0;
  for (const auto& [ends, e] : map.edges) {
    Agedge_t* g = cv.Edge(ids[ends.first], ids[ends.second]);
    Canvas::Set(g, "id", "map_e" + std::to_string(counter++));
    const double mean =
        e.calls > 0 ? e.latency_sum_s / static_cast<double>(e.calls) : 0;
    Canvas::Set(
        g, "label",
        std::to_string(e.calls) + " calls\\n" + FormatDuration(mean) + " mean");
  }
  return gv->Render(cv.g(), format);
}

}  // namespace bbprof::viz
