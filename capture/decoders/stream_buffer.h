// StreamBuffer: one direction of one TCP connection as a decoder sees it.
// Holds the bytes a decoder has not consumed yet and remembers, for every
// byte, the capture time of the segment that carried it, so an event can be
// stamped with the time of the packet carrying a message's first byte (paper
// section 6.2). Bodies the decoder does not need (an HTTP body, an RPC
// fragment's arguments) are skipped without being buffered.
#ifndef BBPROF_CAPTURE_DECODERS_STREAM_BUFFER_H_
#define BBPROF_CAPTURE_DECODERS_STREAM_BUFFER_H_

#include <cstddef>
#include <cstdint>
#include <span>
#include <utility>
#include <vector>

#include "trace/record.h"

namespace bbprof::capture {

class StreamBuffer {
 public:
  // Appends a segment's bytes; the first pending_skip() of them are dropped.
  void Append(trace::TimeNs ts, std::span<const std::byte> data);
  std::span<const std::byte> data() const {
    return std::span<const std::byte>(buf_).subspan(head_);
  }
  size_t size() const { return buf_.size() - head_; }
  // Capture time of the segment that carried data()[offset].
  trace::TimeNs TsAt(size_t offset) const;
  // Drops the first n buffered bytes (n <= size()).
  void Consume(size_t n);
  // Drops the next n bytes of the stream, buffered or still to come.
  void Skip(uint64_t n);
  uint64_t pending_skip() const { return skip_; }
  // Accounts for `length` bytes the core never saw. Returns true when they
  // fell entirely inside a pending skip (the decoder is still in sync);
  // otherwise clears the buffer and returns false (the decoder must
  // resynchronise).
  bool AbsorbGap(uint64_t length);
  void Clear();

 private:
  std::vector<std::byte> buf_;
  size_t head_ = 0;
  uint64_t base_ = 0;  // stream offset of buf_[head_]
  uint64_t skip_ = 0;
  // (stream offset, ts) of the segments from segs_[seg_head_] on. A vector
  // with a head index, not a std::deque: libstdc++ allocates a deque's
  // first 512-byte block on construction, and two of them per connection
  // would be most of an idle connection's memory (a crafted capture of
  // idle connections must not grow memory by kilobytes each).
  std::vector<std::pair<uint64_t, trace::TimeNs>> segs_;
  size_t seg_head_ = 0;
  void ClearSegments() {
    segs_.clear();
    seg_head_ = 0;
  }
};

}  // namespace bbprof::capture

#endif  // BBPROF_CAPTURE_DECODERS_STREAM_BUFFER_H_
