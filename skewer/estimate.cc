#include "skewer/estimate.h"

#include <algorithm>
#include <cinttypes>
#include <cmath>
#include <cstdio>
#include <deque>
#include <map>
#include <memory>
#include <queue>
#include <tuple>
#include <unordered_map>

#include "base/progress.h"
#include "trace/byte_stream.h"
#include "trace/reader.h"
#include "trace/timestamp.h"

namespace bbprof::skewer {

namespace {

using trace::NodeId;
using trace::Record;

// Per window, only the kKeep tightest bounds of each side are kept (the
// robust quantile never looks further), so memory grows with the number of
// windows, not of messages.
constexpr size_t kKeep = 16;

struct Sample {
  TimeNs t;      // when (a's clock)
  TimeNs bound;  // on theta_b - theta_a
};

struct Window {
  uint64_t n_upper = 0, n_lower = 0;
  std::vector<Sample> upper;  // max-heap on bound: the kKeep smallest
  std::vector<Sample> lower;  // min-heap on bound: the kKeep largest
};

struct PairData {
  std::map<int64_t, Window> windows;
  uint64_t n_upper = 0, n_lower = 0;
};

void Keep(std::vector<Sample>& heap, Sample s, bool smallest) {
  auto cmp = [smallest](const Sample& x, const Sample& y) {
    return smallest ? x.bound < y.bound : x.bound > y.bound;
  };
  if (heap.size() < kKeep) {
    heap.push_back(s);
    std::push_heap(heap.begin(), heap.end(), cmp);
  } else if (smallest ? s.bound < heap.front().bound
                      : s.bound > heap.front().bound) {
    std::pop_heap(heap.begin(), heap.end(), cmp);
    heap.back() = s;
    std::push_heap(heap.begin(), heap.end(), cmp);
  }
}

// The robust tight value of one side of a window after removing the line
// slope*(t - ref): the r-th tightest with r = 1 + floor(q * n), at most kKeep.
bool Robust(const std::vector<Sample>& kept, uint64_t n, double slope,
            TimeNs ref, double q, bool smallest, double* out) {
  if (kept.empty()) {
    return false;
  }
  std::vector<double> v;
  v.reserve(kept.size());
  for (const Sample& s : kept) {
    v.push_back(static_cast<double>(s.bound) -
                slope * static_cast<double>(s.t - ref));
  }
  std::sort(v.begin(), v.end());
  if (!smallest) {
    std::reverse(v.begin(), v.end());
  }
  size_t r = 1 + static_cast<size_t>(q * static_cast<double>(n));
  r = std::min(r, v.size());
  *out = v[r - 1];
  return true;
}

// Theil-Sen: the median of pairwise slopes, robust to a few bad windows.
double TheilSen(const std::vector<std::pair<double, double>>& pts) {
  std::vector<std::pair<double, double>> p = pts;
  if (p.size() > 1500) {  // thin evenly: the estimator is quadratic
    std::vector<std::pair<double, double>> thin;
    for (size_t i = 0; i < 1500; ++i) {
      thin.push_back(p[i * p.size() / 1500]);
    }
    p.swap(thin);
  }
  std::vector<double> slopes;
  for (size_t i = 0; i < p.size(); ++i) {
    for (size_t j = i + 1; j < p.size(); ++j) {
      const double dx = p[j].first - p[i].first;
      if (dx != 0) {
        slopes.push_back((p[j].second - p[i].second) / dx);
      }
    }
  }
  if (slopes.empty()) {
    return 0;
  }
  auto mid = slopes.begin() + static_cast<std::ptrdiff_t>(slopes.size() / 2);
  std::nth_element(slopes.begin(), mid, slopes.end());
  return *mid;
}

void FitPair(const PairData& d, const EstimateOptions& o, TimeNs ref,
             TimeNs origin, PairEstimate* pe) {
  pe->upper_count = d.n_upper;
  pe->lower_count = d.n_lower;
  pe->windows = d.windows.size();
  if (d.n_upper < std::max<uint64_t>(o.min_matches, 1) ||
      d.n_lower < std::max<uint64_t>(o.min_matches, 1)) {
    return;
  }
  pe->usable = true;
  double slope = 0;
  // Drift: a line through the windows' mid-points (the middle of each
  // window's [lower, upper] interval), refitted once on detrended bounds so
  // that a window's own slope does not bias which samples are its tightest.
  for (int iter = 0; o.fit_drift && iter < 2; ++iter) {
    std::vector<std::pair<double, double>> mids;
    for (const auto& [w, win] : d.windows) {
      double u, l;
      if (Robust(win.upper, win.n_upper, slope, ref, o.quantile, true, &u) &&
          Robust(win.lower, win.n_lower, slope, ref, o.quantile, false, &l)) {
        const double center =
            static_cast<double>(origin - ref) +
            (static_cast<double>(w) + 0.5) * static_cast<double>(o.window);
        mids.emplace_back(center, (u + l) / 2);
      }
    }
    if (mids.size() < 4) {
      break;
    }
    slope += TheilSen(mids);
  }
  if (std::fabs(slope) > 1e-3) {
    slope = slope > 0 ? 1e-3 : -1e-3;
  }
  std::vector<double> ups, lows;
  for (const auto& [w, win] : d.windows) {
    double u, l;
    const bool hu =
        Robust(win.upper, win.n_upper, slope, ref, o.quantile, true, &u);
    const bool hl =
        Robust(win.lower, win.n_lower, slope, ref, o.quantile, false, &l);
    if (hu) {
      ups.push_back(u);
    }
    if (hl) {
      lows.push_back(l);
    }
    if (hu && hl && u < l) {
      ++pe->crossing_windows;
    }
  }
  // Across windows, again a low quantile rather than the extreme (5% of the
  // windows may be wrong), which is the extreme itself with under 20 windows.
  std::sort(ups.begin(), ups.end());
  std::sort(lows.begin(), lows.end(), std::greater<>());
  const double up =
      ups[static_cast<size_t>(0.05 * static_cast<double>(ups.size()))];
  const double lo =
      lows[static_cast<size_t>(0.05 * static_cast<double>(lows.size()))];
  pe->inconsistent = lo > up;
  pe->upper_ns = std::llround(up);
  pe->lower_ns = std::llround(lo);
  pe->offset_ns = std::llround((up + lo) / 2);
  pe->half_width_ns = std::llround(std::fabs(up - lo) / 2);
  pe->drift_ppt = std::llround(slope * 1e12);
}

struct Obs {
  TimeNs ts;
  uint64_t id;
  bool send;
};

}  // namespace

Result<EstimateResult> EstimateOffsets(const std::vector<EstimateInput>& inputs,
                                       const EstimateOptions& options) {
  auto nodes = std::make_shared<trace::NodeTable>();
  std::vector<std::unique_ptr<trace::TraceReader>> readers;
  std::vector<NodeId> host_of;
  for (const auto& in : inputs) {
    auto r = options.open ? options.open(in.path, nodes, {})
                          : trace::OpenTraceReader(in.path, nodes);
    if (!r.ok()) {
      return r.status();
    }
    readers.push_back(std::move(*r));
    host_of.push_back(nodes->Intern(in.host));
  }
  for (size_t i = 0; i < inputs.size(); ++i) {
    for (size_t j = 0; j < i; ++j) {
      if (host_of[i] == host_of[j]) {
        return Status::Error(
            inputs[i].path + " and " + inputs[j].path +
            " are both captured at " + inputs[i].host +
            " (one trace per host; merge a host's traces first)");
      }
    }
  }
  std::vector<bool> is_host;
  auto host_check = [&](NodeId id) {
    if (is_host.size() <= id) {
      is_host.resize(nodes->size() + 1, false);
    }
    return is_host[id];
  };
  for (NodeId h : host_of) {
    host_check(h);
    is_host[h] = true;
  }

  // The k-way merge of the files by their own timestamps: the two copies of
  // a message are then at most (offset + transit) apart in the stream.
  using Entry = std::pair<TimeNs, size_t>;
  std::priority_queue<Entry, std::vector<Entry>, std::greater<>> heap;
  std::vector<Record> cur(inputs.size());
  std::vector<std::string> cur_callid(inputs.size());
  auto advance = [&](size_t i) -> Status {
    if (readers[i]->Next(cur[i])) {
      cur_callid[i].assign(cur[i].callid);
      heap.emplace(cur[i].ts_ns, i);
    }
    return readers[i]->status();
  };
  for (size_t i = 0; i < inputs.size(); ++i) {
    BBPROF_RETURN_IF_ERROR(advance(i));
  }
  EstimateResult result;
  TimeNs origin = heap.empty() ? 0 : heap.top().first;
  origin -= ((origin % trace::kNsPerSecond) + trace::kNsPerSecond) %
            trace::kNsPerSecond;
  result.reference_time = origin;

  std::unordered_map<std::string, std::deque<Obs>> pending;
  std::deque<std::pair<TimeNs, std::string>> expiry;  // (ts, key), oldest first
  std::map<std::pair<NodeId, NodeId>, PairData> pairs;
  uint64_t next_id = 0;
  std::string key;
  uint64_t total_bytes = 0;
  for (const auto& in : inputs) {
    total_bytes += trace::FileSizeOrZero(in.path);
  }
  Progress progress("matching messages", total_bytes, options.quiet);
  while (!heap.empty()) {
    const size_t i = heap.top().second;
    heap.pop();
    const Record& r = cur[i];
    ++result.records;
    const NodeId h = host_of[i];
    const bool send = r.sender == h;
    const NodeId other = send ? r.receiver : r.sender;
    // Only messages with a capture host at each end can be matched, and
    // only those with a callid can be told apart.
    if ((send || r.receiver == h) && r.sender != r.receiver &&
        host_check(other) && !cur_callid[i].empty()) {
      // Expire copies whose partner can no longer come.
      while (!expiry.empty() &&
             expiry.front().first < r.ts_ns - options.match_horizon) {
        auto it = pending.find(expiry.front().second);
        if (it != pending.end()) {
          while (!it->second.empty() &&
                 it->second.front().ts < r.ts_ns - options.match_horizon) {
            it->second.pop_front();
            ++result.unmatched;
          }
          if (it->second.empty()) {
            pending.erase(it);
          }
        }
        expiry.pop_front();
      }
      key.assign(1, static_cast<char>(r.kind));
      key.append(reinterpret_cast<const char*>(&r.sender), sizeof r.sender);
      key.append(reinterpret_cast<const char*>(&r.receiver), sizeof r.receiver);
      key.append(cur_callid[i]);
      auto& q = pending[key];
      auto match = std::find_if(q.begin(), q.end(),
                                [&](const Obs& o) { return o.send != send; });
      if (match == q.end()) {
        q.push_back({r.ts_ns, next_id++, send});
        expiry.emplace_back(r.ts_ns, key);
      } else {
        const TimeNs ts_send = send ? r.ts_ns : match->ts;
        const TimeNs ts_recv = send ? match->ts : r.ts_ns;
        q.erase(match);
        if (q.empty()) {
          pending.erase(key);
        }
        ++result.matched;
        // r - s bounds theta_receiver - theta_sender from above.
        const NodeId a = std::min(r.sender, r.receiver),
                     b = std::max(r.sender, r.receiver);
        const bool a_sends = r.sender == a;
        PairData& pd = pairs[{a, b}];
        const TimeNs t_a = a_sends ? ts_send : ts_recv;
        const int64_t w = (t_a - origin) / options.window;
        Window& win = pd.windows[w];
        if (a_sends) {  // theta_b - theta_a <= recv - send
          ++pd.n_upper;
          ++win.n_upper;
          Keep(win.upper, {t_a, ts_recv - ts_send}, true);
        } else {  // theta_a - theta_b <= recv - send
          ++pd.n_lower;
          ++win.n_lower;
          Keep(win.lower, {t_a, ts_send - ts_recv}, false);
        }
      }
    }
    BBPROF_RETURN_IF_ERROR(advance(i));
    uint64_t done = 0;
    for (const auto& rd : readers) {
      done += rd->raw_bytes_read();
    }
    progress.Update(done);
  }
  progress.Finish();
  for (const auto& [k, q] : pending) {
    result.unmatched += q.size();
  }

  // Fit every pair, then the graph.
  std::map<NodeId, uint64_t> matched_at;
  for (const auto& [ab, d] : pairs) {
    PairEstimate pe;
    pe.a = std::string(nodes->Name(ab.first));
    pe.b = std::string(nodes->Name(ab.second));
    FitPair(d, options, origin, origin, &pe);
    if (pe.a > pe.b) {  // keep a < b by name for the report
      std::swap(pe.a, pe.b);
      std::swap(pe.upper_count, pe.lower_count);
      pe.offset_ns = -pe.offset_ns;
      pe.drift_ppt = -pe.drift_ppt;
      const TimeNs lo = pe.lower_ns;
      pe.lower_ns = -pe.upper_ns;
      pe.upper_ns = -lo;
    }
    matched_at[ab.first] += d.n_upper + d.n_lower;
    matched_at[ab.second] += d.n_upper + d.n_lower;
    result.pairs.push_back(pe);
  }
  std::sort(result.pairs.begin(), result.pairs.end(),
            [](const PairEstimate& x, const PairEstimate& y) {
              return std::tie(x.a, x.b) < std::tie(y.a, y.b);
            });
  std::map<std::string, NodeEstimate> est;
  for (NodeId h : host_of) {
    NodeEstimate ne;
    ne.node = std::string(nodes->Name(h));
    ne.matched = matched_at[h];
    est[ne.node] = ne;
  }
  std::string ref = options.reference;
  if (ref.empty()) {
    uint64_t best = 0;
    for (const auto& [name, ne] : est) {
      if (ref.empty() || ne.matched > best) {
        ref = name;
        best = ne.matched;
      }
    }
  } else if (!est.count(ref)) {
    return Status::Error("--reference " + ref +
                         " is not the capture host of any input");
  }
  result.reference_node = ref;
  // Dijkstra on summed half-widths (plus 1 ns a hop, to prefer short paths).
  std::map<std::string, TimeNs> dist;
  using QE = std::pair<TimeNs, std::string>;
  std::priority_queue<QE, std::vector<QE>, std::greater<>> pq;
  if (!ref.empty()) {
    est[ref].estimated = true;
    est[ref].via = "reference";
    dist[ref] = 0;
    pq.emplace(0, ref);
  }
  while (!pq.empty()) {
    auto [dcur, n] = pq.top();
    pq.pop();
    if (dcur != dist[n]) {
      continue;
    }
    const NodeEstimate base = est[n];
    for (const PairEstimate& pe : result.pairs) {
      if (!pe.usable || (pe.a != n && pe.b != n)) {
        continue;
      }
      const bool forward = pe.a == n;  // pe gives theta_b - theta_a
      const std::string& m = forward ? pe.b : pe.a;
      const TimeNs nd = dcur + pe.half_width_ns + 1;
      auto it = dist.find(m);
      if (it != dist.end() && it->second <= nd) {
        continue;
      }
      dist[m] = nd;
      NodeEstimate& ne = est[m];
      ne.estimated = true;
      ne.offset_ns = base.offset_ns + (forward ? pe.offset_ns : -pe.offset_ns);
      ne.drift_ppt = base.drift_ppt + (forward ? pe.drift_ppt : -pe.drift_ppt);
      ne.uncertainty_ns = base.uncertainty_ns + pe.half_width_ns;
      ne.via = n;
      pq.emplace(nd, m);
    }
  }
  for (auto& [name, ne] : est) {
    result.nodes.push_back(ne);
  }
  return result;
}

SkewTable ToSkewTable(const EstimateResult& result) {
  SkewTable t;
  t.reference = result.reference_time;
  t.has_reference = true;
  t.stamp = Stamp::kHost;
  t.has_stamp = true;
  for (const NodeEstimate& n : result.nodes) {
    if (!n.estimated) {
      continue;
    }
    ClockModel m;
    m.offset_ns = n.offset_ns;
    m.drift_ppt = std::clamp(n.drift_ppt, -kMaxDriftPpt, kMaxDriftPpt);
    t.nodes[n.node] = m;
    t.uncertainty_ns[n.node] = n.uncertainty_ns;
  }
  return t;
}

std::string FormatEstimateReport(const EstimateResult& r) {
  std::string out;
  char line[512];
  std::snprintf(line, sizeof line,
                "reference node %s; reference time %s; %" PRIu64
                " messages read, %" PRIu64 " matched across hosts, %" PRIu64
                " unmatched\n",
                r.reference_node.c_str(),
                trace::FormatTimestamp(r.reference_time).c_str(), r.records,
                r.matched, r.unmatched);
  out += line;
  std::snprintf(line, sizeof line, "%-24s %16s %12s %14s %10s  %s\n", "node",
                "offset_s", "+-_s", "drift_ppm", "matched", "via");
  out += line;
  for (const NodeEstimate& n : r.nodes) {
    if (n.estimated) {
      std::snprintf(line, sizeof line,
                    "%-24s %16s %12.9f %14s %10" PRIu64 "  %s\n",
                    n.node.c_str(), FormatOffset(n.offset_ns).c_str(),
                    static_cast<double>(n.uncertainty_ns) / 1e9,
                    FormatDrift(n.drift_ppt).c_str(), n.matched, n.via.c_str());
    } else {
      std::snprintf(line, sizeof line,
                    "%-24s %16s %12s %14s %10" PRIu64 "  %s\n", n.node.c_str(),
                    "unestimated", "-", "-", n.matched,
                    "not enough matched messages to the reference's component");
    }
    out += line;
  }
  out += "\npairs (offset = theta_b - theta_a):\n";
  std::snprintf(line, sizeof line, "%-24s %-24s %9s %9s %16s %12s %14s  %s\n",
                "a", "b", "a->b", "b->a", "offset_s", "+-_s", "drift_ppm",
                "note");
  out += line;
  for (const PairEstimate& p : r.pairs) {
    std::string note;
    if (!p.usable) {
      note = "too few matched messages in one direction";
    }
    if (p.inconsistent) {
      note = "INCONSISTENT: bounds cross (mismatched messages or a clock step)";
    }
    if (p.usable && !p.inconsistent && p.crossing_windows > 0) {
      note = std::to_string(p.crossing_windows) + " of " +
             std::to_string(p.windows) + " windows with crossing bounds";
    }
    std::snprintf(
        line, sizeof line,
        "%-24s %-24s %9" PRIu64 " %9" PRIu64 " %16s %12.9f %14s  %s\n",
        p.a.c_str(), p.b.c_str(), p.upper_count, p.lower_count,
        p.usable ? FormatOffset(p.offset_ns).c_str() : "-",
        static_cast<double>(p.half_width_ns) / 1e9,
        p.usable ? FormatDrift(p.drift_ppt).c_str() : "-", note.c_str());
    out += line;
  }
  return out;
}

}  // namespace bbprof::skewer
