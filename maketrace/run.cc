#include "maketrace/run.h"

#include <sys/stat.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cinttypes>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <memory>
#include <vector>

#include "base/progress.h"
#include "trace/node_table.h"

namespace bbprof::maketrace {

namespace {

using trace::TimeNs;

// Fills a Record from a Message. Callids and pathids are numbers (0 when
// absent); the writers format or encode them.
void ToRecord(const Message& m, trace::Record* rec) {
  rec->ts_ns = m.ts_ns;
  rec->sender = m.sender;
  rec->receiver = m.receiver;
  rec->kind = m.kind;
  rec->callid_is_number = m.callid != 0;
  rec->callid_number = m.callid;
  rec->pathid_is_number = m.pathid != 0;
  rec->pathid_number = m.pathid;
  rec->op = m.op;
}

std::string HexHash(uint64_t h) {
  char buf[20];
  std::snprintf(buf, sizeof buf, "%016" PRIx64, h);
  return buf;
}

}  // namespace

std::string FileNameFor(std::string_view host) {
  // Node names may hold '/' (J2EE components) or start with '.': escape
  // everything but a safe set as %XX so each host gets its own plain file.
  std::string out;
  for (size_t i = 0; i < host.size(); ++i) {
    const auto c = static_cast<unsigned char>(host[i]);
    const bool safe = std::isalnum(c) || c == '_' || c == '-' || c == ':' ||
                      c == '@' || c == '+' || (c == '.' && i > 0);
    if (safe) {
      out.push_back(static_cast<char>(c));
    } else {
      char hex[4];
      std::snprintf(hex, sizeof hex, "%%%02X", c);
      out += hex;
    }
  }
  return out;
}

namespace {

// Per-host views (for clock-skew estimation, skewer --estimate): each
// host's file
// holds every message it sent, stamped at the send time, and every message
// it received, stamped at send time + a network transit time drawn per
// message from a Gaussian truncated at a minimum. Receive copies wait in a
// per-host priority queue until no earlier line can still come, so memory is
// bounded by the messages in transit.
class HostViews {
 public:
  HostViews(const Config& config, const trace::NodeTable* nodes, uint64_t seed)
      : config_(config), nodes_(nodes), rng_(seed ^ 0x6E6574776F726BULL) {}

  Status Open(const std::string& dir, trace::TraceFormat format,
              const std::string& meta) {
    if (::mkdir(dir.c_str(), 0777) != 0 && errno != EEXIST) {
      return Status::Error(dir +
                           ": cannot create folder: " + std::strerror(errno));
    }
    const char* ext = format == trace::TraceFormat::kBinary ? ".bbt" : ".trace";
    hosts_.resize(nodes_->size());
    for (trace::NodeId id = 0; id < nodes_->size(); ++id) {
      const std::string path = dir + "/" + FileNameFor(nodes_->Name(id)) + ext;
      auto w = trace::OpenTraceWriter(path, nodes_, format);
      if (!w.ok()) return w.status();
      hosts_[id].writer = std::move(*w);
      BBPROF_RETURN_IF_ERROR(hosts_[id].writer->WriteMeta(
          meta + " capture_host=" + std::string(nodes_->Name(id))));
    }
    return Status::Ok();
  }

  Status Add(const Message& m) {
    BBPROF_RETURN_IF_ERROR(Flush(m.sender, m.ts_ns));
    BBPROF_RETURN_IF_ERROR(Write(m.sender, m, m.ts_ns));
    BBPROF_RETURN_IF_ERROR(Flush(m.receiver, m.ts_ns));
    double x;
    do {
      x = config_.network.mean_ns + config_.network.sd_ns * rng_.Gaussian();
    } while (x < config_.network_min_ns && config_.network.sd_ns > 0);
    x = std::min(std::max(x, config_.network_min_ns), 1e16);
    Host& h = hosts_[m.receiver];
    h.in_transit.push_back({m.ts_ns + std::llround(x), seq_++, m});
    std::push_heap(h.in_transit.begin(), h.in_transit.end(), Later());
    return Status::Ok();
  }

  Status Close() {
    for (trace::NodeId id = 0; id < hosts_.size(); ++id) {
      BBPROF_RETURN_IF_ERROR(Flush(id, INT64_MAX));
      BBPROF_RETURN_IF_ERROR(hosts_[id].writer->Close());
    }
    return Status::Ok();
  }
  size_t size() const { return hosts_.size(); }

 private:
  struct Arrival {
    TimeNs ts_ns;
    uint64_t seq;
    Message m;
  };
  struct Later {
    bool operator()(const Arrival& a, const Arrival& b) const {
      return a.ts_ns != b.ts_ns ? a.ts_ns > b.ts_ns : a.seq > b.seq;
    }
  };
  struct Host {
    std::unique_ptr<trace::TraceWriter> writer;
    std::vector<Arrival> in_transit;
  };

  Status Flush(trace::NodeId id, TimeNs upto) {
    Host& h = hosts_[id];
    while (!h.in_transit.empty() && h.in_transit.front().ts_ns <= upto) {
      std::pop_heap(h.in_transit.begin(), h.in_transit.end(), Later());
      Arrival a = h.in_transit.back();
      h.in_transit.pop_back();
      BBPROF_RETURN_IF_ERROR(Write(id, a.m, a.ts_ns));
    }
    return Status::Ok();
  }

  Status Write(trace::NodeId host, const Message& m, TimeNs ts) {
    trace::Record rec;
    ToRecord(m, &rec);
    rec.ts_ns = ts;
    return hosts_[host].writer->Write(rec);
  }

  const Config& config_;
  const trace::NodeTable* nodes_;
  Rng rng_;
  uint64_t seq_ = 0;
  std::vector<Host> hosts_;
};

}  // namespace

Result<RunSummary> RunMaketrace(const Config& config, const RunOptions& opts) {
  trace::NodeTable nodes;
  Generator gen(config, opts.seed, &nodes, opts.duration_ns, opts.messages);
  const std::string meta = "source=maketrace config=" + config.name +
                           " config_hash=" + HexHash(config.hash) +
                           " seed=" + std::to_string(opts.seed);
  auto writer = trace::OpenTraceWriter(opts.output, &nodes, opts.format);
  if (!writer.ok()) return writer.status();
  trace::TraceWriter& w = **writer;
  BBPROF_RETURN_IF_ERROR(w.WriteMeta(meta));
  std::unique_ptr<HostViews> views;
  if (!opts.per_host_dir.empty()) {
    views = std::make_unique<HostViews>(config, &nodes, opts.seed);
    BBPROF_RETURN_IF_ERROR(views->Open(opts.per_host_dir, opts.format, meta));
  }
  std::unique_ptr<SnifferModel> sniffer;
  if (config.sniffer_rate_per_s > 0) {
    sniffer = std::make_unique<SnifferModel>(config.sniffer_rate_per_s,
                                             config.sniffer_queue);
  }
  // Loss draws come from their own stream, so a lossy trace is exactly the
  // loss-free trace of the same seed with some lines removed.
  Rng loss_rng(opts.seed ^ 0x6C6F7373ULL);  // "loss"
  RunSummary sum;
  const uint64_t expected = opts.messages > 0 ? opts.messages : config.messages;
  Progress progress("generating", expected, opts.quiet);
  Message m;
  trace::Record rec;
  while (gen.Next(&m)) {
    progress.Update(gen.stats().messages);
    if (views) BBPROF_RETURN_IF_ERROR(views->Add(m));
    if (sniffer && !sniffer->Accept(m.ts_ns)) {
      ++sum.sniffer_drops;
      continue;
    }
    if (config.loss_probability > 0 &&
        loss_rng.Uniform() < config.loss_probability) {
      ++sum.random_drops;
      continue;
    }
    ToRecord(m, &rec);
    BBPROF_RETURN_IF_ERROR(w.Write(rec));
    ++sum.written;
  }
  progress.Finish();
  BBPROF_RETURN_IF_ERROR(gen.status().WithContext(config.name));
  sum.gen = gen.stats();
  char par[32];
  std::snprintf(par, sizeof par, "%.3f", sum.gen.MeanParallelism());
  BBPROF_RETURN_IF_ERROR(w.WriteMeta(
      "maketrace_result generated=" + std::to_string(sum.gen.messages) +
      " written=" + std::to_string(sum.written) +
      " sniffer_drops=" + std::to_string(sum.sniffer_drops) +
      " random_drops=" + std::to_string(sum.random_drops) +
      " timeouts=" + std::to_string(sum.gen.timeouts) +
      " duplicates=" + std::to_string(sum.gen.duplicates) + " oneway_noise=" +
      std::to_string(sum.gen.oneway_noise) + " mean_node_parallelism=" + par));
  if (views) {
    BBPROF_RETURN_IF_ERROR(views->Close());
    sum.per_host_files = views->size();
  }
  BBPROF_RETURN_IF_ERROR(w.Close());
  return sum;
}

std::string FormatSummary(const Config& config, const RunSummary& s) {
  std::string out;
  char line[256];
  const double secs = static_cast<double>(s.gen.last_ns - s.gen.first_ns) / 1e9;
  std::snprintf(line, sizeof line,
                "maketrace: %" PRIu64
                " messages generated over %.3f s, %" PRIu64 " written\n",
                s.gen.messages, secs, s.written);
  out += line;
  for (size_t i = 0; i < config.tracelets.size(); ++i) {
    std::snprintf(line, sizeof line, "  tracelet %s: %" PRIu64 " instances\n",
                  config.tracelets[i].name.c_str(),
                  s.gen.instances_per_tracelet[i]);
    out += line;
  }
  std::snprintf(line, sizeof line,
                "  mean per-node parallelism %.3f, at most %" PRIu64
                " instances in flight\n",
                s.gen.MeanParallelism(), s.gen.max_in_flight);
  out += line;
  const double gen = static_cast<double>(std::max<uint64_t>(s.gen.messages, 1));
  std::snprintf(
      line, sizeof line,
      "  dropped: %" PRIu64 " by the sniffer (%.3f%%), %" PRIu64
      " at random (%.3f%%)\n",
      s.sniffer_drops, 100.0 * static_cast<double>(s.sniffer_drops) / gen,
      s.random_drops, 100.0 * static_cast<double>(s.random_drops) / gen);
  out += line;
  if (s.gen.timeouts + s.gen.duplicates + s.gen.oneway_noise > 0) {
    std::snprintf(line, sizeof line,
                  "  noise: %" PRIu64 " returns withheld, %" PRIu64
                  " duplicates, %" PRIu64 " one-way messages\n",
                  s.gen.timeouts, s.gen.duplicates, s.gen.oneway_noise);
    out += line;
  }
  if (s.per_host_files > 0) {
    std::snprintf(line, sizeof line, "  %" PRIu64 " per-host views written\n",
                  s.per_host_files);
    out += line;
  }
  return out;
}

}  // namespace bbprof::maketrace
