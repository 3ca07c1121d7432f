// bbprof nest TRACE: infers causal path patterns from RPC calls and returns
// with the nesting algorithm of section 5.1 (nesting/nest.h) and reports
// them as text and as the result JSON (shared/spec/results-json.md).
#include "cli/nest_command.h"

#include <cstdio>
#include <iostream>

#include "base/atomic_file.h"
#include "cli/command_line.h"
#include "nesting/nest.h"
#include "nesting/report.h"
#include "trace/timestamp.h"

namespace bbprof::cli {

namespace {

Status WriteOut(const std::string& path, const std::string& text) {
  if (path == "-") {
    std::fwrite(text.data(), 1, text.size(), stdout);
    std::fflush(stdout);
    return Status::Ok();
  }
  return WriteFileAtomically(path, text);
}

int Run(std::span<const std::string> args) {
  CommandLine cl(
      "nest", "TRACE [--json FILE] [--top N] [--sort count|total-latency|mean-latency] ...",
      "Infers causal path patterns from the RPC calls and returns of a trace with\n"
      "the nesting algorithm (Aguilera et al., SOSP 2003, section 5.1) and reports,\n"
      "for every pattern, how often it occurred and the latency each node adds.\n"
      "MSG records are ignored (use convolve for free-form messages).");
  cl.options().add_options()
      ("json", po::value<std::string>(), "write the result JSON to FILE ('-' = stdout)")
      ("assignments", po::value<std::string>(),
       "write, per root call, its pattern rank and message indices (JSON lines; for eval)")
      ("top", po::value<std::string>(), "show only the N highest-ranked patterns (0 = all)")
      ("sort", po::value<std::string>(), "rank by count (default), total-latency or mean-latency")
      ("min-count", po::value<std::string>(), "drop patterns seen fewer than N times (default 1)")
      ("penalty-overlap", po::value<std::string>(), "overlapping-child penalty exponent x (default 2)")
      ("penalty-same", po::value<std::string>(), "same-child penalty exponent y (default 0)")
      ("penalty-generic", po::value<std::string>(), "generic-child penalty exponent z (default 0)")
      ("skew-window", po::value<std::string>(), "widen the candidate-parent test by SECONDS (default 0)")
      ("smooth", po::value<std::string>(), "Gaussian smoothing of the scoreboards, sd in bins (0 = off)")
      ("bin-base", po::value<std::string>(), "scoreboard bin growth factor (default 1.05)");
  cl.AddPositional("TRACE", "trace file ('-' for standard input)", 1, 1);
  cl.SetEpilog(
      "Examples:\n"
      "  bbprof nest run.trace --top 10\n"
      "  bbprof nest run.bbt --json result.json --sort total-latency\n"
      "Exit codes: 0 ok, 1 bad or empty trace, 2 bad flag.");
  if (auto rc = cl.Parse(args)) return *rc;

  nesting::NestParams params;
  auto parse_double = [&](const char* flag, double* out) -> bool {
    if (!cl.Has(flag)) return true;
    const std::string s = cl.Get<std::string>(flag);
    char* end = nullptr;
    double v = std::strtod(s.c_str(), &end);
    if (s.empty() || end != s.c_str() + s.size()) return false;
    *out = v;
    return true;
  };
  auto parse_count = [&](const char* flag, uint64_t* out) -> bool {
    if (!cl.Has(flag)) return true;
    const std::string s = cl.Get<std::string>(flag);
    if (s.empty() || s.size() > 18 || s.find_first_not_of("0123456789") != std::string::npos)
      return false;
    *out = std::stoull(s);
    return true;
  };
  for (auto [flag, ptr] : {std::pair{"penalty-overlap", &params.penalty_overlap},
                           std::pair{"penalty-same", &params.penalty_same},
                           std::pair{"penalty-generic", &params.penalty_generic},
                           std::pair{"smooth", &params.smoothing_bins},
                           std::pair{"bin-base", &params.bin_base}}) {
    if (!parse_double(flag, ptr))
      return cl.UsageError(std::string("--") + flag + " needs a number, not '" +
                           cl.Get<std::string>(flag) + "'");
  }
  if (cl.Has("skew-window") &&
      !trace::ParseSecondsFlag(cl.Get<std::string>("skew-window"), &params.skew_window_ns)) {
    return cl.UsageError("--skew-window needs a duration in seconds, not '" +
                         cl.Get<std::string>("skew-window") + "'");
  }
  if (Status s = nesting::ValidateParams(params); !s.ok()) return cl.UsageError(s.message());
  uint64_t top = 0, min_count = 1;
  if (!parse_count("top", &top))
    return cl.UsageError("--top needs a whole number >= 0, not '" + cl.Get<std::string>("top") + "'");
  if (!parse_count("min-count", &min_count))
    return cl.UsageError("--min-count needs a whole number >= 0, not '" +
                         cl.Get<std::string>("min-count") + "'");
  nesting::RankBy by = nesting::RankBy::kCount;
  if (cl.Has("sort")) {
    const std::string s = cl.Get<std::string>("sort");
    if (s == "count") {
      by = nesting::RankBy::kCount;
    } else if (s == "total-latency") {
      by = nesting::RankBy::kTotalLatency;
    } else if (s == "mean-latency") {
      by = nesting::RankBy::kMeanLatency;
    } else {
      return cl.UsageError("--sort must be count, total-latency or mean-latency, not '" + s + "'");
    }
  }
  const bool want_assign = cl.Has("assignments");
  std::vector<nesting::Assignment> assignments;
  auto result = nesting::NestTrace(cl.Positional("TRACE")[0], params, cl.quiet(),
                                   want_assign ? &assignments : nullptr);
  if (!result.ok()) return cl.Fail(result.status());
  std::vector<int> old_to_new;
  nesting::RankPatterns(*result, by, min_count, top, &old_to_new);

  const bool json_stdout = cl.Has("json") && cl.Get<std::string>("json") == "-";
  if (cl.Has("json")) {
    if (Status s = WriteOut(cl.Get<std::string>("json"),
                            nesting::ResultToJson(*result).dump(2) + "\n");
        !s.ok())
      return cl.Fail(s);
  }
  if (want_assign) {
    // One JSON object per line: {"rank": R, "messages": [...]}; rank 0 when
    // the root's pattern was dropped by --top or --min-count.
    std::string text;
    for (const auto& a : assignments) {
      nlohmann::ordered_json j;
      j["rank"] = old_to_new[a.pattern] + 1;
      j["messages"] = a.messages;
      text += j.dump();
      text += '\n';
    }
    if (Status s = WriteOut(cl.Get<std::string>("assignments"), text); !s.ok())
      return cl.Fail(s);
  }
  if (!json_stdout) {
    std::string text = nesting::ResultToText(*result);
    std::fwrite(text.data(), 1, text.size(), stdout);
  }
  return kExitOk;
}

}  // namespace

const Subcommand kNestCommand = {
    "nest", "infer causal path patterns from RPC calls and returns (section 5.1)", Run};

}  // namespace bbprof::cli
