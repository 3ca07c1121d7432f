#include "results/eval/evaluation.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <sstream>
#include <unordered_map>
#include <unordered_set>

#include "trace/reader.h"

namespace bbprof::nesting {

namespace {

Result<DetailedResult> RunOnce(const std::string& path, const Params& params) {
  trace::ReaderOptions options;
  options.numeric_ids = true;
  auto reader = trace::OpenTraceReader(path, nullptr, options);
  if (!reader.ok()) return reader.status();
  return RunNestingDetailed(**reader, params);
}

// Root of every call under a parent assignment (kNoParent for unmatched).
std::vector<uint32_t> Roots(const std::vector<CallInfo>& calls) {
  std::vector<uint32_t> root(calls.size(), kNoParent);
  // Parents start before their children, and calls are in start order, so
  // a parent's index is usually smaller; resolve iteratively to be safe
  // under skew windows where it may not be.
  for (uint32_t i = 0; i < calls.size(); ++i) {
    if (!calls[i].matched) continue;
    uint32_t r = i;
    int guard = 0;
    while (calls[r].parent != kNoParent && guard++ < 100000) {
      if (root[r] != kNoParent) {
        r = root[r];
        break;
      }
      r = calls[r].parent;
    }
    root[i] = r;
  }
  return root;
}

}  // namespace

void ScoreRequestTrees(const std::vector<CallInfo>& truth,
                       const std::vector<uint32_t>& inferred_parent,
                       Evaluation* e) {
  const auto n = static_cast<uint32_t>(truth.size());
  // The ids alone say which node each request reaches: (pathid, node) for
  // every matched call of the request into the node. No clock is read, so a
  // skewed capture scores by what the servers did, not by what the cheating
  // run could nest under the clocks the result estimated.
  struct PathNodeHash {
    size_t operator()(const std::pair<uint64_t, trace::NodeId>& k) const {
      return std::hash<uint64_t>()(k.first * 0x9E3779B97F4A7C15ull ^ k.second);
    }
  };
  std::unordered_set<std::pair<uint64_t, trace::NodeId>, PathNodeHash> reached;
  std::unordered_map<uint64_t, bool> request_right;
  for (uint32_t i = 0; i < n; ++i) {
    if (!truth[i].matched || truth[i].pathid == 0) continue;
    reached.emplace(truth[i].pathid, truth[i].callee);
    // A request is a pathid among the cheating run's roots, or under a call
    // without a pathid (a client that sends no id, where the first server
    // adds one). Under skew a request may have several roots there: still
    // one request.
    const uint32_t tp = truth[i].parent;
    if (tp == kNoParent || (tp < n && truth[tp].pathid == 0)) {
      request_right.emplace(truth[i].pathid, true);
    }
  }
  auto mark_wrong = [&](uint64_t pathid) {
    auto it = request_right.find(pathid);
    if (it != request_right.end()) it->second = false;
  };
  for (uint32_t i = 0; i < n; ++i) {
    if (!truth[i].matched || truth[i].pathid == 0) continue;
    const uint64_t p = truth[i].pathid;
    const uint32_t ip = inferred_parent[i];
    const bool ip_is_call = ip < n;
    bool right;
    if (reached.count({p, truth[i].caller})) {
      // Inside its request: any call of the request into the caller is a
      // right parent. Request ids cannot tell which of several such calls
      // caused it (the fan-in of an aggregating service), and a parent must
      // be a call into the caller.
      right = ip_is_call && truth[ip].pathid == p &&
              truth[ip].callee == truth[i].caller;
    } else {
      // The request's entry: the request reaches its caller by no call with
      // an id, so it is a root, or the child of a call without an id (a
      // client that sends none, where the first server adds the id); for
      // that parent only the cheating run can say.
      right = ip == truth[i].parent;
    }
    if (right) continue;
    mark_wrong(p);
    // The request it was wrongly put under is wrong too.
    if (ip_is_call && truth[ip].pathid != 0) mark_wrong(truth[ip].pathid);
  }
  e->requests = request_right.size();
  e->requests_correct = 0;
  for (const auto& [pathid, right] : request_right) {
    e->requests_correct += right;
  }
  e->request_accuracy = e->requests ? static_cast<double>(e->requests_correct) /
                                          static_cast<double>(e->requests)
                                    : 0.0;
}

Result<Evaluation> Evaluate(const std::string& truth_trace,
                            const Params& params, const EvalOptions& options) {
  Params inferred_params = params;
  inferred_params.use_pathids = false;
  Result<DetailedResult> inf = RunOnce(truth_trace, inferred_params);
  if (!inf.ok()) return inf.status();
  Params truth_params = params;
  truth_params.use_pathids = true;
  Result<DetailedResult> tru = RunOnce(truth_trace, truth_params);
  if (!tru.ok()) return tru.status();
  const auto& ic = inf->calls;
  const auto& tc = tru->calls;
  if (ic.size() != tc.size()) {
    return Status::Error(truth_trace + ": internal mismatch between runs");
  }

  Evaluation e;
  e.tolerance = options.tolerance;
  std::vector<uint32_t> iroot = Roots(ic), troot = Roots(tc);
  // A tree is intact when every call in it has the same parent in both runs.
  std::vector<char> ibad(ic.size(), 0), tbad(ic.size(), 0);
  std::vector<uint64_t> isize(ic.size(), 0);
  for (uint32_t i = 0; i < ic.size(); ++i) {
    if (!ic[i].matched) continue;
    const uint64_t msgs = ic[i].imputed ? 1 : 2;  // an imputed call lost one
    e.messages += msgs;
    isize[iroot[i]] += msgs;
    if (ic[i].parent != tc[i].parent) {
      ibad[iroot[i]] = 1;
      tbad[troot[i]] = 1;
    }
  }
  for (uint32_t i = 0; i < ic.size(); ++i) {
    if (!ic[i].matched) continue;
    bool iroot_here = ic[i].parent == kNoParent;
    bool troot_here = tc[i].parent == kNoParent;
    e.inferred_instances += iroot_here;
    e.true_instances += troot_here;
    if (iroot_here && troot_here && !ibad[i] && !tbad[i]) {
      ++e.correct_instances;
      e.messages_correct += isize[i];
    }
  }
  std::vector<uint32_t> inferred(ic.size());
  for (uint32_t i = 0; i < ic.size(); ++i) inferred[i] = ic[i].parent;
  ScoreRequestTrees(tc, inferred, &e);
  e.instance_fn_rate = e.true_instances
                           ? 1.0 - static_cast<double>(e.correct_instances) /
                                       static_cast<double>(e.true_instances)
                           : 0.0;
  e.instance_fp_rate = e.inferred_instances
                           ? 1.0 - static_cast<double>(e.correct_instances) /
                                       static_cast<double>(e.inferred_instances)
                           : 0.0;
  e.message_error_rate = e.messages
                             ? 1.0 - static_cast<double>(e.messages_correct) /
                                         static_cast<double>(e.messages)
                             : 0.0;

  // Patterns, both lists ranked by count (RunNestingDetailed sorts them).
  const auto& ip = inf->result.patterns;
  const auto& tp = tru->result.patterns;
  std::unordered_map<std::string, const Pattern*> imap, tmap;
  // Patterns are the same when their shapes are (Pattern::shape).
  for (const auto& p : ip) imap[p.shape] = &p;
  for (const auto& p : tp) tmap[p.shape] = &p;
  e.true_patterns = tp.size();
  e.inferred_patterns = ip.size();
  for (const auto& p : tp) e.pattern_false_negatives += !imap.count(p.shape);
  for (const auto& p : ip) e.pattern_false_positives += !tmap.count(p.shape);

  // Figure 17: of the true top N patterns, how many are not in the inferred
  // top N; "tolerant" ignores a miss whose inferred count is within the
  // tolerance of the N-th inferred pattern's count (a near tie).
  for (int n = 1; n <= options.max_n && n <= static_cast<int>(tp.size()); ++n) {
    std::unordered_set<std::string> itop;
    for (int k = 0; k < n && k < static_cast<int>(ip.size()); ++k)
      itop.insert(ip[k].shape);
    double nth = n <= static_cast<int>(ip.size())
                     ? static_cast<double>(ip[n - 1].count)
                     : 0.0;
    TopNPoint pt;
    pt.n = n;
    for (int k = 0; k < n; ++k) {
      const std::string& sig = tp[k].shape;
      if (itop.count(sig)) continue;
      ++pt.false_negatives;
      auto it = imap.find(sig);
      double have =
          it == imap.end() ? 0.0 : static_cast<double>(it->second->count);
      if (have < (1.0 - options.tolerance) * nth) ++pt.false_negatives_tolerant;
      if (n == std::min<int>(10, static_cast<int>(tp.size())))
        e.missing_top_patterns.push_back(sig);
    }
    e.top_n.push_back(pt);
  }

  // Latency of correctly found patterns.
  double wsum = 0, wtot = 0;
  for (const auto& t : tp) {
    auto it = imap.find(t.shape);
    if (it == imap.end()) continue;
    double tm = t.root.latency.mean_s();
    if (tm <= 0) continue;
    double err = std::fabs(it->second->root.latency.mean_s() - tm) / tm;
    wsum += err * static_cast<double>(t.count);
    wtot += static_cast<double>(t.count);
    if (t.count >= options.min_count_for_latency && err > e.latency_error_max) {
      e.latency_error_max = err;
      e.latency_error_max_signature = t.signature;
    }
  }
  e.latency_error_weighted = wtot > 0 ? wsum / wtot : 0.0;
  return e;
}

nlohmann::ordered_json EvaluationToJson(const Evaluation& e) {
  nlohmann::ordered_json j;
  j["tool"] = "bbprof eval";
  j["patterns"] = {{"true", e.true_patterns},
                   {"inferred", e.inferred_patterns},
                   {"false_negatives", e.pattern_false_negatives},
                   {"false_positives", e.pattern_false_positives}};
  j["instances"] = {{"true", e.true_instances},
                    {"inferred", e.inferred_instances},
                    {"correct", e.correct_instances},
                    {"false_negative_rate", e.instance_fn_rate},
                    {"false_positive_rate", e.instance_fp_rate}};
  j["messages"] = {{"total", e.messages},
                   {"correct", e.messages_correct},
                   {"error_rate", e.message_error_rate}};
  j["requests"] = {{"total", e.requests}, {"correct", e.requests_correct}};
  j["request_accuracy"] = e.request_accuracy;
  nlohmann::ordered_json curve = nlohmann::ordered_json::array();
  for (const auto& p : e.top_n) {
    curve.push_back({{"n", p.n},
                     {"false_negatives", p.false_negatives},
                     {"false_negatives_tolerant", p.false_negatives_tolerant},
                     {"rate", static_cast<double>(p.false_negatives) / p.n},
                     {"rate_tolerant",
                      static_cast<double>(p.false_negatives_tolerant) / p.n}});
  }
  j["top_n"] = {{"tolerance", e.tolerance}, {"curve", curve}};
  j["latency"] = {{"relative_error_weighted", e.latency_error_weighted},
                  {"relative_error_max", e.latency_error_max},
                  {"worst_pattern", e.latency_error_max_signature}};
  return j;
}

std::string EvaluationToText(const Evaluation& e) {
  std::ostringstream out;
  char buf[256];
  std::snprintf(buf, sizeof buf,
                "path instances: %llu true, %llu inferred, %llu correct: "
                "false negatives %.2f%%, false positives %.2f%%\n",
                static_cast<unsigned long long>(e.true_instances),
                static_cast<unsigned long long>(e.inferred_instances),
                static_cast<unsigned long long>(e.correct_instances),
                100 * e.instance_fn_rate, 100 * e.instance_fp_rate);
  out << buf;
  std::snprintf(buf, sizeof buf,
                "path patterns:  %llu true, %llu inferred: %llu false "
                "negatives, %llu false positives\n",
                static_cast<unsigned long long>(e.true_patterns),
                static_cast<unsigned long long>(e.inferred_patterns),
                static_cast<unsigned long long>(e.pattern_false_negatives),
                static_cast<unsigned long long>(e.pattern_false_positives));
  out << buf;
  std::snprintf(buf, sizeof buf,
                "requests:       %llu, %llu right: request accuracy %.2f%%\n",
                static_cast<unsigned long long>(e.requests),
                static_cast<unsigned long long>(e.requests_correct),
                100 * e.request_accuracy);
  out << buf;
  std::snprintf(buf, sizeof buf,
                "messages:       %.2f%% not ascribed to a correct path\n",
                100 * e.message_error_rate);
  out << buf;
  std::snprintf(buf, sizeof buf,
                "latency:        mean root latency of correct patterns off by "
                "%.2f%% (weighted), %.2f%% at worst\n",
                100 * e.latency_error_weighted, 100 * e.latency_error_max);
  out << buf;
  out << "top-N false negatives (Figure 17; tolerant = ignoring near ties "
         "within "
      << e.tolerance * 100 << "%):\n";
  for (const auto& p : e.top_n) {
    std::snprintf(
        buf, sizeof buf, "  N=%-3d %2d (%.3f)  tolerant %2d (%.3f)%s\n", p.n,
        p.false_negatives, static_cast<double>(p.false_negatives) / p.n,
        p.false_negatives_tolerant,
        static_cast<double>(p.false_negatives_tolerant) / p.n,
        static_cast<double>(p.false_negatives) > 1.0 ? "  > 1/N" : "");
    out << buf;
  }
  return out.str();
}

}  // namespace bbprof::nesting
