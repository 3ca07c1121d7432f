// Rendering of analysis results (spec/results-json.md) as pictures, the last
// stage of the pipeline: nest/convolve -> result JSON -> viz -> dot/SVG/PNG.
//
// Nesting results are drawn in the paper's Figure 8 format (section 5.4): one
// graph per causal path pattern, each node an ellipse with its name and mean
// latency, each call edge labelled with the mean call delay, and the first
// edge (caller -> root) with the instance count and total latency. Nodes are
// filled by their share of the path's own time so the culprit stands out.
// Convolution results are drawn in the Figure 9 format: one graph, each edge
// labelled with its message count and its delays in declining frequency.
//
// Output is deterministic (same input, same bytes) and written atomically.
#ifndef BBPROF_VIZ_RENDER_H_
#define BBPROF_VIZ_RENDER_H_

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "base/status.h"

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
  // Fill nodes by their share of the path's own time (docs/viz.md).
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

// Own time of a node on a pattern, from means only (docs/viz.md): the node's
// mean latency minus the length of the union of its children's intervals
// [call_delay, call_delay + latency], each clipped to [0, latency]. Exposed
// for tests.
struct ChildInterval {
  double call_delay_s;
  double latency_s;
};
double OwnTime(double latency_s, const std::vector<ChildInterval>& children);

// Formats seconds for a label: "812 s", "156 ms", "12.3 µs".
std::string FormatDuration(double seconds);

}  // namespace bbprof::viz

#endif  // BBPROF_VIZ_RENDER_H_
