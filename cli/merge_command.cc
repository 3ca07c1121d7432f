// bbprof merge A B ... -o OUT: per-host traces into one (section 6.5).
#include "cli/merge_command.h"

#include "cli/command_line.h"
#include "trace/merge.h"
#include "trace/timestamp.h"

namespace bbprof::cli {

namespace {

int Run(std::span<const std::string> args) {
  CommandLine cl(
      "merge", "TRACE... -o OUT [--dedup-window SECONDS] [--rename FILE] [--sort]",
      "Merges traces captured at several points into one, in timestamp order (a\n"
      "streaming k-way merge; ties keep the inputs' order). A message sniffed at both\n"
      "ends of a link appears in two inputs: the copy from a different input with the\n"
      "same kind, sender, receiver and callid within the dedup window is dropped. A\n"
      "single input's own repeats (retransmissions) are kept. With one input and\n"
      "--sort, it sorts a trace.");
  cl.options().add_options()
      ("output,o", po::value<std::string>(), "the merged trace ('-' = standard output; .bbt is binary)")
      ("dedup-window", po::value<std::string>()->default_value("0.001"), "seconds within which a copy from another input is a duplicate; a negative value keeps everything")
      ("rename", po::value<std::string>(), "renaming map, lines 'OLD NEW' (e.g. an address and a name)")
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
  if (!trace::ParseSecondsFlag(cl.Get<std::string>("dedup-window"), &opts.dedup_window)) {
    return cl.UsageError("--dedup-window must be a number of seconds");
  }
  opts.sort_inputs = cl.Has("sort");
  if (cl.Has("rename")) {
    auto m = trace::LoadRenameMap(cl.Get<std::string>("rename"));
    if (!m.ok()) return cl.Fail(m.status());
    opts.rename = std::move(*m);
  }
  auto summary = trace::MergeTraces(cl.Positional("TRACE"), out, opts);
  if (!summary.ok()) return cl.Fail(summary.status());
  Inform(cl, "merge: " + std::to_string(summary->read) + " messages read, " +
                 std::to_string(summary->duplicates) + " duplicates removed, " +
                 std::to_string(summary->written) + " written");
  return kExitOk;
}

}  // namespace

const Subcommand kMergeCommand = {"merge", "merge per-host traces in time order, removing duplicates", Run};

}  // namespace bbprof::cli
