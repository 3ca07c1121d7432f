// One direction of a TCP connection, put back in order (paper section 6.2:
// a call is marked by the first byte of a request, so the decoder must see
// every byte once, in order). Handles out-of-order segments, retransmissions
// (including partly overlapping ones: the first copy wins, as in most
// stacks' reassembly), sequence wraparound (offsets are 64-bit, derived from
// signed 32-bit differences), and holes: when more than `max_buffered`
// bytes wait behind a hole, or at Flush(), the hole is reported as a gap and
// delivery resumes after it, so a lost packet costs one message, not the
// rest of the connection.
#ifndef BBPROF_CAPTURE_TCP_REASSEMBLY_H_
#define BBPROF_CAPTURE_TCP_REASSEMBLY_H_

#include <cstddef>
#include <cstdint>
#include <map>
#include <span>
#include <vector>

#include "trace/record.h"

namespace bbprof::capture {

class StreamListener {
 public:
  virtual ~StreamListener() = default;
  virtual void OnBytes(trace::TimeNs ts, std::span<const std::byte> data) = 0;
  virtual void OnHole(uint64_t length) = 0;
};

struct ReassemblyStats {
  uint64_t retransmitted_bytes = 0;  // already delivered, dropped
  uint64_t gap_bytes = 0;            // never seen, reported as holes
  uint64_t overflow_flushes = 0;     // holes declared because of the cap
};

class TcpReassembler {
 public:
  explicit TcpReassembler(size_t max_buffered = 4u << 20)
      : max_buffered_(max_buffered) {}

  bool started() const { return started_; }
  // Starts at `isn` + 1 (after a SYN) or at the first data byte seen.
  void Start(uint32_t next_seq) {
    started_ = true;
    next_seq_ = next_seq;
  }
  // `missing_tail`: bytes of the segment after `data` that were not captured
  // (snap length); they become a hole right away instead of a gap that waits
  // for the buffer cap, so a short snap length still yields every message
  // whose start was captured.
  void Add(uint32_t seq, trace::TimeNs ts, std::span<const std::byte> data,
           StreamListener& out, uint32_t missing_tail = 0);
  // Capture time of the oldest segment waiting behind a hole (0 if none):
  // the flow table flushes holes older than its reorder window.
  trace::TimeNs oldest_pending_ts() const {
    return pending_.empty() ? 0 : pending_.begin()->second.ts;
  }
  // Declares every remaining hole and delivers what was buffered.
  void Flush(StreamListener& out);
  size_t buffered() const { return buffered_; }
  const ReassemblyStats& stats() const { return stats_; }

 private:
  struct Pending {
    trace::TimeNs ts;
    std::vector<std::byte> data;
    uint32_t hole_after = 0;  // uncaptured bytes right after `data`
  };
  void Hole(uint64_t length, StreamListener& out);
  void Deliver(trace::TimeNs ts, std::span<const std::byte> data,
               StreamListener& out);
  void Drain(StreamListener& out);
  void SkipToFirstPending(StreamListener& out);

  size_t max_buffered_;
  bool started_ = false;
  uint32_t next_seq_ = 0;
  uint64_t next_abs_ = 0;  // absolute offset of next_seq_
  // Keyed by absolute offset; entries never overlap each other.
  std::map<uint64_t, Pending> pending_;
  size_t buffered_ = 0;
  ReassemblyStats stats_;
};

}  // namespace bbprof::capture

#endif  // BBPROF_CAPTURE_TCP_REASSEMBLY_H_
