// bbprof merge A B ... -o OUT: per-host traces into one (section 6.5).
#include "cli/merge_command.h"

#include "cli/analysis_input.h"
#include "cli/command_line.h"
#include "skewer/apply.h"
#include "skewer/clock_model.h"
#include "trace/reader.h"
#include "trace/merge.h"
#include "trace/timestamp.h"

namespace bbprof::cli {

namespace {

int Run(std::span<const std::string> args) {
  CommandLine cl(
      "merge", "TRACE... -o OUT [--dedup-window SECONDS] [--rename FILE] [--offsets FILE] [--sort]",
      "Merges traces captured at several points into one, in timestamp order (a\n"
      "streaming k-way merge; ties keep the inputs' order). A message sniffed at both\n"
      "ends of a link appears in two inputs: the copy from a different input with the\n"
      "same kind, sender, receiver and callid within the dedup window is dropped. A\n"
      "single input's own repeats (retransmissions) are kept. With one input and\n"
      "--sort, it sorts a trace.\n\n"
      "With --offsets FILE (the offsets file of 'bbprof skewer', e.g. from --estimate),\n"
      "each input is a per-host capture stamped by its capture host's clock (its '#meta\n"
      "capture_host=NAME'), and that clock's skew is removed from every timestamp of the\n"
      "input as it is read, before merging and duplicate removal.");
  cl.SetEpilog(
      "Examples:\n"
      "  bbprof merge hostA.trace hostB.trace -o merged.trace\n"
      "  bbprof skewer --estimate views/*.trace -o clocks.offsets\n"
      "  bbprof merge views/*.trace --offsets clocks.offsets -o merged.trace");
  cl.options().add_options()
      ("output,o", po::value<std::string>(), "the merged trace ('-' = standard output; .bbt is binary)")
      ("dedup-window", po::value<std::string>()->default_value("0.001"), "seconds within which a copy from another input is a duplicate; a negative value keeps everything")
      ("rename", po::value<std::string>(), "renaming map, lines 'OLD NEW' (e.g. an address and a name)")
      ("offsets", po::value<std::string>(), "remove each input's clock skew: offsets FILE ('NODE OFFSET_SECONDS [DRIFT_PPM]' lines), applied by the input's capture_host")
      ("sort", "sort each input first (holds the inputs in memory)")
      ("format,f", po::value<std::string>(), "output form: text or binary (default: from OUT's name)");
  cl.AddPositional("TRACE", "input traces", 1, -1);
  if (auto rc = cl.Parse(args)) return *rc;
  if (!cl.Has("output")) return cl.UsageError("-o OUT is required");
  const std::string out = cl.Get<std::string>("output");
  trace::MergeOptions opts;
  opts.format = trace::FormatForPath(out);
  if (cl.Has("format") && !trace::ParseTraceFormat(cl.Get<std::string>("format"), &opts.format)) {
    return cl.UsageError("--format must be text or binary");
  }
  if (const std::string w = cl.Get<std::string>("dedup-window");
      !trace::ParseSecondsFlag(w, &opts.dedup_window)) {
    return cl.UsageError("--dedup-window '" + w + "' " + trace::FlagSecondsError(w));
  }
  opts.sort_inputs = cl.Has("sort");
  opts.open = [](const std::string& path, std::shared_ptr<trace::NodeTable> nodes,
                 const trace::ReaderOptions& ropts) {
    return OpenAnalysisInput(path, ropts, std::move(nodes));
  };
  if (cl.Has("rename")) {
    auto m = trace::LoadRenameMap(cl.Get<std::string>("rename"));
    if (!m.ok()) return cl.Fail(m.status());
    opts.rename = std::move(*m);
  }
  uint64_t corrected = 0;
  std::string uncorrected;
  skewer::SkewTable offsets;
  if (cl.Has("offsets")) {
    auto t = skewer::LoadOffsetsFile(cl.Get<std::string>("offsets"));
    if (!t.ok()) return cl.UsageError(t.status().message());
    offsets = std::move(*t);
    for (const auto& path : cl.Positional("TRACE")) {
      auto r = OpenAnalysisInput(path);
      if (!r.ok()) return cl.Fail(r.status());
      auto host = skewer::CaptureHost((*r)->meta());
      if (!host) {
        return cl.UsageError("--offsets: " + path + " does not say where it was captured (no "
                             "'#meta ... capture_host=NAME' line), so its clock is unknown");
      }
      auto it = offsets.nodes.find(*host);
      if (it == offsets.nodes.end() || it->second.identity()) {
        if (it == offsets.nodes.end()) uncorrected += " " + *host;
        opts.input_clock.emplace_back();
        continue;
      }
      if (it->second.drift_ppt != 0 && !offsets.has_reference) {
        return cl.UsageError("--offsets: " + cl.Get<std::string>("offsets") +
                             " has drifts but no '#reference=SECONDS' line");
      }
      const skewer::ClockModel model = it->second;
      const trace::TimeNs ref = offsets.reference;
      opts.input_clock.emplace_back(
          [model, ref](trace::TimeNs ts) { return skewer::FromClock(model, ref, ts); });
      skewer::SkewTable one;
      one.nodes[*host] = model;
      one.reference = ref;
      one.stamp = skewer::Stamp::kHost;
      opts.extra_meta.push_back(skewer::SkewMetaBody("remove", one) + " input=" + path);
      ++corrected;
    }
  }
  auto summary = trace::MergeTraces(cl.Positional("TRACE"), out, opts);
  if (!summary.ok()) return cl.Fail(summary.status());
  Inform(cl, "merge: " + std::to_string(summary->read) + " messages read, " +
                 std::to_string(summary->duplicates) + " duplicates removed, " +
                 std::to_string(summary->written) + " written");
  if (cl.Has("offsets")) {
    Inform(cl, "merge: clock skew removed from " + std::to_string(corrected) + " of " +
                   std::to_string(cl.Positional("TRACE").size()) + " inputs" +
                   (uncorrected.empty() ? std::string()
                                        : "; not in the offsets file, left as they are:" + uncorrected));
  }
  return kExitOk;
}

}  // namespace

const Subcommand kMergeCommand = {"merge", "merge per-host traces in time order, removing duplicates", Run};

}  // namespace bbprof::cli
