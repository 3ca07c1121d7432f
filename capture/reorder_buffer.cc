#include "capture/reorder_buffer.h"

#include <charconv>

namespace bbprof::capture {

void ReorderBuffer::Push(const CapturedRecord& rec) {
  Entry e{rec, seq_++};
  if (released_any_ && e.rec.ts < last_released_) {
    // Too late for its place: keep it, at the earliest time still writable.
    e.rec.ts = last_released_;
    ++late_;
  }
  heap_.push(e);
}

Status ReorderBuffer::WriteTop() {
  const CapturedRecord& c = heap_.top().rec;
  char buf[24];
  trace::Record r;
  r.ts_ns = c.ts;
  r.sender = c.sender;
  r.receiver = c.receiver;
  r.kind = c.kind;
  if (c.has_callid) {
    auto [end, ec] = std::to_chars(buf, buf + sizeof buf, c.callid);
    r.callid = std::string_view(buf, static_cast<size_t>(end - buf));
  }
  last_released_ = c.ts;
  released_any_ = true;
  heap_.pop();
  return out_(r);
}

Status ReorderBuffer::Release(trace::TimeNs now) {
  while (!heap_.empty() && heap_.top().rec.ts < now - window_) {
    BBPROF_RETURN_IF_ERROR(WriteTop());
  }
  return Status::Ok();
}

Status ReorderBuffer::Flush() {
  while (!heap_.empty()) {
    BBPROF_RETURN_IF_ERROR(WriteTop());
  }
  return Status::Ok();
}

}  // namespace bbprof::capture
