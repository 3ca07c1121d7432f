// bbprof convert IN OUT: copies a trace between forms (text, binary, and
// their gzip/zstd-compressed variants), meta lines included.
#include "cli/convert_command.h"

#include "base/progress.h"
#include "cli/analysis_input.h"
#include "cli/command_line.h"
#include "trace/byte_stream.h"
#include "trace/reader.h"
#include "trace/writer.h"

namespace bbprof::cli {

namespace {

int Run(std::span<const std::string> args) {
  CommandLine cl("convert", "IN OUT [--format text|binary]",
                 "Copies a trace from one form to another: text or binary, "
                 "plain or compressed.\nThe input's form is detected from its "
                 "first bytes; the output's from its name\n(.bbt is binary; a "
                 ".gz or .zst suffix compresses) unless --format says.\n"
                 "Timestamps, names, call ids, path ids and #meta lines are "
                 "kept exactly.");
  cl.options().add_options()(
      "format,f", po::value<std::string>(),
      "output form: text or binary (default: from OUT's name)");
  cl.AddPositional("IN", "input trace ('-' for standard input)", 1, 1);
  cl.AddPositional("OUT", "output trace ('-' for standard output)", 1, 1);
  if (auto rc = cl.Parse(args)) return *rc;

  const std::string& in_path = cl.Positional("IN")[0];
  const std::string& out_path = cl.Positional("OUT")[0];
  trace::TraceFormat format = trace::FormatForPath(out_path);
  if (cl.Has("format") &&
      !trace::ParseTraceFormat(cl.Get<std::string>("format"), &format)) {
    return cl.UsageError("--format must be text or binary, not '" +
                         cl.Get<std::string>("format") + "'");
  }

  trace::ReaderOptions options;
  options.numeric_ids = true;  // the writers take numbers as they are
  auto reader = OpenAnalysisInput(in_path, options);
  if (!reader.ok()) return cl.Fail(reader.status());
  auto writer = trace::OpenTraceWriter(out_path, &(*reader)->nodes(), format);
  if (!writer.ok()) return cl.Fail(writer.status());
  trace::TraceReader& r = **reader;
  trace::TraceWriter& w = **writer;

  size_t meta_done = 0;
  auto copy_meta = [&]() -> Status {
    for (; meta_done < r.meta().size(); ++meta_done) {
      BBPROF_RETURN_IF_ERROR(w.WriteMeta(r.meta()[meta_done]));
    }
    return Status::Ok();
  };
  Progress progress("converting", trace::FileSizeOrZero(in_path), cl.quiet());
  trace::Record rec;
  while (r.Next(rec)) {
    // Meta lines met between records are copied where they stood.
    if (meta_done < r.meta().size()) {
      if (Status s = copy_meta(); !s.ok()) return cl.Fail(s);
    }
    if (Status s = w.Write(rec); !s.ok()) return cl.Fail(s);
    progress.UpdateLazily([&] { return r.raw_bytes_read(); });
  }
  progress.Finish();
  if (!r.status().ok()) return cl.Fail(r.status());
  if (Status s = copy_meta(); !s.ok()) return cl.Fail(s);
  if (Status s = w.Close(); !s.ok()) return cl.Fail(s);
  return kExitOk;
}

}  // namespace

const Subcommand kConvertCommand = {
    "convert", "copy a trace between text and binary forms, compressed or not",
    Run};

}  // namespace bbprof::cli
