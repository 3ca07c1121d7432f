// Nesting path patterns drawn as in the paper's Figure 8 (section 5.4): one
// graph per pattern, nodes filled by the time they add on one scale for the
// page (style.h), the culprit outlined.
#ifndef BBPROF_VIZ_PATTERN_GRAPH_H_
#define BBPROF_VIZ_PATTERN_GRAPH_H_

#include <string>
#include <vector>

#include "results/model.h"
#include "viz/graphviz.h"
#include "viz/style.h"

namespace bbprof::viz {

// "p001" for the first pattern: the prefix of every id in its graph.
std::string PatternId(size_t index);

// The largest time any node of these patterns adds: the top of the page's
// HeatScale.
double MaxAddedTime(const std::vector<Pattern>& patterns);

struct PatternGraphOptions {
  bool highlight = true;  // fill by time added, outline the culprit
  bool legend = true;     // legend lines under the title
};

// Draws pattern `p` (the index-th on the page) with the page's scale.
Result<std::string> RenderPattern(GraphvizSession* gv, const Pattern& p,
                                  size_t index, const HeatScale& scale,
                                  const PatternGraphOptions& options,
                                  Format format);

}  // namespace bbprof::viz

#endif  // BBPROF_VIZ_PATTERN_GRAPH_H_
