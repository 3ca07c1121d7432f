#include "capture/tcp_reassembly.h"

namespace bbprof::capture {

void TcpReassembler::Deliver(trace::TimeNs ts, std::span<const std::byte> data,
                             StreamListener& out) {
  if (data.empty()) return;
  out.OnBytes(ts, data);
  next_abs_ += data.size();
  next_seq_ += static_cast<uint32_t>(data.size());
}

void TcpReassembler::Add(uint32_t seq, trace::TimeNs ts,
                         std::span<const std::byte> data,
                         StreamListener& out, uint32_t missing_tail) {
  if (data.empty() && missing_tail == 0) return;
  if (!started_) Start(seq);
  // Signed distance handles wraparound: a segment is at most 2^31 away.
  int64_t rel = static_cast<int32_t>(seq - next_seq_);
  int64_t start = static_cast<int64_t>(next_abs_) + rel;
  int64_t end = start + static_cast<int64_t>(data.size());
  if (end + missing_tail <= static_cast<int64_t>(next_abs_)) {
    stats_.retransmitted_bytes += data.size();
    return;
  }
  if (end <= static_cast<int64_t>(next_abs_)) {
    // Only the uncaptured tail is new; skip into it.
    data = {};
    missing_tail = static_cast<uint32_t>(end + missing_tail -
                                         static_cast<int64_t>(next_abs_));
    start = end = static_cast<int64_t>(next_abs_);
  }
  if (start < static_cast<int64_t>(next_abs_)) {
    size_t dup = static_cast<size_t>(static_cast<int64_t>(next_abs_) - start);
    stats_.retransmitted_bytes += dup;
    data = data.subspan(dup);
    start = static_cast<int64_t>(next_abs_);
  }
  uint64_t ustart = static_cast<uint64_t>(start);
  if (ustart == next_abs_) {
    Deliver(ts, data, out);
    if (missing_tail > 0) Hole(missing_tail, out);
    Drain(out);
    return;
  }
  // Out of order: keep only bytes no buffered segment already covers.
  uint64_t pos = ustart;
  uint64_t uend = static_cast<uint64_t>(end);
  auto it = pending_.upper_bound(pos);
  if (it != pending_.begin()) {
    auto prev = std::prev(it);
    uint64_t prev_end = prev->first + prev->second.data.size();
    if (prev_end > pos) {
      stats_.retransmitted_bytes += std::min(prev_end, uend) - pos;
      pos = prev_end;
    }
  }
  while (pos < uend) {
    uint64_t piece_end = uend;
    if (it != pending_.end() && it->first < uend) piece_end = it->first;
    if (piece_end > pos) {
      auto piece = data.subspan(pos - ustart, piece_end - pos);
      uint32_t tail = piece_end == uend ? missing_tail : 0;
      pending_.emplace(pos, Pending{ts, {piece.begin(), piece.end()}, tail});
      buffered_ += piece.size();
    }
    if (it == pending_.end() || it->first >= uend) break;
    uint64_t covered_end = it->first + it->second.data.size();
    stats_.retransmitted_bytes += std::min(covered_end, uend) - it->first;
    pos = covered_end;
    ++it;
  }
  while (buffered_ > max_buffered_ && !pending_.empty()) {
    ++stats_.overflow_flushes;
    SkipToFirstPending(out);
  }
}

void TcpReassembler::Drain(StreamListener& out) {
  while (!pending_.empty()) {
    auto it = pending_.begin();
    if (it->first > next_abs_) return;
    Pending p = std::move(it->second);
    uint64_t first = it->first;
    pending_.erase(it);
    buffered_ -= p.data.size();
    // Entries never overlap one another, but one may start before next_abs_.
    uint64_t skip = next_abs_ - first;
    uint64_t end = first + p.data.size() + p.hole_after;
    if (skip < p.data.size()) {
      Deliver(p.ts, std::span<const std::byte>(p.data).subspan(skip), out);
    }
    if (end > next_abs_) Hole(end - next_abs_, out);
  }
}

void TcpReassembler::Hole(uint64_t length, StreamListener& out) {
  stats_.gap_bytes += length;
  out.OnHole(length);
  next_abs_ += length;
  next_seq_ += static_cast<uint32_t>(length);
}

void TcpReassembler::SkipToFirstPending(StreamListener& out) {
  uint64_t first = pending_.begin()->first;
  if (first > next_abs_) Hole(first - next_abs_, out);
  Drain(out);
}

void TcpReassembler::Flush(StreamListener& out) {
  while (!pending_.empty()) SkipToFirstPending(out);
}

}  // namespace bbprof::capture
