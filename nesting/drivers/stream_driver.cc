// The stream driver (stream_driver.h): the trace read once, cut into
// overlapping segments, each segment nested by the in-memory passes
// (drivers.h) and its owned requests' patterns added up in order.
#include "nesting/drivers/stream_driver.h"

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <deque>
#include <limits>
#include <map>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "base/progress.h"
#include "nesting/drivers/drivers.h"
#include "nesting/skew/skew.h"
#include "nesting/skew/skew_estimation.h"
#include "nesting/steps/pattern_table.h"
#include "trace/binary/binary_format.h"
#include "trace/byte_stream.h"
#include "trace/pending_calls.h"

namespace bbprof::nesting {

namespace {

using trace::TimeNs;

constexpr TimeNs kMinTime = std::numeric_limits<TimeNs>::min();
constexpr TimeNs kMaxTime = std::numeric_limits<TimeNs>::max();

// A record kept by a segment: its ids' text (callid, pathid and op, one
// after the other) in the chunk's `text`, after the previous record's. A
// chunk is read in order (SegmentReader), so where each record's text
// starts is counted, not stored: 48 bytes a record, not 56.
struct StoredRecord {
  TimeNs ts;
  trace::NodeId sender, receiver;
  uint64_t callid_number, pathid_number;
  uint32_t callid_len, pathid_len, op_len;
  trace::Kind kind;
  bool callid_is_number, pathid_is_number;
};
static_assert(sizeof(StoredRecord) == 48, "a segment holds millions");

// What a whole read counts on the way (StreamDriver::Read) and a segment
// read by seeking counts of the part of the trace it owns, for rank 0 to add
// up in segment order.
struct SeekCounts {
  uint64_t free_messages = 0, call_ret_messages = 0;
  std::vector<std::string> meta;  // at most kMaxInputMeta, as InputStats
};

// Records in chunks, so that a segment's reader frees what it has read.
struct Chunk {
  static constexpr size_t kRecords = 65536;
  std::vector<StoredRecord> records;
  std::string text;
};

struct Segment {
  uint64_t index = 0;
  // The root calls it owns: called in [own_from, own_until).
  TimeNs own_from = kMinTime, own_until = kMaxTime;
  bool owns_any = false;  // its first own message was read
  std::deque<Chunk> chunks;
  uint64_t records = 0;
  // Its records up to the end of its overlap (the calls carried into it
  // included), once the read got there; the rest is its tail (SegmentTail).
  // The trace's last segment has no tail: it reads to the end.
  uint64_t base = 0;
  bool has_tail = false;
  uint64_t carried = 0;  // calls carried in from before its first message
  // Read by seeking only (StreamDriver::ReadSegment): what a whole read
  // counts on the way, for the messages this segment owns, and the meta
  // lines from just before its first own message to just before the next
  // segment's (the last segment: to the end of the file).
  SeekCounts counts;
  // Read by seeking: the range reader's node table (every node of the
  // trace's index, numbered as in the file).
  std::shared_ptr<trace::NodeTable> nodes;

  void Add(const trace::Record& rec) {
    if (chunks.empty() || chunks.back().records.size() == Chunk::kRecords) {
      chunks.emplace_back();
      chunks.back().records.reserve(Chunk::kRecords);
    }
    Chunk& c = chunks.back();
    StoredRecord s;
    s.ts = rec.ts_ns;
    s.sender = rec.sender;
    s.receiver = rec.receiver;
    s.kind = rec.kind;
    s.callid_is_number = rec.callid_is_number;
    s.pathid_is_number = rec.pathid_is_number;
    s.callid_number = rec.callid_number;
    s.pathid_number = rec.pathid_number;
    s.callid_len = static_cast<uint32_t>(rec.callid.size());
    s.pathid_len = static_cast<uint32_t>(rec.pathid.size());
    s.op_len = static_cast<uint32_t>(rec.op.size());
    // Numeric ids (a binary trace's) leave no text: no append at all for
    // them, since this runs for every message of a streamed trace.
    if (s.callid_len + s.pathid_len + s.op_len != 0) {
      c.text.append(rec.callid).append(rec.pathid).append(rec.op);
    }
    c.records.push_back(s);
    ++records;
  }
};

// The calls still open where a segment starts, to be carried into it: a
// request that began before the segment's first message and runs on
// through it keeps its root call as a candidate parent there, so its later
// calls are neither taken for another request's children nor for roots of
// their own. A fresh tracker is fed the `reach` messages before each
// segment's first, so that a process that seeks to a segment carries the
// same calls as a whole read; it pairs them as CallPairer does
// (trace::PendingCallKey, first in first out per key, a return up to twice
// the skew window before its call) and hands over the calls left open,
// oldest first. A call made within that horizon of the first message fed
// is not tracked: its return may have come before it, stamped by a clock
// behind, and before the messages fed, so it would look open for good and
// be carried from the far end of the reach, seconds older than the rest
// of the segment, and bend the segment's clock estimate (docs/nesting.md,
// "The stream driver").
class OpenCalls {
 public:
  explicit OpenCalls(const Params& params)
      : limit_(params.max_pending_calls),
        w_(2 * (params.skew_auto ? kAutoSkewCap : params.skew_window)) {
    Reset();
  }

  void Add(const trace::Record& rec) {
    if (fresh_) {
      first_ts_ = rec.ts_ns;
      fresh_ = false;
    }
    if (rec.kind == trace::Kind::kMessage) return;
    if (rec.kind == trace::Kind::kCall) {
      if (w_ > 0 && rec.ts_ns - first_ts_ < w_) return;  // see above
      key_.Set(rec.sender, rec.receiver, rec);
      if (w_ > 0 && early_->size() > 0) {
        Expire(rec.ts_ns);
        TimeNs ret;
        if (early_->Take(key_, &ret)) return;  // it returned already
      }
      uint32_t i;
      if (free_.empty()) {
        i = static_cast<uint32_t>(calls_.size());
        calls_.emplace_back();
      } else {
        i = free_.back();
        free_.pop_back();
      }
      Call& c = calls_[i];
      c.rec = rec;
      c.text.clear();
      if (!rec.callid.empty() || !rec.pathid.empty() || !rec.op.empty()) {
        c.text.append(rec.callid).append(rec.pathid).append(rec.op);
      }
      uint32_t evicted;
      if (open_->Add(key_, i, &evicted)) free_.push_back(evicted);
      return;
    }
    key_.Set(rec.receiver, rec.sender, rec);
    uint32_t i;
    if (open_->Take(key_, &i)) {
      free_.push_back(i);
    } else if (w_ > 0) {
      Expire(rec.ts_ns);
      TimeNs dropped;
      early_->Add(key_, rec.ts_ns, &dropped);
    }
  }

  // The open calls, oldest first, into `s`; the tracker starts afresh.
  // Returns how many.
  uint64_t CarryInto(Segment* s) {
    uint64_t n = 0;
    open_->ForEach([&](uint32_t i) {
      Call& c = calls_[i];
      trace::Record rec = c.rec;
      const char* t = c.text.data();
      rec.callid = {t, c.rec.callid.size()};
      rec.pathid = {t + rec.callid.size(), c.rec.pathid.size()};
      rec.op = {t + rec.callid.size() + rec.pathid.size(), c.rec.op.size()};
      s->Add(rec);
      ++n;
    });
    Reset();
    return n;
  }

 private:
  struct Call {
    trace::Record rec;  // its views are into `text` only once carried
    std::string text;   // callid, pathid and op
  };
  void Reset() {
    open_ = std::make_unique<trace::PendingCalls<uint32_t>>(limit_);
    early_ = std::make_unique<trace::PendingCalls<TimeNs>>(limit_);
    calls_.clear();
    free_.clear();
    fresh_ = true;
  }
  void Expire(TimeNs now) {
    TimeNs oldest;
    while (early_->Oldest(&oldest) && oldest < now - w_) early_->PopOldest();
  }

  const uint64_t limit_;
  const TimeNs w_;
  std::unique_ptr<trace::PendingCalls<uint32_t>> open_;  // into calls_
  std::unique_ptr<trace::PendingCalls<TimeNs>> early_;
  std::vector<Call> calls_;
  std::vector<uint32_t> free_;
  trace::PendingCallKey key_;
  bool fresh_ = true;  // nothing fed since Reset
  TimeNs first_ts_ = 0;
};

// A segment's records as a trace, each chunk freed once read past. Names
// are a copy of the trace's node table as it stood when the segment was
// complete (the same ids), so that segments nested on other threads never
// read the table the main reader is still adding to.
class SegmentReader : public trace::TraceReader {
 public:
  SegmentReader(const std::string& path, std::shared_ptr<trace::NodeTable> nodes,
                std::vector<std::string> meta, std::deque<Chunk> chunks,
                uint64_t records)
      : TraceReader(path, std::move(nodes)),
        chunks_(std::move(chunks)),
        records_(records) {
    meta_ = std::move(meta);
  }
  uint64_t raw_bytes_read() const override { return 0; }
  uint64_t records_expected() const override { return records_; }

 protected:
  bool Advance(trace::Record& rec) override {
    while (!chunks_.empty() && next_ == chunks_.front().records.size()) {
      chunks_.pop_front();
      next_ = 0;
      text_at_ = 0;
    }
    if (chunks_.empty()) return false;
    const Chunk& c = chunks_.front();
    const StoredRecord& s = c.records[next_++];
    rec.ts_ns = s.ts;
    rec.sender = s.sender;
    rec.receiver = s.receiver;
    rec.kind = s.kind;
    rec.callid_is_number = s.callid_is_number;
    rec.pathid_is_number = s.pathid_is_number;
    rec.callid_number = s.callid_number;
    rec.pathid_number = s.pathid_number;
    const char* t = c.text.data() + text_at_;
    text_at_ += size_t{s.callid_len} + s.pathid_len + s.op_len;
    rec.callid = {t, s.callid_len};
    rec.pathid = {t + s.callid_len, s.pathid_len};
    rec.op = {t + s.callid_len + s.pathid_len, s.op_len};
    return true;
  }

 private:
  std::deque<Chunk> chunks_;
  size_t next_ = 0;
  size_t text_at_ = 0;  // where the next record's text starts in its chunk
  uint64_t records_ = 0;
};

// What a nested segment hands to the merge.
struct SegmentResult {
  Status status = Status::Ok();
  std::vector<Pattern> patterns;
  NestingResult result;  // parameters, skew, clocks; input counts below
  uint64_t pairs = 0, unmatched_calls = 0;  // of the calls it owns
  uint64_t tail_records = 0;  // nested past its overlap
  uint64_t carried = 0;       // calls carried in from before its start
  SeekCounts counts;
};

// A segment's result as bytes (MessagePack: doubles stay exact), for the
// MPI driver to move between processes.
using nlohmann::json;

json ToJson(const LogHistogram& h) {
  LogHistogram::State st = h.state();
  json bins = json::array();
  for (const auto& [bin, n] : st.bins) bins.push_back({bin, n});
  return {{"bins", bins}, {"n", st.count}, {"sum", st.sum_ns},
          {"min", st.min}, {"max", st.max}};
}
LogHistogram HistogramFrom(const json& j) {
  LogHistogram::State st;
  for (const json& b : j.at("bins")) {
    st.bins[b.at(0).get<int>()] = b.at(1).get<uint64_t>();
  }
  st.count = j.at("n");
  st.sum_ns = j.at("sum");
  st.min = j.at("min");
  st.max = j.at("max");
  return LogHistogram::FromState(std::move(st));
}

json ToJson(const PatternNode& n) {
  json kids = json::array();
  for (const PatternNode& c : n.children) kids.push_back(ToJson(c));
  return {{"node", n.node},         {"op", n.op},
          {"mixed", n.op_mixed},    {"latency", ToJson(n.latency)},
          {"delay", ToJson(n.call_delay)}, {"own", ToJson(n.own_time)},
          {"children", kids}};
}
PatternNode NodeFrom(const json& j) {
  PatternNode n;
  n.node = j.at("node");
  n.op = j.at("op");
  n.op_mixed = j.at("mixed");
  n.latency = HistogramFrom(j.at("latency"));
  n.call_delay = HistogramFrom(j.at("delay"));
  n.own_time = HistogramFrom(j.at("own"));
  for (const json& c : j.at("children")) n.children.push_back(NodeFrom(c));
  return n;
}

json ToJson(const ExampleCall& e) {
  json kids = json::array();
  for (const ExampleCall& c : e.children) kids.push_back(ToJson(c));
  return {{"node", e.node},       {"caller", e.caller},
          {"op", e.op},           {"start", e.start_ns},
          {"latency", e.latency_ns}, {"children", kids}};
}
ExampleCall ExampleCallFrom(const json& j) {
  ExampleCall e;
  e.node = j.at("node");
  e.caller = j.at("caller");
  e.op = j.at("op");
  e.start_ns = j.at("start");
  e.latency_ns = j.at("latency");
  for (const json& c : j.at("children")) {
    e.children.push_back(ExampleCallFrom(c));
  }
  return e;
}

json ToJson(const Pattern& p) {
  return {{"shape", p.shape},
          {"caller", p.caller},
          {"root", ToJson(p.root)},
          {"count", p.count},
          {"total_ns", p.total_latency_ns},
          {"median", {p.median.at_ns, ToJson(p.median.tree)}},
          {"slowest", {p.slowest.at_ns, ToJson(p.slowest.tree)}},
          {"timeline",
           {p.timeline.bucket_ns, p.timeline.start_ns, p.timeline.counts,
            p.timeline.latency_sum_ns}}};
}
Pattern PatternFrom(const json& j) {
  Pattern p;
  p.shape = j.at("shape");
  p.caller = j.at("caller");
  p.root = NodeFrom(j.at("root"));
  p.count = j.at("count");
  p.total_latency_ns = j.at("total_ns");
  p.median = {j.at("median").at(0), ExampleCallFrom(j.at("median").at(1))};
  p.slowest = {j.at("slowest").at(0), ExampleCallFrom(j.at("slowest").at(1))};
  const json& t = j.at("timeline");
  p.timeline.bucket_ns = t.at(0);
  p.timeline.start_ns = t.at(1);
  p.timeline.counts = t.at(2).get<std::vector<uint64_t>>();
  p.timeline.latency_sum_ns = t.at(3).get<std::vector<TimeNs>>();
  return p;
}

std::string Serialize(const SegmentResult& r) {
  json j;
  if (!r.status.ok()) {
    j["error"] = r.status.message();
  } else {
    json pats = json::array();
    for (const Pattern& p : r.patterns) pats.push_back(ToJson(p));
    const InputStats& in = r.result.input;
    json skew = json::array();
    for (const EdgeSkew& e : r.result.skew) {
      skew.push_back({e.caller, e.callee, e.start_window_s, e.end_window_s,
                      e.children, e.missed});
    }
    json clocks = json::array();
    for (const NodeClockOffset& o : r.result.clock_offsets) {
      clocks.push_back({o.node, o.offset_s, o.drift_ppm, o.reference});
    }
    j = {{"patterns", pats},
         {"pairs", r.pairs},
         {"unmatched_calls", r.unmatched_calls},
         {"evicted", in.pending_calls_evicted},
         {"unfinished", in.unfinished_roots},
         {"parallelism", in.mean_parallelism},
         {"scoreboards", in.scoreboards},
         {"skew_window", r.result.params.skew_window},
         {"skew", skew},
         {"clocks", clocks},
         {"clocks_at", r.result.clocks_at},
         {"tail", r.tail_records},
         {"carried", r.carried},
         {"free", r.counts.free_messages},
         {"call_ret", r.counts.call_ret_messages},
         {"meta", r.counts.meta}};
  }
  std::vector<uint8_t> bytes = json::to_msgpack(j);
  return std::string(bytes.begin(), bytes.end());
}

SegmentResult Deserialize(const std::string& bytes) {
  SegmentResult r;
  json j = json::from_msgpack(bytes, /*strict=*/true, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object()) {
    r.status = Status::Error("a segment's result came back unreadable");
    return r;
  }
  if (j.contains("error")) {
    r.status = Status::Error(j["error"].get<std::string>());
    return r;
  }
  try {
    for (const json& p : j.at("patterns")) r.patterns.push_back(PatternFrom(p));
    r.pairs = j.at("pairs");
    r.unmatched_calls = j.at("unmatched_calls");
    InputStats& in = r.result.input;
    in.pending_calls_evicted = j.at("evicted");
    in.unfinished_roots = j.at("unfinished");
    in.mean_parallelism = j.at("parallelism");
    in.scoreboards = j.at("scoreboards");
    r.result.params.skew_window = j.at("skew_window");
    for (const json& e : j.at("skew")) {
      r.result.skew.push_back({e.at(0), e.at(1), e.at(2), e.at(3), e.at(4),
                               e.at(5)});
    }
    for (const json& o : j.at("clocks")) {
      r.result.clock_offsets.push_back({o.at(0), o.at(1), o.at(2), o.at(3)});
    }
    r.result.clocks_at = j.at("clocks_at");
    r.tail_records = j.at("tail");
    r.carried = j.at("carried");
    r.counts.free_messages = j.at("free");
    r.counts.call_ret_messages = j.at("call_ret");
    r.counts.meta = j.at("meta").get<std::vector<std::string>>();
  } catch (const json::exception& e) {
    r.status = Status::Error(std::string("a segment's result came back "
                                         "malformed: ") + e.what());
  }
  return r;
}

class StreamDriver {
 public:
  StreamDriver(trace::TraceReader& reader, const Params& params,
               const StreamOptions& options, StreamReport* report)
      : reader_(reader),
        params_(params),
        segment_(std::max<uint64_t>(options.segment_messages, 2)),
        overlap_(options.overlap_messages != 0
                     ? std::min(options.overlap_messages, segment_ - 1)
                     : std::max<uint64_t>(segment_ / 32, 1)),
        reach_(std::min(options.reach_messages != 0 ? options.reach_messages
                                                    : 9 * overlap_,
                        segment_ > 2 * overlap_ ? segment_ - 2 * overlap_ - 1
                                                : 0)),
        report_(report),
        rank_(static_cast<uint64_t>(std::max(options.rank, 0))),
        ranks_(static_cast<uint64_t>(std::max(options.ranks, 1))),
        gather_(options.gather),
        seek_(options.seek),
        seek_options_(options.seek_options),
        requests_(options.requests),
        merger_(params.group_by_op) {}

  Result<NestingResult> Run() {
    // The reader (and a checksum, and other segments) run beside the
    // passes, so the process's CPU time is not theirs (`nest --timings`).
    if (params_.timings != nullptr) params_.timings->SharedProcess();
    const int workers = std::max(1, params_.threads);
    if (workers > 1) {
      for (int i = 0; i < workers; ++i) pool_.emplace_back([this] { Work(); });
    }
    Status status = seek_ && ranks_ > 1 ? ReadSeeking() : Read();
    if (workers > 1) {
      {
        std::unique_lock lock(mu_);
        closing_ = true;
      }
      cv_.notify_all();
      for (std::thread& t : pool_) t.join();
    }
    if (ranks_ > 1) return GatherAndFinish(status);
    BBPROF_RETURN_IF_ERROR(status);
    if (single_) return std::move(*single_);
    BBPROF_RETURN_IF_ERROR(MergeReady(/*all=*/true));
    return Finish();
  }

 private:
  // Under several ranks: every rank's segments to rank 0, which adds them
  // up in segment order. Every rank calls the gather once, failed or not
  // (it is a collective), and a failure travels as a part of its own.
  Result<NestingResult> GatherAndFinish(const Status& status) {
    constexpr uint64_t kFailed = std::numeric_limits<uint64_t>::max();
    StreamOptions::Parts mine;
    if (!status.ok()) {
      SegmentResult failed;
      failed.status = status;
      mine.emplace_back(kFailed, Serialize(failed));
    } else {
      for (const auto& [k, r] : results_) mine.emplace_back(k, Serialize(r));
    }
    if (!gather_) return Status::Error("nest: several ranks and no gather");
    Result<StreamOptions::Parts> all = gather_(mine);
    BBPROF_RETURN_IF_ERROR(status);
    if (!all.ok()) return all.status();
    if (rank_ != 0) return NestingResult{};
    for (auto& [k, bytes] : *all) {
      if (k != kFailed && k % ranks_ == rank_) continue;  // its own: kept
      SegmentResult r = Deserialize(bytes);
      BBPROF_RETURN_IF_ERROR(r.status);
      results_[k] = std::move(r);
    }
    if (single_) return std::move(*single_);
    BBPROF_RETURN_IF_ERROR(MergeReady(/*all=*/true));
    return Finish();
  }

  // (One process, the usual case, owns every segment without dividing.)
  bool Mine(uint64_t segment) const {
    return ranks_ == 1 || segment % ranks_ == rank_;
  }

  Status Read() {
    Progress progress("nest: reading", trace::FileSizeOrZero(reader_.path()),
                      false);
    std::vector<std::unique_ptr<Segment>> open;
    open.push_back(std::make_unique<Segment>());
    open.back()->owns_any = true;
    OpenCalls carry(params_);
    uint64_t n = 0;
    // n = q * segment_ + pos, kept by counting: the tests below divided n
    // by the segment size (a 64-bit division, tens of cycles) five times
    // or more per message.
    uint64_t q = 0, pos = 0;
    trace::Record rec;
    while (reader_.Next(rec)) {
      progress.UpdateLazily([&] { return reader_.raw_bytes_read(); });
      if (n == 0) first_ts_ = rec.ts_ns;
      last_ts_ = rec.ts_ns;
      if (rec.kind == trace::Kind::kMessage) {
        ++free_messages_;
      } else {
        ++call_ret_messages_;
      }
      // Segment k reads messages [kS - V, (k+1)S + V) and a tail of R more
      // (reach_), owns the root calls made from the time of message kS to
      // that of (k+1)S, and is given the calls made in the R messages
      // before kS - V that are still open there.
      if (pos == segment_ - overlap_) {
        open.push_back(std::make_unique<Segment>());
        open.back()->index = q + 1;
        if (reach_ > 0 && Mine(open.back()->index)) {
          open.back()->carried = carry.CarryInto(open.back().get());
        }
      } else if (reach_ > 0) {
        // (n + V) % S and (n + V) / S (V < S).
        uint64_t ahead_pos = pos + overlap_, ahead_q = q;
        if (ahead_pos >= segment_) {
          ahead_pos -= segment_;
          ++ahead_q;
        }
        if (ahead_pos >= segment_ - reach_ && Mine(ahead_q + 1)) carry.Add(rec);
      }
      if (pos == 0 && n > 0) {
        for (auto& s : open) {
          if (s->index == q - 1) s->own_until = rec.ts_ns;
          if (s->index == q) {
            s->own_from = rec.ts_ns;
            s->owns_any = true;
          }
        }
      }
      for (auto& s : open) {
        if (Mine(s->index)) s->Add(rec);
      }
      ++n;
      if (++pos == segment_) {
        pos = 0;
        ++q;
      }
      NoteHeld(open);
      if (pos == overlap_ && n > segment_) {
        // The segment before the newest has read its overlap; the rest of
        // what it holds is its tail.
        open.front()->base = open.front()->records;
        open.front()->has_tail = true;
      }
      if (pos == overlap_ + reach_ && n > segment_) {
        // ... and now its tail: it is complete.
        BBPROF_RETURN_IF_ERROR(Dispatch(std::move(open.front())));
        open.erase(open.begin());
      }
    }
    progress.Finish();
    report_->messages_read = n;
    if (!reader_.status().ok()) return reader_.status();
    messages_ = n;
    // A segment that the trace ended before its own part began owns
    // nothing: its messages are all in the segment before.
    std::erase_if(open, [](const auto& s) { return !s->owns_any; });
    if (segments_ == 0 && open.size() == 1) {
      return rank_ == 0 ? RunSingle(std::move(open[0])) : Status::Ok();
    }
    for (auto& s : open) BBPROF_RETURN_IF_ERROR(Dispatch(std::move(s)));
    return Status::Ok();
  }

  // Read() by seeking, under several ranks (StreamOptions::seek): each rank
  // decodes only the blocks that hold its own segments' messages. The
  // segments are Read()'s, to the message: segment k holds messages
  // [kS - V, (k+1)S + V) and owns the root calls made from the time of
  // message kS to that of message (k+1)S; the trace's first segment owns
  // from the start and its last to the end. What Read() counts on the way
  // each segment counts for the part it owns (SeekCounts), and rank 0 adds
  // those up in segment order; rank 0 also reads the trace's first and
  // last times and the whole file's CRC-32, which names the input in the
  // result. A trace of one segment is read whole by rank 0 alone.
  Status ReadSeeking() {
    // The index is read and checked once, here; every segment's range
    // reader is opened from it.
    Result<std::unique_ptr<const trace::BinaryTraceIndex>> opened =
        trace::OpenBinaryIndex(reader_.path());
    if (!opened.ok()) {
      report_->whole_read_why = opened.status().message();
      return Read();
    }
    report_->seeked = true;
    const trace::BinaryTraceIndex& index = **opened;
    const std::vector<trace::BinaryBlockInfo>& blocks = index.blocks();
    // before[b]: the messages in the blocks before block b.
    std::vector<uint64_t> before(blocks.size() + 1, 0);
    for (size_t b = 0; b < blocks.size(); ++b) {
      before[b + 1] = before[b] + blocks[b].messages;
    }
    const uint64_t n = before.back();
    const uint64_t count = std::max<uint64_t>(1, (n + segment_ - 1) / segment_);
    if (count == 1) return rank_ == 0 ? Read() : Status::Ok();
    seeking_ = true;
    messages_ = n;
    std::optional<std::thread> checksum;
    Status checksum_status = Status::Ok();
    if (rank_ == 0) {
      checksum.emplace([&] { checksum_status = ReadWholeChecksum(); });
    }
    Status status = Status::Ok();
    uint64_t to_read = 0;
    for (uint64_t k = rank_; k < count; k += ranks_) {
      to_read += SegmentEnd(k, n, count) - SegmentStart(k);
    }
    Progress progress("nest: reading this rank's segments", to_read, false);
    uint64_t kept = 0;  // of to_read
    for (uint64_t k = 0; k < count && status.ok(); ++k) {
      auto s = std::make_unique<Segment>();
      s->index = k;
      s->owns_any = true;
      if (Mine(k)) {
        status = ReadSegment(index, before, count, s.get(), progress, &kept);
      }
      if (status.ok()) status = Dispatch(std::move(s));
    }
    progress.Finish();
    if (status.ok() && rank_ == 0) status = ReadLastTime(index);
    if (checksum) checksum->join();
    BBPROF_RETURN_IF_ERROR(status);
    return checksum_status;
  }

  // The messages segment k holds: [kS - V, (k+1)S + V + R), within the
  // trace (the last segment: to the end).
  uint64_t SegmentStart(uint64_t k) const {
    return k * segment_ > overlap_ ? k * segment_ - overlap_ : 0;
  }
  uint64_t SegmentEnd(uint64_t k, uint64_t n, uint64_t count) const {
    return k + 1 == count
               ? n
               : std::min(n, (k + 1) * segment_ + overlap_ + reach_);
  }

  // A table for a range reader: the whole trace's node limit, so that
  // names fold as in a whole read.
  std::shared_ptr<trace::NodeTable> RangeNodes() const {
    auto nodes = std::make_shared<trace::NodeTable>();
    nodes->SetLimit(reader_.nodes().limit());
    return nodes;
  }

  // Segment k, read from the blocks that hold its messages: from the
  // block of its first message (a meta line just before message kS is
  // after message kS - 1, so in that block or later) to the block of its
  // last, or for the last segment to the end of the file, for the meta
  // lines after the last message.
  Status ReadSegment(const trace::BinaryTraceIndex& index,
                     const std::vector<uint64_t>& before, uint64_t count,
                     Segment* s, Progress& progress, uint64_t* kept) {
    const uint64_t k = s->index, n = before.back();
    const uint64_t lo = SegmentStart(k), hi = SegmentEnd(k, n, count);
    // Before its first message, the R that its carried calls come from.
    const uint64_t from = k == 0 ? 0 : lo - std::min(lo, reach_);
    const uint64_t base_end = (k + 1) * segment_ + overlap_;
    const uint64_t own_lo = k * segment_;
    const uint64_t own_hi = std::min(n, (k + 1) * segment_);
    auto block_of = [&](uint64_t message) {
      return static_cast<uint64_t>(
          std::upper_bound(before.begin(), before.end(), message) -
          before.begin() - 1);
    };
    const uint64_t first = k == 0 ? 0 : block_of(from);
    const uint64_t end =
        k + 1 == count ? index.blocks().size() : block_of(hi - 1) + 1;
    s->nodes = RangeNodes();
    Result<std::unique_ptr<trace::TraceReader>> opened =
        trace::OpenBinaryBlockRange(index, first, end, s->nodes, seek_options_);
    if (!opened.ok()) return opened.status();
    trace::TraceReader& in = **opened;
    // A meta line between messages i - 1 and i is at position i (0: before
    // the first, n: after the last); segment k keeps those at positions
    // [kS, (k+1)S), the last segment also n. The reader reads one message
    // ahead only at open: meta() holds the lines before message i once
    // Next() has handed it out.
    size_t meta_seen = 0;
    auto take_meta = [&](uint64_t position) {
      const std::vector<std::string>& meta = in.meta();
      for (; meta_seen < meta.size(); ++meta_seen) {
        if (position < own_lo || (position >= own_hi && k + 1 < count)) {
          continue;
        }
        KeepInputMeta(meta[meta_seen], &s->counts.meta);
      }
    };
    uint64_t i = before[first];
    OpenCalls carry(params_);
    trace::Record rec;
    while (i < hi && in.Next(rec)) {
      take_meta(i);
      if (i >= lo) {
        if (i == lo && k > 0 && reach_ > 0) s->carried = carry.CarryInto(s);
        if (i == 0) first_ts_ = rec.ts_ns;
        if (i == own_lo && k > 0) s->own_from = rec.ts_ns;
        if (i == own_hi && k + 1 < count) s->own_until = rec.ts_ns;
        if (i >= own_lo && i < own_hi) {
          ++(rec.kind == trace::Kind::kMessage ? s->counts.free_messages
                                               : s->counts.call_ret_messages);
        }
        s->Add(rec);
        if (k + 1 < count && i + 1 == base_end) {
          s->base = s->records;
          s->has_tail = true;
        }
        progress.Update(++*kept);
        report_->most_messages_held = std::max<uint64_t>(
            report_->most_messages_held, held_busy_ + s->records);
      } else if (i >= from && k > 0 && reach_ > 0) {
        carry.Add(rec);
      }
      ++report_->messages_read;
      ++i;
    }
    // The reader checks every block's count against the index, so the
    // messages end where the index says; the last segment reads on to the
    // file's end, for the meta lines after the last message.
    if (k + 1 == count && i == n) in.Next(rec);
    if (!in.status().ok()) return in.status();
    if (k + 1 == count) take_meta(n);
    seek_nodes_ = s->nodes;
    return Status::Ok();
  }

  // The time of the trace's last message, from the last block that holds
  // messages.
  Status ReadLastTime(const trace::BinaryTraceIndex& index) {
    const std::vector<trace::BinaryBlockInfo>& blocks = index.blocks();
    uint64_t b = blocks.size();
    while (b > 0 && blocks[b - 1].messages == 0) --b;
    if (b == 0) return Status::Ok();
    Result<std::unique_ptr<trace::TraceReader>> opened =
        trace::OpenBinaryBlockRange(index, b - 1, b, RangeNodes(),
                                    seek_options_);
    if (!opened.ok()) return opened.status();
    trace::Record rec;
    while ((*opened)->Next(rec)) last_ts_ = rec.ts_ns;
    return (*opened)->status();
  }

  // The whole file's size and CRC-32 (its raw bytes, as a whole read's
  // InputStream keeps them): a read at disk speed, with no decoding.
  Status ReadWholeChecksum() {
    Result<std::unique_ptr<trace::InputStream>> in =
        trace::OpenInputStream(reader_.path());
    if (!in.ok()) return in.status();
    std::vector<char> buf(size_t{1} << 20);
    for (;;) {
      Result<size_t> got = (*in)->Read(buf.data(), buf.size());
      if (!got.ok()) return got.status();
      if (*got == 0) break;
    }
    whole_bytes_ = (*in)->raw_bytes_read();
    whole_crc32_ = (*in)->raw_crc32();
    return Status::Ok();
  }

  void NoteHeld(const std::vector<std::unique_ptr<Segment>>& open) {
    uint64_t held = held_busy_;
    for (const auto& s : open) held += s->records;
    report_->most_messages_held = std::max(report_->most_messages_held, held);
  }

  std::unique_ptr<SegmentReader> ReaderFor(Segment& s) {
    std::shared_ptr<trace::NodeTable> nodes = s.nodes;
    if (nodes == nullptr) {
      nodes = std::make_shared<trace::NodeTable>();
      for (size_t i = 0; i < reader_.nodes().size(); ++i) {
        nodes->Intern(reader_.nodes().Name(static_cast<trace::NodeId>(i)));
      }
    }
    return std::make_unique<SegmentReader>(reader_.path(), std::move(nodes),
                                           reader_.meta(), std::move(s.chunks), s.records);
  }

  // The whole trace in one segment: the in-memory driver's passes, all of
  // them, give its result exactly.
  Status RunSingle(std::unique_ptr<Segment> s) {
    ++report_->segments;
    auto reader = ReaderFor(*s);
    AssignedSegment a;
    CallLabels labels;
    BBPROF_RETURN_IF_ERROR(
        AssignSegment(*reader, params_, &a, requests_ ? &labels : nullptr));
    NestingResult r = std::move(a.result);
    std::vector<uint32_t> root_pattern;
    PassClock clock(params_.timings);
    BBPROF_RETURN_IF_ERROR(FindCallPaths(a.table, params_.group_by_op,
                                         params_.threads, &r.input,
                                         &r.patterns, &root_pattern));
    clock.Lap("pattern table (step 5)");
    if (requests_ != nullptr) {
      BBPROF_RETURN_IF_ERROR(SpoolRequests(
          0, a.table, root_pattern, std::move(labels), r.patterns, requests_));
    }
    TakeReaderStats(reader_, &r.input);
    SortPatterns(r.patterns, r.sort);
    single_ = std::move(r);
    return Status::Ok();
  }

  // A complete segment to be nested: here, or by a worker. The workers'
  // segments in flight are at most their number, so memory stays bounded.
  Status Dispatch(std::unique_ptr<Segment> s) {
    ++report_->segments;
    ++segments_;
    if (!Mine(s->index)) return Status::Ok();  // another rank nests it
    const uint64_t index = s->index;
    const uint64_t records = s->records;
    Params params = params_;
    params.threads = 1;
    auto job = std::make_shared<Job>();
    job->index = index;
    job->records = records;
    job->own_from = s->own_from;
    job->own_until = s->own_until;
    job->has_tail = s->has_tail;
    job->base = s->base;
    job->carried = s->carried;
    job->reader = ReaderFor(*s);
    job->params = params;
    job->counts = std::move(s->counts);
    job->requests = requests_;
    s.reset();
    if (pool_.empty()) {
      held_busy_ = records;
      results_[index] = Nest(*job, &spare_table_);
      held_busy_ = 0;
      return ranks_ > 1 ? Status::Ok() : MergeReady(false);
    }
    {
      std::unique_lock lock(mu_);
      cv_.wait(lock, [&] { return in_flight_ < pool_.size(); });
      ++in_flight_;
      held_busy_ += records;
      queue_.push_back(std::move(job));
    }
    cv_.notify_all();
    return ranks_ > 1 ? Status::Ok() : MergeReady(false);
  }

  struct Job {
    uint64_t index = 0, records = 0;
    TimeNs own_from = kMinTime, own_until = kMaxTime;
    bool has_tail = false;
    uint64_t base = 0, carried = 0;
    std::unique_ptr<SegmentReader> reader;
    Params params;
    SeekCounts counts;
    RequestSpool* requests = nullptr;
  };

  // A nested segment's requests (its roots with a pattern in
  // `root_pattern`) to the spool.
  static Status SpoolRequests(uint64_t k, const CallTable& table,
                              const std::vector<uint32_t>& root_pattern,
                              CallLabels&& labels,
                              const std::vector<Pattern>& patterns,
                              RequestSpool* spool) {
    DetailedResult d;
    d.labels = std::move(labels);
    FillCallDetails(table, root_pattern, &d);
    std::vector<std::string> shapes;
    shapes.reserve(patterns.size());
    for (const Pattern& p : patterns) shapes.push_back(p.shape);
    return spool->AddSegment(k, d, shapes);
  }

  // `spare`: the table of the segment nested before on this thread, whose
  // storage this one fills (AssignSegment recycles it) and then hands back.
  static SegmentResult Nest(Job& job, CallTable* spare) {
    AssignedSegment a;
    a.table = std::move(*spare);
    SegmentResult out = NestInto(job, &a);
    *spare = std::move(a.table);
    return out;
  }

  static SegmentResult NestInto(Job& job, AssignedSegment* assigned) {
    SegmentResult out;
    out.counts = std::move(job.counts);
    AssignedSegment& a = *assigned;
    CallLabels labels;
    const SegmentTail tail{job.base, job.own_from, job.own_until};
    out.status = AssignSegment(*job.reader, job.params, &a,
                               job.requests ? &labels : nullptr,
                               job.has_tail ? &tail : nullptr);
    job.reader.reset();
    if (!out.status.ok()) return out;
    out.tail_records = a.tail_records;
    out.carried = job.carried;
    out.result = std::move(a.result);
    for (const Pair& p : a.table.pairs) {
      if (p.call < job.own_from || p.call >= job.own_until) continue;
      if (p.ret >= 0 && !p.imputed) {
        ++out.pairs;
      } else {
        ++out.unmatched_calls;
      }
    }
    out.result.input.unfinished_roots = 0;
    std::vector<uint32_t> root_pattern;
    PassClock clock(job.params.timings);
    out.status =
        FindOwnedCallPaths(a.table, job.params.group_by_op, job.own_from,
                           job.own_until, &out.result.input, &out.patterns,
                           job.requests != nullptr ? &root_pattern : nullptr);
    clock.Lap("pattern table (step 5)");
    if (out.status.ok() && job.requests != nullptr) {
      out.status = SpoolRequests(job.index, a.table, root_pattern,
                                 std::move(labels), out.patterns, job.requests);
    }
    return out;
  }

  void Work() {
    CallTable spare;
    for (;;) {
      std::shared_ptr<Job> job;
      {
        std::unique_lock lock(mu_);
        cv_.wait(lock, [&] { return closing_ || !queue_.empty(); });
        if (queue_.empty()) return;
        job = std::move(queue_.front());
        queue_.pop_front();
      }
      SegmentResult r = Nest(*job, &spare);
      {
        std::unique_lock lock(mu_);
        results_[job->index] = std::move(r);
        --in_flight_;
        held_busy_ -= job->records;
      }
      cv_.notify_all();
    }
  }

  // Adds the nested segments to the result in segment order; with `all`,
  // waits for every one.
  Status MergeReady(bool all) {
    for (;;) {
      SegmentResult r;
      {
        std::unique_lock lock(mu_);
        if (all) {
          cv_.wait(lock, [&] {
            return results_.count(merged_) != 0 || merged_ == segments_;
          });
        }
        auto it = results_.find(merged_);
        if (it == results_.end()) return Status::Ok();
        r = std::move(it->second);
        results_.erase(it);
      }
      ++merged_;
      BBPROF_RETURN_IF_ERROR(r.status);
      Add(std::move(r));
    }
  }

  void Add(SegmentResult&& r) {
    merger_.Add(std::move(r.patterns));
    report_->tail_messages += r.tail_records;
    report_->calls_carried += r.carried;
    const InputStats& in = r.result.input;
    pairs_ += r.pairs;
    unmatched_calls_ += r.unmatched_calls;
    free_messages_ += r.counts.free_messages;
    call_ret_messages_ += r.counts.call_ret_messages;
    for (const std::string& m : r.counts.meta) KeepInputMeta(m, &meta_);
    evicted_ += in.pending_calls_evicted;
    unfinished_ += in.unfinished_roots;
    parallelism_sum_ += in.mean_parallelism * static_cast<double>(r.pairs);
    scoreboards_ = std::max(scoreboards_, in.scoreboards);
    if (!have_params_) {
      params_out_ = r.result.params;
      have_params_ = true;
    }
    params_out_.skew_window =
        std::max(params_out_.skew_window, r.result.params.skew_window);
    for (const EdgeSkew& e : r.result.skew) {
      EdgeSkew& m = skew_[{e.caller, e.callee}];
      m.caller = e.caller;
      m.callee = e.callee;
      m.start_window_s = std::max(m.start_window_s, e.start_window_s);
      m.end_window_s = std::max(m.end_window_s, e.end_window_s);
      m.children += e.children;
      m.missed += e.missed;
    }
    if (!r.result.clock_offsets.empty()) {
      clocks_.push_back({r.result.clock_offsets, r.result.clocks_at,
                         static_cast<double>(std::max<uint64_t>(r.pairs, 1))});
    }
  }

  Result<NestingResult> Finish() {
    NestingResult r;
    r.params = params_out_;
    r.params.threads = params_.threads;
    r.patterns = merger_.Finish();
    SortPatterns(r.patterns, r.sort);
    for (auto& [key, e] : skew_) r.skew.push_back(e);
    // Each segment solved its own clocks, relative to its own first node
    // and at its own middle: put on one reference, at the trace's middle.
    r.clocks_at = first_ts_ + (last_ts_ - first_ts_) / 2;
    r.clock_offsets = MergeRangeClocks(clocks_, r.clocks_at);
    InputStats& in = r.input;
    TakeReaderStats(reader_, &in);
    if (seeking_) {
      // The main reader read only the file's head.
      in.bytes = whole_bytes_;
      in.crc32 = whole_crc32_;
      in.has_crc32 = true;
      in.nodes = seek_nodes_->size();
      in.node_names_folded = seek_nodes_->folded();
      in.meta = std::move(meta_);
    }
    in.messages = messages_;
    in.free_messages = free_messages_;
    in.call_pairs = pairs_;
    in.unmatched_calls = unmatched_calls_;
    // Every CALL or RET is one end of a pair, an unmatched call or an
    // unmatched return; pairs and calls are counted where owned.
    const uint64_t ends = 2 * pairs_ + unmatched_calls_;
    in.unmatched_returns = call_ret_messages_ > ends ? call_ret_messages_ - ends : 0;
    in.pending_calls_evicted = evicted_;
    in.unfinished_roots = unfinished_;
    in.duration_s = trace::NsToSeconds(last_ts_ - first_ts_);
    in.mean_parallelism =
        pairs_ > 0 ? parallelism_sum_ / static_cast<double>(pairs_) : 0;
    in.scoreboards = scoreboards_;
    return r;
  }

  trace::TraceReader& reader_;
  Params params_;
  // reach_: StreamOptions::reach_messages, less than S - 2V, so that a
  // segment's tail ends before the segment after next begins, and the
  // carry's look-back before one segment's start does not reach back past
  // the previous one's.
  const uint64_t segment_, overlap_, reach_;
  StreamReport* report_;
  const uint64_t rank_, ranks_;
  std::function<Result<StreamOptions::Parts>(const StreamOptions::Parts&)>
      gather_;
  const bool seek_;
  const trace::ReaderOptions seek_options_;
  RequestSpool* const requests_;  // null: no --requests
  PatternMerger merger_;
  std::optional<NestingResult> single_;

  // Read by the main thread only.
  bool seeking_ = false;      // ReadSeeking() cut the segments
  uint64_t whole_bytes_ = 0;  // by ReadWholeChecksum()
  uint32_t whole_crc32_ = 0;
  std::shared_ptr<trace::NodeTable> seek_nodes_;
  std::vector<std::string> meta_;  // the segments' SeekCounts::meta, in order
  TimeNs first_ts_ = 0, last_ts_ = 0;
  uint64_t messages_ = 0, free_messages_ = 0, call_ret_messages_ = 0;
  uint64_t segments_ = 0, merged_ = 0;
  uint64_t pairs_ = 0, unmatched_calls_ = 0, evicted_ = 0, unfinished_ = 0;
  double parallelism_sum_ = 0;
  uint64_t scoreboards_ = 0;
  Params params_out_;
  bool have_params_ = false;
  std::map<std::pair<std::string, std::string>, EdgeSkew> skew_;
  std::vector<RangeClocks> clocks_;  // of the segments that corrected any

  // Shared with the workers, under mu_.
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::shared_ptr<Job>> queue_;
  std::map<uint64_t, SegmentResult> results_;
  size_t in_flight_ = 0;
  std::atomic<uint64_t> held_busy_ = 0;  // records of segments dispatched
  bool closing_ = false;
  std::vector<std::thread> pool_;
  CallTable spare_table_;  // for segments nested on this thread (Nest)
};

}  // namespace

Result<NestingResult> RunNestingStream(trace::TraceReader& reader,
                                       const Params& params,
                                       const StreamOptions& options,
                                       StreamReport* report) {
  StreamReport ignored;
  return StreamDriver(reader, params, options, report ? report : &ignored)
      .Run();
}

}  // namespace bbprof::nesting
