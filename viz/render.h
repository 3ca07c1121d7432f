// Rendering of analysis results (spec/results-json.md) as pictures, the last
// stage of the pipeline: nest/convolve -> result JSON -> viz -> dot/SVG/PNG.
// `bbprof render` and `nest --svg/--dot` come here; the files it writes are
// drawn by pattern_graph.h (Figure 8, one graph per pattern, nodes filled by
// the time they add on one scale) and convolution_graph.h (Figure 9), with
// the colour and label rules of style.h. The one-file HTML report is
// report.h.
//
// Output is deterministic (same input, same bytes) and written atomically.
#ifndef BBPROF_VIZ_RENDER_H_
#define BBPROF_VIZ_RENDER_H_

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "base/status.h"
#include "results/model.h"
#include "viz/style.h"

namespace bbprof::viz {

enum class Format { kDot, kSvg, kPng };

// Parses "dot", "svg" or "png".
bool ParseFormat(const std::string& text, Format* format);
const char* FormatExtension(Format format);

struct RenderOptions {
  Format format = Format::kSvg;
  // Only the first `top` patterns in the result's order (0: all).
  size_t top = 0;
  // One page with every pattern (patterns.EXT) instead of one file per
  // pattern (pattern-001.EXT, ...).
  bool one_page = false;
  // Fill nodes by the time they add, outline the culprit, highlight the
  // slowest convolution edges (docs/viz.md).
  bool highlight = true;
};

// One output file: its name inside the output folder and its bytes.
struct RenderedFile {
  std::string name;
  std::string contents;
};

// Renders a nesting or convolution result into files (the pictures and an
// index.html), without touching the disk. Errors name the JSON path of the
// missing or mistyped field, e.g. "patterns[2].root.latency_s.mean: missing
// (expected a number)".
Result<std::vector<RenderedFile>> RenderResult(const nlohmann::json& result,
                                               const RenderOptions& options);

// RenderResult, then writes every file atomically into `dir` (created if
// missing). The entry point `nest --svg DIR` / `convolve --svg DIR` call.
Status RenderResultToDir(const nlohmann::json& result,
                         const RenderOptions& options, const std::string& dir);

}  // namespace bbprof::viz

#endif  // BBPROF_VIZ_RENDER_H_
