#include "capture/decoders/stream_buffer.h"

#include <algorithm>

namespace bbprof::capture {

void StreamBuffer::Append(trace::TimeNs ts, std::span<const std::byte> data) {
  if (skip_ > 0) {
    size_t drop = static_cast<size_t>(std::min<uint64_t>(skip_, data.size()));
    skip_ -= drop;
    base_ += drop;
    data = data.subspan(drop);
  }
  if (data.empty()) {
    return;
  }
  uint64_t start = base_ + size();
  if (seg_head_ == segs_.size() || segs_.back().second != ts) {
    segs_.emplace_back(start, ts);
  }
  buf_.insert(buf_.end(), data.begin(), data.end());
}

trace::TimeNs StreamBuffer::TsAt(size_t offset) const {
  uint64_t abs = base_ + offset;
  trace::TimeNs ts = seg_head_ == segs_.size() ? 0 : segs_[seg_head_].second;
  for (size_t i = seg_head_; i < segs_.size() && segs_[i].first <= abs; ++i) {
    ts = segs_[i].second;
  }
  return ts;
}

void StreamBuffer::Consume(size_t n) {
  n = std::min(n, size());
  head_ += n;
  base_ += n;
  // Keep the segment that covers the new first byte.
  while (segs_.size() - seg_head_ > 1 && segs_[seg_head_ + 1].first <= base_) {
    ++seg_head_;
  }
  if (head_ == buf_.size()) {
    buf_.clear();
    head_ = 0;
    ClearSegments();
  } else {
    if (head_ > 4096 && head_ * 2 > buf_.size()) {
      buf_.erase(buf_.begin(),
                 buf_.begin() + static_cast<std::ptrdiff_t>(head_));
      head_ = 0;
    }
    if (seg_head_ > 64 && seg_head_ * 2 > segs_.size()) {
      segs_.erase(segs_.begin(),
                  segs_.begin() + static_cast<std::ptrdiff_t>(seg_head_));
      seg_head_ = 0;
    }
  }
}

void StreamBuffer::Skip(uint64_t n) {
  if (n <= size()) {
    Consume(static_cast<size_t>(n));
    return;
  }
  skip_ += n - size();
  Consume(size());
}

bool StreamBuffer::AbsorbGap(uint64_t length) {
  if (size() == 0 && skip_ >= length) {
    skip_ -= length;
    base_ += length;
    return true;
  }
  base_ += size() + length;
  buf_.clear();
  head_ = 0;
  ClearSegments();
  skip_ = 0;
  return false;
}

void StreamBuffer::Clear() {
  base_ += size();
  buf_.clear();
  head_ = 0;
  ClearSegments();
  skip_ = 0;
}

}  // namespace bbprof::capture
