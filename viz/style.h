// The one set of colour and label rules that every picture of viz/ follows:
// the pattern graphs (pattern_graph.h), the convolution graph
// (convolution_graph.h), the service map (service_map.h) and the report page
// (report.h). `render` and `report` draw with these rules, so a colour or a
// label means the same thing wherever it appears (docs/viz.md, "Colours and
// labels").
#ifndef BBPROF_VIZ_STYLE_H_
#define BBPROF_VIZ_STYLE_H_

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "base/duration.h"

namespace bbprof::viz {

// "61%" for 0.61.
std::string Percent(double share);

// printf of one number into a std::string.
std::string Printf(const char* fmt, double v);

// The time a node adds to the system: its own time (the latency its
// children do not cover) on one instance, times the instances. This is the
// paper's "high impact" (section 4) per node: a node that is slow on a
// frequent path adds more than one that is slower on a rare one. The
// culprit of a pattern is the node that adds the most.
double AddedTime(double own_time_s, int64_t instances);

// One colour scale for a whole page: white for nothing added, through
// yellow and orange, to dark red for the most any node on the page adds.
// Absolute, so the same colour means the same time on every graph drawn
// with one scale (not a share of each graph's own latency, which made a
// trivial one-node path the reddest picture).
class HeatScale {
 public:
  explicit HeatScale(double max_s) : max_s_(max_s > 0 ? max_s : 0) {}
  double max_s() const { return max_s_; }
  // Position on the scale, 0 to 1.
  double Level(double value_s) const;
  // "#rrggbb" for the value (Graphviz, SVG and CSS all read it).
  std::string Colour(double value_s) const;
  // A text colour readable on Colour(value_s).
  std::string TextColour(double value_s) const;
  // The scale's colour at a level in [0, 1] (legend gradients).
  static std::string ColourAt(double level);

 private:
  double max_s_;
};

// Legend texts, shared by the pictures and the report so a label is
// explained in the same words everywhere.
inline constexpr std::string_view kLegendNode =
    "node: name, operation (when known), mean latency (call to return, "
    "children included)";
inline constexpr std::string_view kLegendCallEdge =
    "edge: mean call delay (call into the parent to call into the node)";
inline constexpr std::string_view kLegendFirstEdge =
    "bold first edge from the dashed caller: instances, total latency";
inline constexpr std::string_view kLegendFill =
    "fill: time the node adds, own time x instances, on one scale; thick "
    "border: the culprit, adding the most";
inline constexpr std::string_view kLegendConvEdge =
    "edge: messages, then each delay with its messages, most frequent "
    "first; red and thick: the slowest edges, adding at least half the most "
    "time (messages x delay)";

inline constexpr std::string_view kLegendMap =
    "all patterns merged into one graph (section 8); node: calls into it, "
    "the time it adds over all patterns and its share of all requests' "
    "time; edge: calls and their mean latency; fill: time added, on the "
    "map's own scale (its sums are larger than any one pattern's)";
inline constexpr std::string_view kLegendPhases =
    "one row per pattern, one column per window; a cell's colour is the "
    "time the pattern's requests took in that window (instances x mean "
    "latency), on one scale for the chart; hover a cell for its numbers";
inline constexpr std::string_view kLegendWaterfall =
    "one bar per call, from the call to its return, relative to the root "
    "call; indentation is nesting";

// The culprit line of a pattern: "DB adds 495 s in total (95.0 ms a call,
// 61% of this path's latency)".
std::string CulpritText(const std::string& node, double own_time_s,
                        int64_t instances, double path_latency_s);

// The rule for highlighting the slowest edges of a graph (the convolution
// graph): those adding at least half the time of the slowest one.
bool IsSlowEdge(double added_s, double max_added_s);

// The legend lines of a nesting pattern graph, for a scale whose maximum is
// max_s: the texts above with the scale's range written out.
std::vector<std::string> PatternLegend(double max_s);

// Escapes text for HTML and XML (&, <, >, ", ').
std::string HtmlEscape(std::string_view s);

}  // namespace bbprof::viz

#endif  // BBPROF_VIZ_STYLE_H_
