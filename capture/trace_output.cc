#include "capture/trace_output.h"

#include <cstdio>
#include <ctime>

namespace bbprof::capture {

std::string RotatedFileName(trace::TimeNs first_ts, uint64_t n,
                            trace::TraceFormat format) {
  std::time_t secs = static_cast<std::time_t>(first_ts / trace::kNsPerSecond);
  std::tm tm{};
  gmtime_r(&secs, &tm);
  char stamp[32];
  std::strftime(stamp, sizeof stamp, "%Y%m%dT%H%M%SZ", &tm);
  char seq[16];
  std::snprintf(seq, sizeof seq, "%05llu", static_cast<unsigned long long>(n));
  return std::string("capture-") + stamp + "-" + seq +
         (format == trace::TraceFormat::kBinary ? ".bbt" : ".trace");
}

Status TraceOutput::OpenNext(trace::TimeNs first_ts) {
  std::string path = options_.path;
  if (options_.directory) {
    path += (path.empty() || path.back() == '/') ? "" : "/";
    path += RotatedFileName(first_ts, ++sequence_, options_.format);
  }
  auto w = trace::OpenTraceWriter(path, nodes_, options_.format);
  if (!w.ok()) return w.status();
  writer_ = std::move(*w);
  file_start_ = first_ts;
  files_.push_back(path);
  for (const std::string& m : options_.header_meta) {
    BBPROF_RETURN_IF_ERROR(writer_->WriteMeta(m));
  }
  return Status::Ok();
}

bool TraceOutput::RotationDue(trace::TimeNs ts) const {
  if (!writer_ || !options_.directory) return false;
  if (options_.rotate_bytes > 0 &&
      writer_->bytes_encoded() >= options_.rotate_bytes) {
    return true;
  }
  return options_.rotate_interval > 0 &&
         ts - file_start_ >= options_.rotate_interval;
}

Status TraceOutput::Write(const trace::Record& rec) {
  if (RotationDue(rec.ts_ns)) BBPROF_RETURN_IF_ERROR(Rotate());
  if (!writer_) BBPROF_RETURN_IF_ERROR(OpenNext(rec.ts_ns));
  return writer_->Write(rec);
}

Status TraceOutput::Rotate() {
  if (!writer_) return Status::Ok();
  for (const std::string& m : footer_()) {
    BBPROF_RETURN_IF_ERROR(writer_->WriteMeta(m));
  }
  Status s = writer_->Close();
  writer_.reset();
  return s;
}

Status TraceOutput::Close() {
  if (!writer_ && files_.empty()) {
    std::timespec now{};
    std::timespec_get(&now, TIME_UTC);
    BBPROF_RETURN_IF_ERROR(OpenNext(now.tv_sec * trace::kNsPerSecond));
  }
  return Rotate();
}

}  // namespace bbprof::capture
