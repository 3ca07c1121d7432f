// Convolution results drawn as in the paper's Figure 9 (section 5.4): one
// graph, each edge labelled with its message count and its delays in
// declining frequency, the slowest edges highlighted by style.h's rule.
#ifndef BBPROF_VIZ_CONVOLUTION_GRAPH_H_
#define BBPROF_VIZ_CONVOLUTION_GRAPH_H_

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

#include "viz/graphviz.h"

namespace bbprof::viz {

struct ConvDelay {
  double delay_s;
  int64_t count;
};
struct ConvEdge {
  int64_t from, to, count;
  std::vector<ConvDelay> delays;  // by declining count
};
struct ConvGraph {
  std::vector<std::string> roots;
  std::vector<std::pair<int64_t, std::string>> vertices;  // id, node
  std::vector<ConvEdge> edges;
};

// Reads a validated convolve result; errors name the JSON path.
Result<ConvGraph> ParseConvolve(const nlohmann::json& doc);

// The time an edge adds: the sum over its delays of delay x messages.
double EdgeAddedTime(const ConvEdge& e);

// The graph, or a "no paths" message when it has no edges.
Result<std::string> RenderConvolution(GraphvizSession* gv, const ConvGraph& g,
                                      bool highlight, Format format);

}  // namespace bbprof::viz

#endif  // BBPROF_VIZ_CONVOLUTION_GRAPH_H_
