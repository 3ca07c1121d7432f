#include "capture/reorder_buffer.h"

#include <algorithm>

namespace bbprof::capture {

void ReorderBuffer::Ring::push_back(const Entry& e) {
  if (size_ == buf_.size()) {
    std::vector<Entry> bigger(std::max<size_t>(64, buf_.size() * 2));
    for (size_t i = 0; i < size_; ++i) {
      bigger[i] = buf_[(head_ + i) & (buf_.size() - 1)];
    }
    buf_ = std::move(bigger);
    head_ = 0;
  }
  buf_[(head_ + size_) & (buf_.size() - 1)] = e;
  ++size_;
}

void ReorderBuffer::Push(const CapturedRecord& rec, std::string_view pathid) {
  Entry e{rec, seq_++};
  e.rec.has_pathid = !pathid.empty();
  if (e.rec.has_pathid) pathids_.emplace(e.seq, pathid);
  if (released_any_ && e.rec.ts < last_released_) {
    // Too late for its place: keep it, at the earliest time still writable.
    e.rec.ts = last_released_;
    ++late_;
  }
  if (in_order_.empty() || in_order_.back().rec.ts <= e.rec.ts) {
    in_order_.push_back(e);
  } else {
    heap_.push(e);
  }
}

bool ReorderBuffer::NextIsInHeap() const {
  return in_order_.empty() ||
         (!heap_.empty() && Later()(in_order_.front(), heap_.top()));
}

const ReorderBuffer::Entry& ReorderBuffer::Next() const {
  return NextIsInHeap() ? heap_.top() : in_order_.front();
}

Status ReorderBuffer::WriteNext() {
  const bool from_heap = NextIsInHeap();
  const Entry& next = from_heap ? heap_.top() : in_order_.front();
  const CapturedRecord c = next.rec;
  std::string pathid;
  if (c.has_pathid) {
    auto it = pathids_.find(next.seq);
    pathid = std::move(it->second);
    pathids_.erase(it);
  }
  trace::Record r;
  r.ts_ns = c.ts;
  r.sender = c.sender;
  r.receiver = c.receiver;
  r.kind = c.kind;
  // The callid is a number: writers take it as one (Record::callid_is_number).
  r.callid_is_number = c.has_callid;
  r.callid_number = c.callid;
  if (ops_ != nullptr) r.op = ops_->Name(c.op);
  r.pathid = pathid;
  last_released_ = c.ts;
  released_any_ = true;
  if (from_heap) {
    heap_.pop();
  } else {
    in_order_.pop_front();
  }
  return out_(r);
}

Status ReorderBuffer::Release(trace::TimeNs now) {
  while (HasNext() && Next().rec.ts < now - window_) {
    BBPROF_RETURN_IF_ERROR(WriteNext());
  }
  return Status::Ok();
}

Status ReorderBuffer::Flush() {
  while (HasNext()) {
    BBPROF_RETURN_IF_ERROR(WriteNext());
  }
  return Status::Ok();
}

}  // namespace bbprof::capture
