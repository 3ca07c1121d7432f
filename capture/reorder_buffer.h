// Puts capture records back in timestamp order. A record is stamped with
// the capture time of its first packet, but it is known only when its bytes
// are decoded, which TCP reassembly may delay (a segment waiting behind a
// hole) and IP fragments may delay; a trace must be in non-decreasing time
// order (shared/spec/trace-format.md). Records wait here until the packet
// clock has moved `window` past them. One that arrives later than that (a
// hole filled after the window) is written at the last released time and
// counted, never dropped and never written out of order.
#ifndef BBPROF_CAPTURE_REORDER_BUFFER_H_
#define BBPROF_CAPTURE_REORDER_BUFFER_H_

#include <cstdint>
#include <functional>
#include <queue>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "base/status.h"
#include "capture/op_table.h"
#include "trace/record.h"

namespace bbprof::capture {

// A trace record whose callid is a number (flow serial << 32 | token).
struct CapturedRecord {
  trace::TimeNs ts = 0;
  trace::NodeId sender = 0;
  trace::NodeId receiver = 0;
  trace::Kind kind = trace::Kind::kMessage;
  bool has_callid = false;
  uint32_t op = 0;  // an OpTable index (0: none)
  uint64_t callid = 0;
  // Set by Push when the record has a pathid (kept aside, by arrival).
  bool has_pathid = false;
};

class ReorderBuffer {
 public:
  using Output = std::function<Status(const trace::Record&)>;
  // `ops` names the records' op indices (none if null).
  ReorderBuffer(trace::TimeNs window, Output out, const OpTable* ops = nullptr)
      : window_(window), out_(std::move(out)), ops_(ops) {}

  // `pathid`: the record's ground-truth request id (--truth-header), if any.
  void Push(const CapturedRecord& rec, std::string_view pathid = {});
  // Writes every record older than `now - window`.
  Status Release(trace::TimeNs now);
  // Writes everything (end of capture, or a file rotation).
  Status Flush();

  size_t size() const { return heap_.size() + in_order_.size(); }
  uint64_t late_records() const { return late_; }

 private:
  struct Entry {
    CapturedRecord rec;
    uint64_t seq;  // arrival order: keeps equal timestamps stable
  };
  struct Later {
    bool operator()(const Entry& a, const Entry& b) const {
      return a.rec.ts != b.rec.ts ? a.rec.ts > b.rec.ts : a.seq > b.seq;
    }
  };
  // Writes the earliest waiting record (from whichever queue holds it).
  Status WriteNext();
  bool HasNext() const { return !heap_.empty() || !in_order_.empty(); }
  bool NextIsInHeap() const;
  const Entry& Next() const;  // HasNext() must hold

  trace::TimeNs window_;
  Output out_;
  const OpTable* ops_;
  // A FIFO on a ring that only grows: a std::deque would allocate and free
  // a block every few records, which showed as a fifth of capture time.
  class Ring {
   public:
    bool empty() const { return size_ == 0; }
    size_t size() const { return size_; }
    const Entry& front() const { return buf_[head_]; }
    const Entry& back() const { return buf_[(head_ + size_ - 1) & (buf_.size() - 1)]; }
    void pop_front() {
      head_ = (head_ + 1) & (buf_.size() - 1);
      --size_;
    }
    void push_back(const Entry& e);

   private:
    std::vector<Entry> buf_;  // capacity a power of two
    size_t head_ = 0, size_ = 0;
  };
  // Most records come in time order: they wait in a FIFO (cheap); only the
  // ones that arrive before an earlier-pushed later record go to the heap.
  Ring in_order_;
  std::priority_queue<Entry, std::vector<Entry>, Later> heap_;
  uint64_t seq_ = 0;
  // Pathids of waiting records by arrival number: few records have one, so
  // the common record stays a small copyable struct.
  std::unordered_map<uint64_t, std::string> pathids_;
  bool released_any_ = false;
  trace::TimeNs last_released_ = 0;
  uint64_t late_ = 0;
};

}  // namespace bbprof::capture

#endif  // BBPROF_CAPTURE_REORDER_BUFFER_H_
