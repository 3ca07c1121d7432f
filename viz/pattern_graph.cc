#include "viz/pattern_graph.h"

#include <algorithm>
#include <cstdio>

namespace bbprof::viz {

namespace {

void MaxAdded(const PatternNode& n, int64_t count, double* max) {
  *max = std::max(*max, AddedTime(n.own_s, count));
  for (const auto& c : n.children) MaxAdded(c, count, max);
}

std::string TitleFor(const Pattern& p, const HeatScale& scale,
                     const PatternGraphOptions& options) {
  std::string t = "#" + std::to_string(p.rank) + "  " +
                  EscapeLabel(p.signature) + "\\l" + std::to_string(p.count) +
                  " instances, " + FormatDuration(p.total_latency_s) +
                  " total, " + FormatDuration(p.root.latency_s) + " mean\\l";
  if (options.highlight) {
    const PatternNode& c = NodeAt(p, p.culprit_path);
    t += EscapeLabel(
             CulpritText(c.name, p.culprit_own_s, p.count, p.root.latency_s)) +
         "\\l";
  }
  for (const auto& s : p.suspects) {
    t += EscapeLabel("suspect (" + s.kind + "): " + s.reason) + "\\l";
  }
  if (options.legend) {
    auto lines = PatternLegend(scale.max_s());
    if (!options.highlight) lines.pop_back();
    for (const auto& line : lines) t += EscapeLabel(line) + "\\l";
  }
  return t;
}

struct NodeContext {
  Canvas* cv;
  const Pattern* pattern;
  const HeatScale* scale;
  const PatternNode* culprit;
  const PatternGraphOptions* options;
  std::string prefix;
  int counter = 0;
};

Agnode_t* AddNodes(NodeContext* ctx, const PatternNode& n, Agnode_t* parent) {
  std::string id = ctx->prefix + "-n" + std::to_string(ctx->counter++);
  Agnode_t* node = ctx->cv->Node(id);
  Canvas::Set(node, "id", id);
  // The operation goes under the node's name: two operations of one node
  // are two boxes of one name.
  const std::string op_line = n.op.empty() ? "" : "\\n" + EscapeLabel(n.op);
  Canvas::Set(
      node, "label",
      EscapeLabel(n.name) + op_line + "\\n" + FormatDuration(n.latency_s));
  const double path_latency = ctx->pattern->root.latency_s;
  const double share = path_latency > 0 ? n.own_s / path_latency : 0;
  const double added = AddedTime(n.own_s, ctx->pattern->count);
  std::string tooltip =
      EscapeLabel(n.name) + (n.op.empty() ? "" : " " + EscapeLabel(n.op)) +
      ": latency " + FormatDuration(n.latency_s) + ", own time " +
      FormatDuration(n.own_s) + " (" + Percent(share) + " of the path)";
  if (ctx->options->highlight)
    tooltip += ", adds " + FormatDuration(added) + " in total";
  Canvas::Set(node, "tooltip", tooltip);
  if (ctx->options->highlight) {
    Canvas::Set(node, "style", "filled");
    Canvas::Set(node, "fillcolor", ctx->scale->Colour(added));
    Canvas::Set(node, "fontcolor", ctx->scale->TextColour(added));
    if (&n == ctx->culprit) Canvas::Set(node, "penwidth", "3");
  }
  if (parent != nullptr) {
    Agedge_t* e = ctx->cv->Edge(parent, node);
    Canvas::Set(e, "id", id + "-call");
    Canvas::Set(e, "label", FormatDuration(n.call_delay_s));
  }
  for (const auto& c : n.children) AddNodes(ctx, c, node);
  return node;
}

}  // namespace

std::string PatternId(size_t index) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "p%03zu", index + 1);
  return buf;
}

double MaxAddedTime(const std::vector<Pattern>& patterns) {
  double max = 0;
  for (const auto& p : patterns) MaxAdded(p.root, p.count, &max);
  return max;
}

Result<std::string> RenderPattern(GraphvizSession* gv, const Pattern& p,
                                  size_t index, const HeatScale& scale,
                                  const PatternGraphOptions& options,
                                  Format format) {
  NodeContext ctx{nullptr,  &p,
                  &scale,   &NodeAt(p, p.culprit_path),
                  &options, PatternId(index)};
  Canvas cv("pattern_" + ctx.prefix.substr(1));
  ctx.cv = &cv;
  Canvas::Set(cv.g(), "id", ctx.prefix);
  Canvas::Set(cv.g(), "label", TitleFor(p, scale, options));
  Canvas::Set(cv.g(), "labelloc", "t");
  Canvas::Set(cv.g(), "labeljust", "l");
  Canvas::Set(cv.g(), "fontsize", "12");
  Agnode_t* caller = cv.Node(ctx.prefix + "-caller");
  Canvas::Set(caller, "id", ctx.prefix + "-caller");
  Canvas::Set(caller, "label", EscapeLabel(p.caller));
  Canvas::Set(caller, "style", "dashed");
  Agnode_t* root = AddNodes(&ctx, p.root, nullptr);
  // Section 5.4: the instance count and total latency sit on the first edge.
  Agedge_t* first = cv.Edge(caller, root);
  Canvas::Set(first, "id", ctx.prefix + "-first");
  Canvas::Set(first, "label",
              std::to_string(p.count) + " calls\\n" +
                  FormatDuration(p.total_latency_s) + " total");
  Canvas::Set(first, "style", "bold");
  return gv->Render(cv.g(), format);
}

}  // namespace bbprof::viz
