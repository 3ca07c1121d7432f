#include "skewer/apply.h"

#include <algorithm>
#include <cstdint>
#include <memory>
#include <sstream>

#include "base/progress.h"
#include "trace/byte_stream.h"
#include "trace/reader.h"
#include "trace/timestamp.h"

namespace bbprof::skewer {

namespace {

using trace::NodeId;
using trace::Record;

struct Pending {
  TimeNs ts;
  uint64_t seq;  // input order, so ties leave in input order
  NodeId sender, receiver;
  trace::Kind kind;
  std::string callid, pathid, op;
};

struct LaterFirst {
  bool operator()(const Pending& a, const Pending& b) const {
    return a.ts != b.ts ? a.ts > b.ts : a.seq > b.seq;
  }
};

// Finds "key=VALUE" among a meta body's words.
std::optional<std::string> MetaValue(const std::string& body,
                                     std::string_view key) {
  std::istringstream words(body);
  std::string w;
  std::optional<std::string> found;
  while (words >> w) {
    if (w.size() > key.size() && w.compare(0, key.size(), key) == 0 &&
        w[key.size()] == '=') {
      found = w.substr(key.size() + 1);
    }
  }
  return found;
}

}  // namespace

std::optional<std::string> CaptureHost(const std::vector<std::string>& meta) {
  std::optional<std::string> host;
  for (const auto& m : meta) {
    if (auto v = MetaValue(m, "capture_host")) {
      host = *v;
    }
  }
  return host;
}

Result<ApplySummary> ApplySkew(const std::string& input,
                               const std::string& output,
                               const ApplyOptions& options) {
  const bool add = options.direction == Direction::kAdd;
  auto opened = trace::OpenTraceReader(input);
  if (!opened.ok()) {
    return opened.status();
  }
  trace::TraceReader& reader = **opened;
  ApplySummary summary;
  SkewTable table = options.table;
  const std::vector<std::string> header_meta = reader.meta();

  // The reference time: given, or from the skew being removed, or (adding)
  // the first timestamp rounded down to a whole second.
  Record first;
  const bool has_first = reader.Next(first);
  if (!reader.status().ok()) {
    return reader.status();
  }
  if (!table.has_reference && !add) {
    for (const auto& m : header_meta) {
      if (m.starts_with("skewer op=add ")) {
        auto r = MetaValue(m, "reference");
        TimeNs ref;
        if (r && trace::ParseTimestamp(*r, &ref)) {
          table.reference = ref;
          table.has_reference = true;
        }
      }
    }
    if (!table.has_reference && table.has_drift()) {
      return Status::Error(
          input +
          ": the offsets have drifts but no '#reference=SECONDS' line, and the "
          "trace has no '#meta skewer op=add' line to take it from");
    }
  }
  if (!table.has_reference) {
    const TimeNs t = has_first ? first.ts_ns : 0;
    table.reference = t - ((t % trace::kNsPerSecond) + trace::kNsPerSecond) %
                              trace::kNsPerSecond;
    table.has_reference = true;
  }
  summary.reference = table.reference;
  const TimeNs ref = table.reference;

  // Per node id, its model (null = the clock is true time). In host mode one
  // model stamps everything.
  const ClockModel* host_model = nullptr;
  if (table.stamp == Stamp::kHost) {
    std::optional<std::string> host = CaptureHost(header_meta);
    if (!options.host.empty()) {
      host = options.host;
    }
    if (!host) {
      return Status::Error(
          input +
          ": --stamp host needs the trace's capture host, but it has no "
          "'#meta ... capture_host=NAME' line (give it with --host NAME)");
    }
    summary.capture_host = *host;
    auto it = table.nodes.find(*host);
    if (it != table.nodes.end()) {
      host_model = &it->second;
    }
    for (const auto& [name, m] : table.nodes) {
      if (name != *host) {
        summary.unused_nodes.push_back(name);
      }
    }
  }
  std::vector<const ClockModel*> model_of;
  std::vector<const ClockModel*>
      models;  // the distinct non-identity models in play
  if (table.stamp == Stamp::kHost) {
    if (host_model != nullptr) {
      models.push_back(host_model);
    }
  } else {
    for (const auto& [name, m] : table.nodes) {
      models.push_back(&m);
    }
  }
  trace::NodeTable& nodes = reader.nodes();
  auto model_for = [&](NodeId id) -> const ClockModel* {
    if (host_model != nullptr || table.stamp == Stamp::kHost) {
      return host_model;
    }
    while (model_of.size() <= id) {
      auto it = table.nodes.find(
          std::string(nodes.Name(static_cast<NodeId>(model_of.size()))));
      model_of.push_back(it == table.nodes.end() ? nullptr : &it->second);
    }
    return model_of[id];
  };
  auto map_time = [&](const ClockModel* m, TimeNs t) {
    if (m == nullptr) {
      return t;
    }
    return add ? ToClock(*m, ref, t) : FromClock(*m, ref, t);
  };
  // The least output time any record read from now on can get, given that
  // inputs are at or after `t` (every map is monotone). Removing costs a
  // binary search per drifting model, so that bound is refreshed only every
  // millisecond of input; an older bound is still a valid (lower) one.
  TimeNs bound_at = INT64_MIN, bound = INT64_MIN;
  auto release_bound = [&](TimeNs t) {
    if (add || t >= bound_at + 1'000'000 || bound_at == INT64_MIN) {
      TimeNs b = t;  // nodes without a model keep true time
      for (const ClockModel* m : models) {
        b = std::min(b, map_time(m, t));
      }
      bound = b;
      bound_at = t;
    }
    return bound;
  };

  auto writer = trace::OpenTraceWriter(output, &nodes, options.format);
  if (!writer.ok()) {
    return writer.status();
  }
  trace::TraceWriter& w = **writer;
  // Header meta lines, then what this run did. Removing exactly the skew a
  // previous run added drops that run's line, so add-then-remove gives the
  // original file back byte for byte.
  const std::string add_body = SkewMetaBody("add", table);
  int drop = -1;
  if (!add) {
    for (size_t i = 0; i < header_meta.size(); ++i) {
      if (header_meta[i] == add_body) {
        drop = static_cast<int>(i);
      }
    }
  }
  for (size_t i = 0; i < header_meta.size(); ++i) {
    if (static_cast<int>(i) != drop) {
      BBPROF_RETURN_IF_ERROR(w.WriteMeta(header_meta[i]));
    }
  }
  if (add) {
    BBPROF_RETURN_IF_ERROR(w.WriteMeta(add_body));
  } else if (drop < 0) {
    BBPROF_RETURN_IF_ERROR(w.WriteMeta(SkewMetaBody("remove", table)));
  }

  std::vector<Pending> heap;
  auto emit = [&](Pending& p) {
    Record r;
    r.ts_ns = p.ts;
    r.sender = p.sender;
    r.receiver = p.receiver;
    r.kind = p.kind;
    r.callid = p.callid;
    r.pathid = p.pathid;
    r.op = p.op;
    return w.Write(r);
  };
  auto release = [&](TimeNs upto, bool all) -> Status {
    while (!heap.empty() && (all || heap.front().ts <= upto)) {
      std::pop_heap(heap.begin(), heap.end(), LaterFirst());
      BBPROF_RETURN_IF_ERROR(emit(heap.back()));
      heap.pop_back();
    }
    return Status::Ok();
  };

  Progress progress(add ? "skewing" : "removing skew",
                    trace::FileSizeOrZero(input), options.quiet);
  std::vector<bool> seen;
  auto mark_seen = [&](NodeId id) {
    if (seen.size() <= id) {
      seen.resize(id + 1, false);
    }
    seen[id] = true;
  };
  uint64_t seq = 0;
  TimeNs prev_ts = INT64_MIN;
  const ClockModel* prev_model = nullptr;
  Record rec = first;
  bool have = has_first;
  while (have) {
    ++summary.records;
    mark_seen(rec.sender);
    mark_seen(rec.receiver);
    const ClockModel* m =
        model_for(table.stamp == Stamp::kReceiver ? rec.receiver : rec.sender);
    const TimeNs out = map_time(m, rec.ts_ns);
    if (out != rec.ts_ns) {
      ++summary.shifted;
    }
    if (rec.ts_ns == prev_ts && m != prev_model &&
        (m == nullptr || prev_model == nullptr || !(*m == *prev_model))) {
      ++summary.mixed_ties;
    }
    prev_ts = rec.ts_ns;
    prev_model = m;
    if (add && m != nullptr && IsLostValue(*m, ref, rec.ts_ns)) {
      ++summary.lost_values;
    }
    // Records already buffered that no later input can precede leave first.
    BBPROF_RETURN_IF_ERROR(release(release_bound(rec.ts_ns), false));
    heap.push_back({out, seq++, rec.sender, rec.receiver, rec.kind,
                    std::string(rec.callid), std::string(rec.pathid),
                    std::string(rec.op)});
    std::push_heap(heap.begin(), heap.end(), LaterFirst());
    summary.max_buffered =
        std::max<uint64_t>(summary.max_buffered, heap.size());
    progress.UpdateLazily([&] { return reader.raw_bytes_read(); });
    have = reader.Next(rec);
  }
  if (!reader.status().ok()) {
    return reader.status();
  }
  BBPROF_RETURN_IF_ERROR(release(0, true));
  progress.Finish();
  // Meta lines met after the first record (e.g. a generator's closing
  // summary) go after the records.
  for (size_t i = header_meta.size(); i < reader.meta().size(); ++i) {
    BBPROF_RETURN_IF_ERROR(w.WriteMeta(reader.meta()[i]));
  }
  if (table.stamp != Stamp::kHost) {
    for (const auto& [name, m] : table.nodes) {
      NodeId id;
      if (!nodes.Find(name, &id) || id >= seen.size() || !seen[id]) {
        summary.unknown_nodes.push_back(name);
      }
    }
  }
  if (add &&
      (!summary.unknown_nodes.empty() || !summary.unused_nodes.empty())) {
    return summary;  // the writer is dropped unclosed: nothing is written
  }
  BBPROF_RETURN_IF_ERROR(w.Close());
  summary.written = true;
  return summary;
}

}  // namespace bbprof::skewer
