// bbprof import SPANS... -o OUT: recorded spans (Jaeger, OTLP/JSON, Zipkin
// v2 JSON) to a trace with ground truth, through spans/spans.h.
#include "cli/import_command.h"

#include <string>
#include <vector>

#include "cli/command_line.h"
#include "spans/spans.h"
#include "trace/byte_stream.h"
#include "trace/writer.h"

namespace bbprof::cli {

namespace {

Result<std::string> ReadAll(const std::string& path) {
  auto in = trace::OpenInputStream(path);
  if (!in.ok()) return in.status();
  std::string text;
  char buf[1 << 16];
  while (true) {
    Result<size_t> n = (*in)->Read(buf, sizeof buf);
    if (!n.ok()) return n.status();
    if (*n == 0) break;
    text.append(buf, *n);
  }
  return text;
}

// "name=N name=N ..." for meta lines and the summary.
std::string Join(const spans::Counters& counters, bool reasons_only) {
  static const char* const kTotals[] = {"spans", "traces", "rpcs",
                                        "entry_points"};
  std::string out;
  for (const auto& [name, n] : counters) {
    bool total = false;
    for (const char* t : kTotals) total |= name == t;
    if (reasons_only && total) continue;
    if (!out.empty()) out.push_back(' ');
    out += name + "=" + std::to_string(n);
  }
  return out;
}

int Run(std::span<const std::string> args) {
  CommandLine cl(
      "import", "SPANS... -o OUT [--format auto|jaeger|otlp|zipkin]",
      "Turns recorded spans into a trace with ground truth: each RPC (a client "
      "span and\nthe server span it caused) becomes a CALL stamped when the "
      "server span starts\n(on the server's clock) and a RET stamped when the "
      "client span ends (on the\nclient's clock), as a sniffer at each end "
      "would have seen them. A request's\nentry point is called by an external "
      "node; work inside one process (internal\nspans) is walked through. The "
      "trace id becomes each record's pathid, so\n'bbprof eval --truth' can "
      "score an analysis of the trace.\nReads Jaeger JSON (as the Jaeger UI "
      "downloads it), OTLP/JSON (one request or\nJSON Lines) and Zipkin v2 "
      "JSON, detected from content; plain, .gz or .zst.\nSpans with missing or "
      "invalid fields are counted and left out.");
  cl.options().add_options()(
      "output,o", po::value<std::string>(),
      "output trace (.bbt: binary; '-' for standard output)")(
      "format,f", po::value<std::string>()->default_value("auto"),
      "input format: auto, jaeger, otlp or zipkin")(
      "entry-caller", po::value<std::string>()->default_value("client"),
      "the node that calls each request's entry point")(
      "entry-caller-per-service",
      "one entry caller per entry service, named CALLER:SERVICE");
  cl.AddPositional("SPANS", "span JSON files ('-' for standard input)", 1, -1);
  cl.SetEpilog(
      "Examples:\n  bbprof import jaeger-export.json -o run.bbt\n"
      "  bbprof import otlp.jsonl.gz --format otlp -o run.trace\n"
      "  bbprof nest run.bbt --json r.json && bbprof eval r.json --truth "
      "run.bbt");
  if (auto rc = cl.Parse(args)) return *rc;

  spans::Format format;
  if (!spans::ParseFormat(cl.Get<std::string>("format"), &format)) {
    return cl.UsageError(
        "--format must be auto, jaeger, otlp or zipkin, not '" +
        cl.Get<std::string>("format") + "'");
  }
  if (!cl.Has("output"))
    return cl.UsageError("missing -o OUT (the output trace)");
  spans::ImportOptions options;
  options.entry_caller = cl.Get<std::string>("entry-caller");
  options.entry_caller_per_service = cl.Has("entry-caller-per-service");
  if (options.entry_caller.empty())
    return cl.UsageError("--entry-caller must not be empty");

  std::vector<spans::Span> all;
  spans::Counters counters;
  std::vector<std::string> meta;
  for (const std::string& path : cl.Positional("SPANS")) {
    Result<std::string> text = ReadAll(path);
    if (!text.ok()) return cl.Fail(text.status());
    Result<spans::Format> f =
        spans::ParseSpans(*text, path, format, &all, &counters);
    if (!f.ok()) return cl.Fail(f.status());
    meta.push_back("import_file=" + path +
                   " format=" + std::string(spans::FormatName(*f)));
  }
  const std::vector<spans::Message> messages =
      spans::BuildMessages(all, options, &counters);

  trace::NodeTable nodes;
  const std::string& out_path = cl.Get<std::string>("output");
  auto writer = trace::OpenTraceWriter(out_path, &nodes);
  if (!writer.ok()) return cl.Fail(writer.status());
  trace::TraceWriter& w = **writer;
  auto write_all = [&]() -> Status {
    BBPROF_RETURN_IF_ERROR(w.WriteMeta("source=import"));
    for (const std::string& m : meta) BBPROF_RETURN_IF_ERROR(w.WriteMeta(m));
    for (const spans::Message& m : messages) {
      trace::Record rec;
      rec.ts_ns = m.ts_ns;
      rec.kind = m.kind;
      rec.sender = nodes.Intern(m.sender);
      rec.receiver = nodes.Intern(m.receiver);
      rec.callid = m.callid;
      rec.pathid = m.pathid;
      rec.op = m.op;
      BBPROF_RETURN_IF_ERROR(w.Write(rec));
    }
    BBPROF_RETURN_IF_ERROR(
        w.WriteMeta("import_stats " + Join(counters, false)));
    return w.Close();
  };
  if (Status s = write_all(); !s.ok()) return cl.Fail(s);

  std::string summary = "imported " + std::to_string(counters["spans"]) +
                        " spans of " + std::to_string(counters["traces"]) +
                        " traces: " + std::to_string(counters["rpcs"]) +
                        " RPCs (" + std::to_string(messages.size()) +
                        " records) to " + out_path;
  if (std::string reasons = Join(counters, true); !reasons.empty()) {
    summary += "\nnot turned into RPCs: " + reasons;
  }
  Inform(cl, summary);
  return kExitOk;
}

}  // namespace

const Subcommand kImportCommand = {"import",
                                   "turn recorded spans (Jaeger, OTLP, Zipkin "
                                   "JSON) into a trace with ground truth",
                                   Run};

}  // namespace bbprof::cli
