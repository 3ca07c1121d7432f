// The picture of a `bbprof diff` (results/diff/diff.h; JSON in docs/formats.md,
// "Diff result"): one self-contained HTML page with, per pattern in the
// diff's rank order, its graph (Graphviz, inline SVG) with each node filled
// by its change in mean latency, and the numbers in a table. The colours
// follow viz/style.h: slower is the report's heat scale (time added, white
// to dark red), faster is blue, a change that is not significant stays
// white, so only what the tests support draws the eye (docs/viz.md, "The
// diff view").
#ifndef BBPROF_VIZ_DIFF_VIEW_H_
#define BBPROF_VIZ_DIFF_VIEW_H_

#include <nlohmann/json.hpp>
#include <string>

#include "base/status.h"

namespace bbprof::viz {

// The page for a diff document as nesting::DiffToJson writes it. `top` > 0
// draws only the first `top` patterns.
Result<std::string> RenderDiffHtml(const nlohmann::json& diff, int top = 0);

}  // namespace bbprof::viz

#endif  // BBPROF_VIZ_DIFF_VIEW_H_
