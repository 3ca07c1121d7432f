// bbprof render RESULT.json -o DIR: draws a result document
// (spec/results-json.md) in the paper's Figure 8 (nesting) or Figure 9
// (convolution) format through viz/render.h.
#include "cli/render_command.h"

#include "cli/command_line.h"
#include "results/validate.h"
#include "viz/render.h"

namespace bbprof::cli {

namespace {

int Run(std::span<const std::string> args) {
  CommandLine cl(
      "render",
      "RESULT.json -o DIR [--format dot|svg|png] [--top N] [--one-page]",
      "Draws the result of 'bbprof nest' or 'bbprof convolve' with Graphviz.\n"
      "Nesting results: one graph per path pattern (the paper's Figure 8): "
      "nodes\nwith name and mean latency, call edges with the mean call "
      "delay, the first\nedge with instance count and total latency; nodes "
      "filled by the time they\nadd on one scale, the culprit outlined and "
      "named in the title.\nConvolution results: one graph (Figure 9), edges with message "
      "count and\ndelays in declining frequency. DIR gets the pictures and an "
      "index.html.");
  cl.options().add_options()("output,o", po::value<std::string>(),
                             "output folder (created if missing)")(
      "format,f", po::value<std::string>()->default_value("svg"),
      "dot, svg or png")("top,n", po::value<long long>(),
                         "only the first N patterns (default: all)")(
      "one-page", "all patterns on one page (patterns.svg or patterns.dot)")(
      "no-highlight",
      "do not fill nodes by the time they add (nor highlight slow edges)");
  cl.AddPositional("RESULT", "result JSON ('-' for standard input)", 1, 1);
  cl.SetEpilog(
      "Examples:\n  bbprof render nest.json -o pics\n"
      "  bbprof render nest.json -o pics --top 10 --one-page\n"
      "  bbprof render conv.json -o pics --format png");
  if (auto rc = cl.Parse(args)) return *rc;

  viz::RenderOptions options;
  if (!viz::ParseFormat(cl.Get<std::string>("format"), &options.format)) {
    return cl.UsageError("--format must be dot, svg or png, not '" +
                         cl.Get<std::string>("format") + "'");
  }
  if (!cl.Has("output"))
    return cl.UsageError("missing -o DIR (the output folder)");
  if (cl.Has("top")) {
    long long top = cl.Get<long long>("top");
    if (top < 1) return cl.UsageError("--top must be at least 1");
    options.top = static_cast<size_t>(top);
  }
  options.one_page = cl.Has("one-page");
  options.highlight = !cl.Has("no-highlight");
  if (options.one_page && options.format == viz::Format::kPng) {
    return cl.UsageError("--one-page is available for svg and dot, not png");
  }

  const std::string& path = cl.Positional("RESULT")[0];
  auto doc = viz::LoadResultJson(path);
  if (!doc.ok()) return cl.Fail(doc.status());
  const std::string& dir = cl.Get<std::string>("output");
  if (Status s = viz::RenderResultToDir(*doc, options, dir); !s.ok()) {
    return cl.Fail(s.WithContext(path));
  }
  Inform(cl, "wrote " + dir + "/index.html");
  return kExitOk;
}

}  // namespace

const Subcommand kRenderCommand = {
    "render",
    "draw a nest or convolve result as Graphviz pictures (dot, SVG, PNG)", Run};

}  // namespace bbprof::cli
