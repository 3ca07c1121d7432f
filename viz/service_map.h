// The service map: every pattern of a nesting result merged into one graph
// of nodes and call edges, the merged view that section 8 of the paper
// proposes ("a single graph ... of all the paths"). A node carries the calls
// into it and the time it adds over all patterns (its share of all the
// requests' time); an edge its calls and their mean latency. Filled by the
// time added, with style.h's scale, as the pattern graphs are.
#ifndef BBPROF_VIZ_SERVICE_MAP_H_
#define BBPROF_VIZ_SERVICE_MAP_H_

#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "results/model.h"
#include "viz/graphviz.h"

namespace bbprof::viz {

struct ServiceNode {
  int64_t calls = 0;    // calls into it (0 for a caller only: a client)
  double added_s = 0;   // time it adds, summed over patterns
  bool called = false;  // false: it only calls (the requests' sources)
};
struct ServiceEdge {
  int64_t calls = 0;
  double latency_sum_s = 0;  // mean latency x calls, summed
};
struct ServiceMap {
  std::map<std::string, ServiceNode> nodes;
  std::map<std::pair<std::string, std::string>, ServiceEdge> edges;
  double total_s = 0;  // all requests' latency: the shares' denominator
};

// Merges patterns by node name (operations of one node merge too).
ServiceMap BuildServiceMap(const std::vector<Pattern>& patterns);

// The map as a graph, filled on its own scale (the most any node adds).
Result<std::string> RenderServiceMap(GraphvizSession* gv, const ServiceMap& map,
                                     Format format);

}  // namespace bbprof::viz

#endif  // BBPROF_VIZ_SERVICE_MAP_H_
