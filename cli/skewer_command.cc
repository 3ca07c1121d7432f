// bbprof skewer: add per-node clock skew to a trace, remove it, or estimate
// it from per-host traces (paper sections 6.5 and 7.5.6; docs/skewer.md).
#include "cli/skewer_command.h"

#include <iostream>

#include "base/atomic_file.h"
#include "cli/analysis_input.h"
#include "cli/command_line.h"
#include "skewer/apply.h"
#include "skewer/clock_model.h"
#include "skewer/estimate.h"
#include "trace/reader.h"
#include "trace/timestamp.h"
#include "trace/writer.h"

namespace bbprof::cli {

namespace {

using skewer::ClockModel;
using skewer::SkewTable;

int RunEstimate(const CommandLine& cl) {
  const auto& paths = cl.Positional("TRACE");
  std::map<std::string, std::string> host_flag;
  if (cl.Has("host")) {
    for (const auto& v : cl.Get<std::vector<std::string>>("host")) {
      std::string file, name;
      const size_t eq = v.rfind('=');
      if (eq == std::string::npos || eq == 0 || eq + 1 == v.size()) {
        return cl.UsageError("--host expects FILE=NAME with --estimate, not '" +
                             v + "'");
      }
      host_flag[v.substr(0, eq)] = v.substr(eq + 1);
    }
  }
  if (paths.size() < 2) {
    return cl.UsageError("--estimate needs at least two per-host traces");
  }
  std::vector<skewer::EstimateInput> inputs;
  for (const auto& p : paths) {
    skewer::EstimateInput in{p, ""};
    auto it = host_flag.find(p);
    if (it != host_flag.end()) {
      in.host = it->second;
      host_flag.erase(it);
    } else {
      auto r = OpenAnalysisInput(p);
      if (!r.ok()) {
        return cl.Fail(r.status());
      }
      auto h = skewer::CaptureHost((*r)->meta());
      if (!h) {
        return cl.UsageError(
            p +
            " does not say where it was captured (no '#meta ... "
            "capture_host=NAME' line); name it with --host " +
            p + "=NAME");
      }
      in.host = *h;
    }
    std::string why = trace::CheckNodeName(in.host);
    if (!why.empty()) {
      return cl.UsageError(p + ": capture host: " + why);
    }
    inputs.push_back(in);
  }
  if (!host_flag.empty()) {
    return cl.UsageError("--host " + host_flag.begin()->first +
                         "=...: not one of the input traces");
  }
  skewer::EstimateOptions opts;
  opts.open = [](const std::string& path, std::shared_ptr<trace::NodeTable> nodes,
                 const trace::ReaderOptions& ropts) {
    return OpenAnalysisInput(path, ropts, std::move(nodes));
  };
  opts.quiet = cl.quiet();
  if (cl.Has("reference")) {
    opts.reference = cl.Get<std::string>("reference");
  }
  if (!trace::ParseSecondsFlag(cl.Get<std::string>("window"), &opts.window) ||
      opts.window <= 0) {
    return cl.UsageError(
        "--window must be a positive number of seconds, not '" +
        cl.Get<std::string>("window") + "'");
  }
  if (!trace::ParseSecondsFlag(cl.Get<std::string>("max-offset"),
                               &opts.match_horizon) ||
      opts.match_horizon <= 0) {
    return cl.UsageError(
        "--max-offset must be a positive number of seconds, not '" +
        cl.Get<std::string>("max-offset") + "'");
  }
  opts.min_matches = cl.Get<uint64_t>("min-matches");
  opts.fit_drift = !cl.Has("no-drift");
  auto result = skewer::EstimateOffsets(inputs, opts);
  if (!result.ok()) {
    if (result.status().message().starts_with("--reference")) {
      return cl.UsageError(result.status().message());
    }
    return cl.Fail(result.status());
  }
  std::cout << skewer::FormatEstimateReport(*result);
  size_t estimated = 0;
  for (const auto& n : result->nodes) {
    estimated += n.estimated ? 1 : 0;
  }
  if (cl.Has("output")) {
    SkewTable table = skewer::ToSkewTable(*result);
    std::map<std::string, std::string> notes;
    for (const auto& n : result->nodes) {
      char buf[96];
      std::snprintf(buf, sizeof buf, "+-%.9f s, %llu matched, via %s",
                    static_cast<double>(n.uncertainty_ns) / 1e9,
                    static_cast<unsigned long long>(n.matched), n.via.c_str());
      notes[n.node] = buf;
    }
    std::string header = "estimated by 'bbprof skewer --estimate' from " +
                         std::to_string(inputs.size()) +
                         " per-host traces; reference node " +
                         result->reference_node;
    for (const auto& n : result->nodes) {
      if (!n.estimated) {
        header += "\n" + n.node + ": unestimated (not enough matched messages)";
      }
    }
    Status st =
        WriteFileAtomically(cl.Get<std::string>("output"),
                            skewer::FormatOffsetsFile(table, header, notes));
    if (!st.ok()) {
      return cl.Fail(st);
    }
  }
  Inform(cl, "skewer: estimated " + std::to_string(estimated) + " of " +
                 std::to_string(result->nodes.size()) + " nodes from " +
                 std::to_string(result->matched) + " matched messages");
  if (estimated < 2) {
    return cl.Fail(
        "no pair of hosts has enough matched messages to estimate anything");
  }
  return kExitOk;
}

int Run(std::span<const std::string> args) {
  CommandLine cl(
      "skewer",
      "TRACE (--offset NODE=SECONDS... [--drift NODE=PPM...] | --remove "
      "OFFSETS) -o OUT\n"
      "       bbprof skewer --estimate HOST_TRACE... [-o OFFSETS] [--reference "
      "NODE]",
      "Adds per-node clock skew to a trace, removes it, or estimates it (the "
      "paper's\n"
      "'skewer', section 7.5.6; merging per-host traces, section 6.5).\n\n"
      "Adding: each record's timestamp moves by the clock of the node that "
      "stamped it\n"
      "(--stamp: its sender's, as when every host sniffs its own traffic; its\n"
      "receiver's; or, for a per-host capture, the capture host's). A node's "
      "clock reads\n"
      "t + offset + drift * (t - reference), exactly in integer nanoseconds; "
      "the output is\n"
      "re-sorted through a reorder buffer that holds only the traffic within "
      "the spread\n"
      "of the shifts, and a '#meta skewer op=add ...' line records what was "
      "done.\n\n"
      "Removing (--remove OFFSETS): the exact inverse, from an offsets file "
      "(lines 'NODE\n"
      "OFFSET_SECONDS [DRIFT_PPM]', docs/formats.md), as written by "
      "--write-offsets or\n"
      "--estimate. Adding then removing the same offsets gives the input back "
      "byte for\n"
      "byte (for a slow clock, exactly when timestamps are whole "
      "microseconds).\n\n"
      "Estimating (--estimate): from per-host traces of the same traffic (each "
      "naming its\n"
      "'#meta capture_host='), every message seen at both ends bounds the "
      "offset between\n"
      "the two clocks (receive - send >= offset difference); many bounds give "
      "an interval\n"
      "per host pair, a drift when the trace is long, and offsets relative to "
      "a reference\n"
      "node with their uncertainty (docs/skewer.md). The table goes to "
      "standard output.");
  cl.options().add_options()(
      "output,o", po::value<std::string>(),
      "the output trace, or with --estimate the offsets file to write")(
      "offset", po::value<std::vector<std::string>>()->composing(),
      "NODE=SECONDS: NODE's clock is SECONDS ahead (negative: behind); "
      "repeatable")("drift", po::value<std::vector<std::string>>()->composing(),
                    "NODE=PPM: NODE's clock gains PPM microseconds a second "
                    "(|PPM| <= 1000); repeatable")(
      "stamp", po::value<std::string>(),
      "whose clock stamped each record: sender (default), receiver, or host "
      "(the trace's capture_host)")(
      "drift-reference", po::value<std::string>(),
      "the time (epoch seconds) from which drift accumulates (default: the "
      "first timestamp, rounded down to a second)")(
      "write-offsets", po::value<std::string>(),
      "also write the offsets applied to FILE, for --remove")(
      "remove", po::value<std::string>(),
      "remove the skew described by this offsets file")(
      "estimate",
      "estimate offsets from per-host traces (all positional arguments)")(
      "host", po::value<std::vector<std::string>>()->composing(),
      "the capture host: NAME (--stamp host), or FILE=NAME per input with "
      "--estimate")("reference", po::value<std::string>(),
                    "--estimate: offsets are relative to this node's clock "
                    "(default: the one with the most matched messages)")(
      "window", po::value<std::string>()->default_value("10"),
      "--estimate: seconds per window of bounds (the drift fit's resolution)")(
      "max-offset", po::value<std::string>()->default_value("10"),
      "--estimate: the most two copies of a message can be apart, offset plus "
      "transit (seconds)")(
      "min-matches", po::value<uint64_t>()->default_value(20),
      "--estimate: matched messages needed in each direction of a host pair")(
      "no-drift", "--estimate: fit offsets only, no drift")(
      "format,f", po::value<std::string>(),
      "output trace form: text or binary (default: from OUT's name)");
  cl.AddPositional(
      "TRACE", "the trace (or with --estimate, the per-host traces)", 1, -1);
  cl.SetEpilog(
      "Examples:\n"
      "  # WS2's clock 30 ms fast, AUTH's 5 ms slow and drifting +20 ppm:\n"
      "  bbprof skewer run.trace --offset WS2=0.030 --offset AUTH=-0.005 "
      "--drift AUTH=20 \\\n"
      "      --write-offsets applied.offsets -o skewed.trace\n"
      "  bbprof skewer skewed.trace --remove applied.offsets -o back.trace   # "
      "== run.trace\n"
      "  # A per-host capture, every line stamped by its host's clock:\n"
      "  bbprof skewer views/WS1.trace --stamp host --offset WS1=0.042 -o "
      "WS1.skewed.trace\n"
      "  # Estimate the clocks from per-host captures, then merge them "
      "de-skewed:\n"
      "  bbprof skewer --estimate views/*.trace -o clocks.offsets\n"
      "  bbprof merge views/*.trace --offsets clocks.offsets -o merged.trace");
  if (auto rc = cl.Parse(args)) {
    return *rc;
  }
  if (cl.Has("estimate")) {
    for (const char* f : {"offset", "drift", "remove", "write-offsets", "stamp",
                          "drift-reference"}) {
      if (cl.Has(f)) {
        return cl.UsageError(std::string("--") + f +
                             " does not go with --estimate");
      }
    }
    return RunEstimate(cl);
  }
  const auto& traces = cl.Positional("TRACE");
  if (traces.size() != 1) {
    return cl.UsageError("expected one TRACE (several only with --estimate)");
  }
  if (!cl.Has("output")) {
    return cl.UsageError("-o OUT is required");
  }
  const bool remove = cl.Has("remove");
  if (remove &&
      (cl.Has("offset") || cl.Has("drift") || cl.Has("write-offsets"))) {
    return cl.UsageError(
        "--remove takes its offsets from the file; drop "
        "--offset/--drift/--write-offsets");
  }
  if (!remove && !cl.Has("offset") && !cl.Has("drift")) {
    return cl.UsageError(
        "nothing to do: give --offset NODE=SECONDS, --drift NODE=PPM, --remove "
        "FILE or --estimate");
  }
  for (const char* f : {"reference", "window", "min-matches", "no-drift"}) {
    if (cl.Has(f) && !cl.vm()[f].defaulted()) {
      return cl.UsageError(std::string("--") + f +
                           " goes with --estimate only");
    }
  }
  skewer::ApplyOptions opts;
  opts.quiet = cl.quiet();
  opts.direction =
      remove ? skewer::Direction::kRemove : skewer::Direction::kAdd;
  const std::string out = cl.Get<std::string>("output");
  opts.format = trace::FormatForPath(out);
  if (cl.Has("format") &&
      !trace::ParseTraceFormat(cl.Get<std::string>("format"), &opts.format)) {
    return cl.UsageError("--format must be text or binary");
  }
  if (remove) {
    auto t = skewer::LoadOffsetsFile(cl.Get<std::string>("remove"));
    if (!t.ok()) {
      return cl.UsageError(t.status().message());
    }
    opts.table = std::move(*t);
  } else {
    SkewTable& t = opts.table;
    for (const char* flag : {"offset", "drift"}) {
      if (!cl.Has(flag)) {
        continue;
      }
      const bool is_offset = std::string(flag) == "offset";
      std::map<std::string, bool> given;
      for (const auto& v : cl.Get<std::vector<std::string>>(flag)) {
        std::string node, value;
        Status st =
            skewer::ParseNodeValue(v, std::string("--") + flag, &node, &value);
        if (!st.ok()) {
          return cl.UsageError(st.message());
        }
        if (given[node]) {
          return cl.UsageError(std::string("--") + flag + " " + node +
                               " given twice");
        }
        given[node] = true;
        ClockModel& m = t.nodes[node];
        if (is_offset && !skewer::ParseOffsetSeconds(value, &m.offset_ns)) {
          return cl.UsageError("--offset " + v + ": '" + value +
                               "' is not a number of seconds (e.g. " + node +
                               "=0.030 or " + node + "=-5e-3)");
        }
        if (!is_offset && !skewer::ParseDriftPpm(value, &m.drift_ppt)) {
          return cl.UsageError("--drift " + v + ": '" + value +
                               "' is not a drift in ppm with at most 6 "
                               "decimals and |drift| <= 1000 (e.g. " +
                               node + "=12.5)");
        }
      }
    }
    if (cl.Has("drift-reference")) {
      if (!trace::ParseTimestamp(cl.Get<std::string>("drift-reference"),
                                 &t.reference)) {
        return cl.UsageError(
            "--drift-reference must be epoch seconds, e.g. 1047680084, not '" +
            cl.Get<std::string>("drift-reference") + "'");
      }
      t.has_reference = true;
    }
  }
  if (cl.Has("stamp")) {
    if (!skewer::ParseStamp(cl.Get<std::string>("stamp"), &opts.table.stamp)) {
      return cl.UsageError("--stamp must be sender, receiver or host, not '" +
                           cl.Get<std::string>("stamp") + "'");
    }
    opts.table.has_stamp = true;
  } else if (!remove) {
    opts.table.has_stamp =
        true;  // recorded in --write-offsets, so --remove agrees
  }
  if (cl.Has("host")) {
    const auto& hosts = cl.Get<std::vector<std::string>>("host");
    if (hosts.size() != 1 || opts.table.stamp != skewer::Stamp::kHost) {
      return cl.UsageError(
          "--host NAME goes with --stamp host (once), or FILE=NAME with "
          "--estimate");
    }
    opts.host = hosts[0];
  }
  auto summary = skewer::ApplySkew(traces[0], out, opts);
  if (!summary.ok()) {
    return cl.Fail(summary.status());
  }
  if (!summary->unknown_nodes.empty()) {
    std::string names;
    for (const auto& n : summary->unknown_nodes) {
      names += (names.empty() ? "" : ", ") + n;
    }
    // --remove applies an offsets file that usually covers more nodes than
    // one trace holds (an --estimate over several per-host views): such
    // nodes are ignored, as docs/formats.md says. A node named on the
    // command line (--offset/--drift) that is not in the trace is a typo.
    if (!summary->written) {
      return cl.UsageError("no node named " + names + " in " + traces[0] +
                           " (nothing written; node names are case-sensitive)");
    }
    Inform(cl, "skewer: offsets for nodes not in " + traces[0] +
                   " ignored: " + names);
  }
  if (!summary->unused_nodes.empty()) {
    return cl.UsageError(
        "--stamp host: every line of " + traces[0] + " is stamped by " +
        summary->capture_host + "'s clock, so an offset for " +
        summary->unused_nodes.front() + " would do nothing (nothing written)");
  }
  if (cl.Has("write-offsets")) {
    SkewTable t = opts.table;
    t.reference = summary->reference;
    t.has_reference = true;
    Status st = WriteFileAtomically(
        cl.Get<std::string>("write-offsets"),
        skewer::FormatOffsetsFile(
            t,
            "applied by 'bbprof skewer' to " + traces[0] +
                "; undo with: bbprof skewer SKEWED --remove THIS_FILE -o OUT"));
    if (!st.ok()) {
      return cl.Fail(st);
    }
  }
  std::string msg = "skewer: " + std::to_string(summary->records) +
                    " messages, " + std::to_string(summary->shifted) +
                    " moved, reorder buffer peak " +
                    std::to_string(summary->max_buffered);
  if (summary->lost_values > 0) {
    msg += "; " + std::to_string(summary->lost_values) +
           " timestamps fell on a slow clock's lost nanosecond and will come "
           "back 1 ns late on --remove";
  }
  if (summary->mixed_ties > 0) {
    msg += "; " + std::to_string(summary->mixed_ties) +
           " messages share a timestamp with a differently skewed one (their "
           "order may not survive --remove)";
  }
  Inform(cl, msg);
  return kExitOk;
}

}  // namespace

const Subcommand kSkewerCommand = {
    "skewer", "add, remove or estimate per-node clock skew", Run};

}  // namespace bbprof::cli
