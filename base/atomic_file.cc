#include "base/atomic_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <iostream>
#include <sstream>

namespace bbprof {

namespace {
std::string ErrnoText() { return std::strerror(errno); }
}  // namespace

Result<AtomicFile> AtomicFile::Create(const std::string& path) {
  AtomicFile f;
  f.path_ = path;
  if (path == "-") {
    f.file_ = stdout;
    f.is_stdout_ = true;
    return f;
  }
  // mkstemp in the destination's folder so the final rename stays on one
  // file system and is atomic.
  std::string tmpl = path + ".tmp.XXXXXX";
  int fd = mkstemp(tmpl.data());
  if (fd < 0) {
    return Status::Error(path + ": cannot create output file: " + ErrnoText());
  }
  // mkstemp creates 0600; give the result the usual umask-based mode.
  mode_t mask = umask(0);
  umask(mask);
  fchmod(fd, 0666 & ~mask);
  f.file_ = fdopen(fd, "wb");
  if (f.file_ == nullptr) {
    ::close(fd);
    ::unlink(tmpl.c_str());
    return Status::Error(path + ": cannot open output file: " + ErrnoText());
  }
  static constexpr size_t kBufferSize = 1 << 20;
  std::setvbuf(f.file_, nullptr, _IOFBF, kBufferSize);
  f.temp_path_ = std::move(tmpl);
  return f;
}

AtomicFile::AtomicFile(AtomicFile&& other) noexcept
    : path_(std::move(other.path_)),
      temp_path_(std::move(other.temp_path_)),
      file_(other.file_),
      is_stdout_(other.is_stdout_) {
  other.file_ = nullptr;
  other.temp_path_.clear();
}

AtomicFile& AtomicFile::operator=(AtomicFile&& other) noexcept {
  if (this != &other) {
    Abandon();
    path_ = std::move(other.path_);
    temp_path_ = std::move(other.temp_path_);
    file_ = other.file_;
    is_stdout_ = other.is_stdout_;
    other.file_ = nullptr;
    other.temp_path_.clear();
  }
  return *this;
}

AtomicFile::~AtomicFile() { Abandon(); }

Status AtomicFile::Write(std::string_view bytes) {
  return Write(bytes.data(), bytes.size());
}

Status AtomicFile::Write(const void* data, size_t size) {
  if (file_ == nullptr) return Status::Error(path_ + ": write after close");
  if (size == 0) return Status::Ok();
  if (std::fwrite(data, 1, size, file_) != size) {
    return Status::Error(path_ + ": write failed: " + ErrnoText());
  }
  return Status::Ok();
}

Status AtomicFile::Commit() {
  if (file_ == nullptr) return Status::Error(path_ + ": commit after close");
  if (is_stdout_) {
    file_ = nullptr;
    if (std::fflush(stdout) != 0) {
      return Status::Error("standard output: write failed: " + ErrnoText());
    }
    return Status::Ok();
  }
  bool ok = std::fflush(file_) == 0;
  int saved_errno = errno;
  ok = ok && fsync(fileno(file_)) == 0;
  if (!ok) saved_errno = errno;
  if (std::fclose(file_) != 0 && ok) {
    ok = false;
    saved_errno = errno;
  }
  file_ = nullptr;
  if (!ok) {
    ::unlink(temp_path_.c_str());
    temp_path_.clear();
    errno = saved_errno;
    return Status::Error(path_ + ": write failed: " + ErrnoText());
  }
  if (std::rename(temp_path_.c_str(), path_.c_str()) != 0) {
    std::string err = ErrnoText();
    ::unlink(temp_path_.c_str());
    temp_path_.clear();
    return Status::Error(path_ + ": cannot move output into place: " + err);
  }
  temp_path_.clear();
  return Status::Ok();
}

void AtomicFile::Abandon() {
  if (file_ != nullptr && !is_stdout_) std::fclose(file_);
  file_ = nullptr;
  if (!temp_path_.empty()) {
    ::unlink(temp_path_.c_str());
    temp_path_.clear();
  }
}

Status WriteFileAtomically(const std::string& path, std::string_view contents) {
  Result<AtomicFile> f = AtomicFile::Create(path);
  if (!f.ok()) return f.status();
  BBPROF_RETURN_IF_ERROR(f->Write(contents));
  return f->Commit();
}

Result<std::string> ReadWholeFile(const std::string& path) {
  std::ifstream in;
  std::istream* is = &std::cin;
  if (path != "-") {
    in.open(path, std::ios::binary);
    if (!in) {
      return Status::Error(path + ": cannot open: " + ErrnoText());
    }
    is = &in;
  }
  std::ostringstream ss;
  ss << is->rdbuf();
  if (is->bad()) return Status::Error(path + ": read failed");
  return ss.str();
}

}  // namespace bbprof
