// The in-memory driver of the nesting algorithm (section 5.1, Figure 4):
// reads the whole trace into a call table once, then runs the passes over
// it in order. The passes (call_pairs.h, skew_estimation.h, candidates.h,
// scoreboards.h, parent_choice.h, timeline.h, pattern_table.h) take the
// table and the parameters, never the reader, so a driver that streams
// time windows or splits time among threads or ranks calls the same ones
// (docs/nesting.md, "Passes and their state").
#include <algorithm>
#include <condition_variable>
#include <deque>
#include <mutex>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "base/huge_pages.h"
#include "base/progress.h"
#include "nesting/bins.h"
#include "nesting/call_table.h"
#include "nesting/drivers/drivers.h"
#include "nesting/nesting.h"
#include "nesting/skew/skew_estimation.h"
#include "nesting/steps/call_pairs.h"
#include "nesting/steps/parent_choice.h"
#include "nesting/steps/pattern_table.h"
#include "trace/binary/binary_format.h"
#include "trace/byte_stream.h"

namespace bbprof::nesting {

namespace {

using trace::TimeNs;

class MemoryDriver {
 public:
  MemoryDriver(trace::TraceReader& reader, const Params& params,
               CallLabels* labels)
      : reader_(reader),
        params_(params),
        scale_(params.bin_base),
        labels_(labels) {}

  Result<NestingResult> Run() {
    NestingResult result;
    BBPROF_RETURN_IF_ERROR(Assign(&result));
    PassClock clock(params_.timings);
    BBPROF_RETURN_IF_ERROR(FindCallPaths(table_, params_.group_by_op,
                                         params_.threads, &stats_,
                                         &result.patterns, &root_pattern_));
    clock.Lap("pattern table (step 5)");
    result.input = stats_;
    return result;
  }

  // Steps 1-4 and the refinements: every call's parent, in the table, at
  // the times as stamped; the result's parameters, skew and clocks (its
  // input counts, stats(), are the caller's to take).
  Status Assign(NestingResult* result) {
    PassClock clock(params_.timings);
    BBPROF_RETURN_IF_ERROR(ReadPairs());
    clock.Lap("read and pair (step 1)");
    FoldExternalClients(params_, &table_);
    KeyCallees(params_, &table_);
    if (params_.impute_lost_returns) ImputeLostReturns(stats_, &table_);
    SortByReturn(&table_, params_.threads);
    clock.Lap("client folding, op keys, lost returns, return order");
    SkewState skew;
    if (params_.skew_auto) {
      EstimateSkew(table_, &skew, &params_);
      clock.Lap("skew estimate");
      // Windows mean some call misses every call that could have caused
      // it: skew, or an asynchronous server. Offsets tell the two apart.
      // No window does not mean no skew (many calls in flight hide the
      // misses), so the clocks are always bounded, once at least.
      CorrectClocks(scale_, &table_, &params_, &skew, &stats_);
      clock.Lap("clock correction");
    }
    AssignParents(params_, skew.windows, scale_, &table_, &stats_);
    clock = PassClock(params_.timings);  // AssignParents timed its own
    RestoreObservedTimes(&table_, &skew, params_.threads);
    clock.Lap("observed times restored");
    result->params = params_;
    result->skew = std::move(skew.skew);
    result->clock_offsets = std::move(skew.clock_offsets);
    result->clocks_at = skew.clock_total.t0;
    return Status::Ok();
  }

  CallTable& table() { return table_; }
  // A table to fill in place of a new one: its storage is kept
  // (CallTable::Recycle), its contents dropped.
  void reuse_table(CallTable&& t) {
    table_ = std::move(t);
    table_.Recycle();
  }
  void set_tail(const SegmentTail* tail) { tail_ = tail; }
  uint64_t tail_records() const { return tail_records_; }
  const InputStats& stats() const { return stats_; }
  void set_progress(bool on) { progress_ = on; }

  void FillDetails(DetailedResult* d) const {
    FillCallDetails(table_, root_pattern_, d);
    for (const auto& p : d->result.patterns) {
      d->pattern_signatures.push_back(p.signature);
    }
  }

 private:
  // Step 1 over the whole trace, and what the input was. With more than
  // one thread the reader runs on a thread of its own, a batch ahead of the
  // pairer (ReadAhead): the pairer sees the same records in the same order.
  Status ReadPairs() {
    CallPairer pairer(params_, reader_.path(), &table_, &stats_, labels_);
    // A call and its return are two records: a segment of n records has at
    // most about n / 2 pairs. Sized once, the table is never copied while
    // it grows, nor its pages faulted twice. A binary trace file says how
    // many messages it holds in its block index: sized from that, a whole
    // file's table is not copied either.
    uint64_t n = reader_.records_expected();
    if (n == 0) n = trace::BinaryMessagesHint(reader_.path());
    if (n > 0) {
      table_.pairs.reserve(n / 2 + 1);
      table_.ret_order.reserve(n / 2 + 1);
    }
    Progress progress("nest: reading",
                      progress_ ? trace::FileSizeOrZero(reader_.path()) : 0,
                      !progress_);
    if (tail_ != nullptr) {
      BBPROF_RETURN_IF_ERROR(ReadWithTail(&pairer));
    } else if (params_.threads > 1) {
      BBPROF_RETURN_IF_ERROR(ReadAhead(&pairer, &progress));
    } else {
      trace::Record rec;
      while (reader_.Next(rec)) {
        progress.UpdateLazily([&] { return reader_.raw_bytes_read(); });
        BBPROF_RETURN_IF_ERROR(pairer.Add(rec));
      }
    }
    progress.Finish();
    if (!reader_.status().ok()) return reader_.status();
    pairer.Finish();
    TakeReaderStats(reader_, &stats_);
    table_.names.reserve(reader_.nodes().size());
    for (size_t i = 0; i < reader_.nodes().size(); ++i) {
      table_.names.emplace_back(
          reader_.nodes().Name(static_cast<trace::NodeId>(i)));
    }
    if (params_.use_pathids && !pairer.any_pathid()) {
      return Status::Error(reader_.path() +
                           ": no CALL has a pathid; evaluation needs a trace "
                           "with ground truth (from maketrace, or capture "
                           "--truth-header)");
    }
    return Status::Ok();
  }

  // A stream segment's records (SegmentTail): its base, then its tail only
  // while a call it owns waits for a return that may still come.
  Status ReadWithTail(CallPairer* pairer) {
    trace::Record rec;
    for (uint64_t i = 0; i < tail_->base && reader_.Next(rec); ++i) {
      BBPROF_RETURN_IF_ERROR(pairer->Add(rec));
    }
    TailWait wait(*tail_, table_, *pairer);
    // Checked every few records: the waiting calls are few, but a trace of
    // lost returns could make them many.
    constexpr uint64_t kCheckEvery = 64;
    while (!wait.done() && reader_.Next(rec)) {
      BBPROF_RETURN_IF_ERROR(pairer->Add(rec));
      if (++tail_records_ % kCheckEvery == 0) {
        wait.Update(table_, pairer->last_ts());
      }
    }
    return Status::Ok();
  }

  // The owned calls open at a segment's base end that may still return
  // (SegmentTail): a call's wait ends with its return, or once it is
  // twice as old as the longest call into its callee returned so far in
  // the segment (by callee, not by edge: a client seen once has no history
  // of its own, its server has).
  class TailWait {
   public:
    TailWait(const SegmentTail& tail, const CallTable& table,
             const CallPairer& pairer) {
      const Pairs& pairs = table.pairs;
      pairer.ForEachOpen([&](uint32_t i) {
        if (pairs[i].call >= tail.own_from && pairs[i].call < tail.own_until) {
          waiting_.push_back(i);
        }
      });
      if (waiting_.empty()) return;
      for (const Pair& p : pairs) {
        if (p.ret >= 0) Note(p);
      }
      Update(table, pairer.last_ts());
    }
    bool done() const { return waiting_.empty(); }
    void Update(const CallTable& table, TimeNs now) {
      size_t keep = 0;
      for (const uint32_t i : waiting_) {
        const Pair& p = table.pairs[i];
        if (p.ret >= 0) {
          Note(p);
          continue;
        }
        const TimeNs longest =
            p.callee < longest_.size() ? longest_[p.callee] : -1;
        if (longest < 0 || now - p.call >= 2 * longest) continue;  // lost
        waiting_[keep++] = i;
      }
      waiting_.resize(keep);
    }

   private:
    void Note(const Pair& p) {
      if (p.callee >= longest_.size()) longest_.resize(p.callee + 1, -1);
      longest_[p.callee] = std::max(longest_[p.callee], p.ret - p.call);
    }
    std::vector<uint32_t> waiting_;
    std::vector<TimeNs> longest_;  // by callee; -1: none returned
  };

  // Records read ahead: a batch of them with their text (callid, pathid,
  // op) copied, since a reader's views last only until its next record.
  // The text is a vector, not a string: moving a vector keeps its elements
  // where they are (a short string's characters live inside the object and
  // move with it), so the reader points the views once the batch is full
  // and they stay good through the queue, and the pairer, the thread every
  // later pass waits for, does not point them.
  struct Batch {
    // Where each record's callid, pathid and op start in `text`.
    struct Views {
      size_t callid, pathid, op;
    };
    std::vector<trace::Record> records;
    std::vector<Views> at;
    std::vector<char> text;

    void Append(std::string_view s) {
      text.insert(text.end(), s.begin(), s.end());
    }
    void PointViews() {
      const char* base = text.data();
      for (size_t i = 0; i < records.size(); ++i) {
        trace::Record& r = records[i];
        r.callid = {base + at[i].callid, r.callid.size()};
        r.pathid = {base + at[i].pathid, r.pathid.size()};
        r.op = {base + at[i].op, r.op.size()};
      }
    }
  };
  static constexpr size_t kBatchRecords = 4096;
  // Eight batches (about 2 ms of pairing): a prefault step (one huge page)
  // is taken only while the reader is this far ahead, and the lead must be
  // long enough that the pairer never waits for a reader in its step.
  static constexpr size_t kBatchesAhead = 8;

  // The reader fills batches on a thread while this one pairs them.
  Status ReadAhead(CallPairer* pairer, Progress* progress) {
    std::mutex mu;
    std::condition_variable cv;
    std::deque<Batch> full;
    std::vector<Batch> free_batches;
    bool done = false, stop = false;
    // The pairs' room reserved from the trace's size (ReadPairs): faulted
    // in by the reader while it is ahead, so that the pairer, which every
    // other pass waits for, does not zero its pages itself (Prefaulter).
    // Taken here, before the pairer starts: the reader never reads the
    // vector itself. Every CALL makes one pair, so the pairs the whole
    // trace will make are expected from the share of CALLs read so far:
    // all the room on an RPC trace (half its records are CALLs), from the
    // start, and little of it on a trace of mostly free-form messages,
    // whose room was reserved for pairs that never come.
    Pairs& pairs = table_.pairs;
    const size_t room = pairs.capacity() - pairs.size();
    Prefaulter prefault(pairs.data() + pairs.size(), room * sizeof(Pair));
    uint64_t calls_read = 0, records_read = 0;
    std::thread reader([&] {
      for (;;) {
        Batch b;
        {
          std::unique_lock lock(mu);
          while (!stop && full.size() >= kBatchesAhead && prefault.pending()) {
            lock.unlock();
            prefault.Step();
            lock.lock();
          }
          cv.wait(lock, [&] { return stop || full.size() < kBatchesAhead; });
          if (stop) break;
          if (!free_batches.empty()) {
            b = std::move(free_batches.back());
            free_batches.pop_back();
          }
        }
        b.records.clear();
        b.at.clear();
        b.text.clear();
        // Never a null data(): the views point into it even when all of
        // them are empty (numeric callids, no ops).
        b.text.reserve(kBatchRecords);
        trace::Record rec;
        bool more = true;
        while (b.records.size() < kBatchRecords && (more = reader_.Next(rec))) {
          progress->UpdateLazily([&] { return reader_.raw_bytes_read(); });
          b.at.push_back(
              {b.text.size(), b.text.size() + rec.callid.size(),
               b.text.size() + rec.callid.size() + rec.pathid.size()});
          b.Append(rec.callid);
          b.Append(rec.pathid);
          b.Append(rec.op);
          b.records.push_back(rec);
          calls_read += rec.kind == trace::Kind::kCall;
        }
        b.PointViews();
        // (The room is a pair per two records of the trace.)
        records_read += b.records.size();
        if (records_read > 0) {
          const double share = static_cast<double>(calls_read) /
                               static_cast<double>(records_read);
          prefault.Expect(std::max<size_t>(
              calls_read, static_cast<size_t>(share * 2.0 * room)) *
                          sizeof(Pair));
        }
        std::unique_lock lock(mu);
        if (!b.records.empty()) full.push_back(std::move(b));
        if (!more) {
          done = true;
          cv.notify_all();
          break;
        }
        cv.notify_all();
      }
    });
    Status status = Status::Ok();
    for (;;) {
      Batch b;
      {
        std::unique_lock lock(mu);
        cv.wait(lock, [&] { return done || !full.empty(); });
        if (full.empty()) break;  // done, and nothing left
        b = std::move(full.front());
        full.pop_front();
        cv.notify_all();
      }
      for (const trace::Record& rec : b.records) {
        status = pairer->Add(rec);
        if (!status.ok()) break;
      }
      std::unique_lock lock(mu);
      if (!status.ok()) {
        stop = true;
        cv.notify_all();
        break;
      }
      free_batches.push_back(std::move(b));
    }
    reader.join();
    return status;
  }

  trace::TraceReader& reader_;
  Params params_;
  BinScale scale_;
  CallLabels* labels_;  // null unless asked for
  InputStats stats_;
  CallTable table_;
  std::vector<uint32_t> root_pattern_;
  bool progress_ = true;
  const SegmentTail* tail_ = nullptr;  // a stream segment's, or none
  uint64_t tail_records_ = 0;
};

Status CheckParams(const Params& params) {
  if (!(params.bin_base > 1.0) || params.bin_base > 2.0) {
    return Status::Error("bin base must be in (1, 2]");
  }
  return Status::Ok();
}

}  // namespace

void TakeReaderStats(trace::TraceReader& reader, InputStats* in) {
  in->path = reader.path();
  in->bytes = reader.raw_bytes_read();
  if (std::optional<uint32_t> crc = reader.raw_crc32()) {
    in->crc32 = *crc;
    in->has_crc32 = true;
  }
  in->nodes = reader.nodes().size();
  in->node_names_folded = reader.nodes().folded();
  in->meta.clear();
  for (const std::string& m : reader.meta()) KeepInputMeta(m, &in->meta);
}

void FillCallDetails(const CallTable& table,
                     const std::vector<uint32_t>& root_pattern,
                     DetailedResult* d) {
  const Pairs& pairs = table.pairs;
  d->calls.resize(pairs.size());
  for (size_t i = 0; i < pairs.size(); ++i) {
    CallInfo& c = d->calls[i];
    c.matched = pairs[i].ret >= 0;
    c.imputed = pairs[i].imputed;
    c.parent = pairs[i].parent;
    c.root_pattern = root_pattern[i];
    c.call_ns = pairs[i].call;
    c.ret_ns = pairs[i].ret;
    c.caller = pairs[i].caller;
    c.callee = pairs[i].callee;
    c.pathid = pairs[i].pathid;
  }
  d->node_names = table.names;
  if (!d->labels.callids.empty()) {
    d->labels.op_names.assign(table.op_names.begin(), table.op_names.end());
    d->labels.ops.resize(pairs.size());
    for (uint32_t i = 0; i < pairs.size(); ++i) {
      d->labels.ops[i] = table.OpOf(i);
    }
  }
}

Status AssignSegment(trace::TraceReader& reader, const Params& params,
                     AssignedSegment* out, CallLabels* labels,
                     const SegmentTail* tail) {
  BBPROF_RETURN_IF_ERROR(CheckParams(params));
  MemoryDriver driver(reader, params, labels);
  driver.set_progress(false);
  driver.set_tail(tail);
  driver.reuse_table(std::move(out->table));
  BBPROF_RETURN_IF_ERROR(driver.Assign(&out->result));
  out->result.input = driver.stats();
  out->tail_records = driver.tail_records();
  out->table = std::move(driver.table());
  return Status::Ok();
}

Result<NestingResult> RunNesting(trace::TraceReader& reader,
                                 const Params& params) {
  BBPROF_RETURN_IF_ERROR(CheckParams(params));
  MemoryDriver driver(reader, params, nullptr);
  Result<NestingResult> r = driver.Run();
  if (r.ok()) SortPatterns(r->patterns, r->sort);
  return r;
}

Result<DetailedResult> RunNestingDetailed(trace::TraceReader& reader,
                                          const Params& params,
                                          const DetailOptions& options) {
  BBPROF_RETURN_IF_ERROR(CheckParams(params));
  DetailedResult d;
  MemoryDriver driver(reader, params,
                      options.call_labels ? &d.labels : nullptr);
  Result<NestingResult> r = driver.Run();
  if (!r.ok()) return r.status();
  d.result = std::move(*r);
  driver.FillDetails(&d);  // indexes patterns in discovery order
  SortPatterns(d.result.patterns, d.result.sort);
  return d;
}

}  // namespace bbprof::nesting
