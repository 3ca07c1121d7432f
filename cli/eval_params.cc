#include "cli/eval_params.h"

#include <string>

#include "cli/naming_flags.h"
#include "trace/timestamp.h"

namespace bbprof::cli {

namespace {

// A pass count as nest's --refine-passes / --timeline-passes take it: an
// integer from 0 to 100. (nlohmann's get<int> of 1e300 is undefined
// behaviour, so the type and range are checked first.)
Status GetPasses(const nlohmann::json& p, const char* key, int* out) {
  if (!p.contains(key)) return Status::Ok();  // results from before passes
  const nlohmann::json& v = p.at(key);
  if (!v.is_number_integer() || v.get<int64_t>() < 0 ||
      v.get<int64_t>() > 100) {
    return Status::Error(std::string("bad \"params\": \"") + key +
                         "\" must be an integer from 0 to 100");
  }
  *out = static_cast<int>(v.get<int64_t>());
  return Status::Ok();
}

}  // namespace

Result<nesting::Params> ReadResultParams(const nlohmann::json& result) {
  nesting::Params params;
  try {
    const auto& p = result.at("params");
    params.penalty_overlap = p.at("penalty_overlap").get<double>();
    params.penalty_same = p.at("penalty_same").get<double>();
    params.penalty_generic = p.at("penalty_generic").get<double>();
    // The window in nanoseconds must be a valid time span (trace/timestamp.h).
    const double w = p.at("skew_window_s").get<double>();
    if (!(w >= 0 && w * 1e9 < static_cast<double>(trace::kMaxTimeNs))) {
      return Status::Error(
          "bad \"params\": \"skew_window_s\" must be a non-negative number "
          "of seconds (at most " +
          trace::FormatTimestamp(trace::kMaxTimeNs) + ")");
    }
    params.skew_window = static_cast<trace::TimeNs>(w * 1e9 + 0.5);
    // Automatic windows are worked out again from the truth trace (the
    // same trace, so the same windows); a result without "skew" used the
    // fixed window.
    params.skew_auto = p.value("skew", std::string("fixed")) == "auto";
    params.smooth_bins = p.at("smoothing").get<double>();
    params.bin_base = p.at("bin_base").get<double>();
    params.raw_bin_scores = p.value("score", std::string("raw")) == "raw";
    // Results from before refinement existed were made without it.
    params.refine_passes = 0;
    params.timeline_passes = 0;
    BBPROF_RETURN_IF_ERROR(
        GetPasses(p, "refine_passes", &params.refine_passes));
    BBPROF_RETURN_IF_ERROR(
        GetPasses(p, "timeline_passes", &params.timeline_passes));
    const std::string assign = p.value("assign", std::string("model"));
    if (assign != "model" && assign != "fcfs") {
      return Status::Error(
          "bad \"params\": \"assign\" must be \"model\" or \"fcfs\"");
    }
    params.assign =
        assign == "fcfs" ? nesting::Assign::kFcfs : nesting::Assign::kModel;
    // Results from before operations and client folding grouped by node
    // and kept clients apart.
    params.group_by_op = p.value("group_by", std::string("node")) == "op";
    params.op_keys = p.value("op_keys", false);
    if (std::string why = ParseClientsFlag(
            p.value("clients", std::string("keep")), &params.clients);
        !why.empty()) {
      return Status::Error("bad \"params\": " + why);
    }
  } catch (const nlohmann::json::exception& e) {
    return Status::Error(std::string("bad \"params\": ") + e.what());
  }
  return params;
}

}  // namespace bbprof::cli
