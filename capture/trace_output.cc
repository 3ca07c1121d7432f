#include "capture/trace_output.h"

#include <cstdio>
#include <ctime>

#include "base/atomic_file.h"

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

std::string PartialName(const std::string& path) {
  for (const char* suffix : {".gz", ".zst"}) {
    const std::string sfx = suffix;
    if (path.size() > sfx.size() &&
        path.compare(path.size() - sfx.size(), sfx.size(), sfx) == 0) {
      return path.substr(0, path.size() - sfx.size()) + ".partial" + sfx;
    }
  }
  return path + ".partial";
}

Status TraceOutput::OpenNext(trace::TimeNs first_ts) {
  std::string path = options_.path;
  if (options_.directory) {
    path += (path.empty() || path.back() == '/') ? "" : "/";
    path += RotatedFileName(first_ts, ++sequence_, options_.format);
  }
  Result<OutputTarget> target = ResolveOutput(path);
  if (!target.ok()) return target.status();
  std::string write_path = path;
  final_path_.clear();
  if (target->kind == OutputTarget::Kind::kFile) {
    // Beside the link's target, so that the final rename stays in one folder.
    write_path = PartialName(target->path);
    final_path_ = path;
  }
  auto w = trace::OpenTraceWriter(write_path, nodes_, options_.format);
  if (!w.ok()) return w.status();
  writer_ = std::move(*w);
  file_start_ = first_ts;
  files_.push_back(write_path);
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

Status TraceOutput::Rotate() { return CloseCurrent(true); }

Status TraceOutput::CloseCurrent(bool complete) {
  if (!writer_) return Status::Ok();
  for (const std::string& m : footer_()) {
    BBPROF_RETURN_IF_ERROR(writer_->WriteMeta(m));
  }
  Status s = writer_->Close();
  writer_.reset();
  if (!s.ok() || final_path_.empty()) return s;
  if (!complete) {
    left_partial_ = true;
    return Status::Ok();
  }
  BBPROF_RETURN_IF_ERROR(MoveOutputIntoPlace(files_.back(), final_path_));
  files_.back() = final_path_;
  return Status::Ok();
}

Status TraceOutput::Close(bool complete) {
  if (!writer_ && files_.empty()) {
    std::timespec now{};
    std::timespec_get(&now, TIME_UTC);
    BBPROF_RETURN_IF_ERROR(OpenNext(now.tv_sec * trace::kNsPerSecond));
  }
  return CloseCurrent(complete);
}

}  // namespace bbprof::capture
