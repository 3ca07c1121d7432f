#include "base/atomic_file.h"

#include <fcntl.h>
#include <limits.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <iostream>
#include <sstream>

#include "base/interrupt.h"

namespace bbprof {

namespace {

std::string ErrnoText() { return std::strerror(errno); }

// Follows symbolic links by their text to the path a new file would be
// created at (a dangling link's target is created, as the shell's `>` does).
Result<std::string> FollowLinks(const std::string& path) {
  std::string p = path;
  for (int hops = 0; hops < 40; ++hops) {
    struct stat st {};
    if (::lstat(p.c_str(), &st) != 0 || !S_ISLNK(st.st_mode)) return p;
    std::string target(PATH_MAX, '\0');
    ssize_t n = ::readlink(p.c_str(), target.data(), target.size());
    if (n <= 0 || static_cast<size_t>(n) >= target.size()) {
      return Status::Error(path + ": cannot read symbolic link " + p + ": " +
                           ErrnoText());
    }
    target.resize(static_cast<size_t>(n));
    if (target[0] != '/') {
      size_t slash = p.rfind('/');
      if (slash != std::string::npos) target = p.substr(0, slash + 1) + target;
    }
    p = std::move(target);
  }
  return Status::Error(path + ": too many levels of symbolic links");
}

// Gives the file open on `fd` the mode of `old` and, where the system lets
// us (root, or a group we are in), its owner and group.
void TakeModeAndOwner(int fd, const struct stat& old) {
  mode_t mode = old.st_mode & 07777;
  if (fchown(fd, old.st_uid, old.st_gid) != 0) {
    // Not ours to give away: never hand set-id bits to another owner.
    mode &= ~static_cast<mode_t>(S_ISUID | S_ISGID);
    if (fchown(fd, static_cast<uid_t>(-1), old.st_gid) == 0) {
      mode |= old.st_mode & S_ISGID;
    }
  }
  fchmod(fd, mode);
}

std::string FolderOf(const std::string& path) {
  size_t slash = path.rfind('/');
  if (slash == std::string::npos) return ".";
  return slash == 0 ? "/" : path.substr(0, slash);
}

}  // namespace

Result<OutputTarget> ResolveOutput(const std::string& path) {
  OutputTarget t;
  if (path == "-") {
    t.kind = OutputTarget::Kind::kStdout;
    t.path = path;
    return t;
  }
  // stat follows links the way the kernel does (magic links such as
  // /dev/stdout -> /proc/self/fd/1 included): it decides the kind.
  struct stat st {};
  if (::stat(path.c_str(), &st) == 0) {
    if (S_ISCHR(st.st_mode) || S_ISFIFO(st.st_mode)) {
      t.kind = OutputTarget::Kind::kStream;
      t.path = path;
      return t;
    }
    if (S_ISDIR(st.st_mode)) {
      return Status::Error(path + ": is a folder, not a file");
    }
    if (!S_ISREG(st.st_mode)) {
      return Status::Error(path + ": is a " +
                           (S_ISBLK(st.st_mode) ? "block device" : "socket") +
                           "; bbprof writes to regular files, character "
                           "devices and FIFOs only");
    }
    t.exists = true;
  }
  Result<std::string> followed = FollowLinks(path);
  if (!followed.ok()) return followed.status();
  t.kind = OutputTarget::Kind::kFile;
  t.path = std::move(*followed);
  return t;
}

Result<AtomicFile> AtomicFile::Create(const std::string& path) {
  AtomicFile f;
  f.path_ = path;
  Result<OutputTarget> target = ResolveOutput(path);
  if (!target.ok()) return target.status();
  static constexpr size_t kBufferSize = 1 << 20;
  if (target->kind == OutputTarget::Kind::kStdout) {
    f.file_ = stdout;
    f.is_stdout_ = true;
    return f;
  }
  if (target->kind == OutputTarget::Kind::kStream) {
    // A device or a FIFO is not replaced: its reader (or the kernel) gets
    // the bytes as they come. Opening a FIFO waits for its reader.
    int fd = ::open(path.c_str(), O_WRONLY | O_CLOEXEC | O_NOCTTY);
    if (fd < 0) {
      return Status::Error(path + ": cannot open output: " + ErrnoText());
    }
    f.file_ = fdopen(fd, "wb");
    if (f.file_ == nullptr) {
      ::close(fd);
      return Status::Error(path + ": cannot open output: " + ErrnoText());
    }
    std::setvbuf(f.file_, nullptr, _IOFBF, kBufferSize);
    return f;
  }
  // mkstemp in the destination's folder so the final rename stays on one
  // file system and is atomic.
  f.final_path_ = target->path;
  std::string tmpl = f.final_path_ + ".tmp.XXXXXX";
  int fd = mkstemp(tmpl.data());
  if (fd < 0) {
    return Status::Error(path + ": cannot create output file: " + ErrnoText());
  }
  // mkstemp creates 0600. A replaced file keeps its mode and, where the
  // system lets us (root, or a group we are in), its owner and group; a new
  // file gets the usual umask-based mode.
  struct stat old {};
  if (target->exists && ::stat(f.final_path_.c_str(), &old) == 0) {
    TakeModeAndOwner(fd, old);
  } else {
    mode_t mask = umask(0);
    umask(mask);
    fchmod(fd, 0666 & ~mask);
  }
  f.file_ = fdopen(fd, "wb");
  if (f.file_ == nullptr) {
    ::close(fd);
    ::unlink(tmpl.c_str());
    return Status::Error(path + ": cannot open output file: " + ErrnoText());
  }
  std::setvbuf(f.file_, nullptr, _IOFBF, kBufferSize);
  // Removed by the interrupt handler if SIGINT/SIGTERM comes first.
  f.temp_handle_ = RegisterTempFile(tmpl);
  f.temp_path_ = std::move(tmpl);
  return f;
}

AtomicFile::AtomicFile(AtomicFile&& other) noexcept
    : path_(std::move(other.path_)),
      final_path_(std::move(other.final_path_)),
      temp_path_(std::move(other.temp_path_)),
      file_(other.file_),
      is_stdout_(other.is_stdout_),
      temp_handle_(other.temp_handle_) {
  other.file_ = nullptr;
  other.temp_path_.clear();
  other.temp_handle_ = -1;
}

AtomicFile& AtomicFile::operator=(AtomicFile&& other) noexcept {
  if (this != &other) {
    Abandon();
    path_ = std::move(other.path_);
    final_path_ = std::move(other.final_path_);
    temp_path_ = std::move(other.temp_path_);
    file_ = other.file_;
    is_stdout_ = other.is_stdout_;
    temp_handle_ = other.temp_handle_;
    other.file_ = nullptr;
    other.temp_path_.clear();
    other.temp_handle_ = -1;
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
  const bool replace = !temp_path_.empty();
  bool ok = std::fflush(file_) == 0;
  int saved_errno = errno;
  // fsync only what is renamed into place: a device or a pipe has nothing
  // to sync (and some refuse the call).
  if (ok && replace && fsync(fileno(file_)) != 0) {
    ok = false;
    saved_errno = errno;
  }
  if (std::fclose(file_) != 0 && ok) {
    ok = false;
    saved_errno = errno;
  }
  file_ = nullptr;
  if (!ok) {
    Abandon();
    errno = saved_errno;
    return Status::Error(path_ + ": write failed: " + ErrnoText());
  }
  if (!replace) return Status::Ok();
  if (std::rename(temp_path_.c_str(), final_path_.c_str()) != 0) {
    std::string err = ErrnoText();
    Abandon();
    return Status::Error(path_ + ": cannot move output into place: " + err);
  }
  temp_path_.clear();
  UnregisterTempFile(temp_handle_);
  temp_handle_ = -1;
  return Status::Ok();
}

void AtomicFile::Abandon() {
  if (file_ != nullptr && !is_stdout_) std::fclose(file_);
  file_ = nullptr;
  if (!temp_path_.empty()) {
    ::unlink(temp_path_.c_str());
    temp_path_.clear();
  }
  UnregisterTempFile(temp_handle_);
  temp_handle_ = -1;
}

Status MoveOutputIntoPlace(const std::string& from, const std::string& to) {
  Result<OutputTarget> target = ResolveOutput(to);
  if (!target.ok()) return target.status();
  if (target->kind != OutputTarget::Kind::kFile) {
    return Status::Error(to + ": not a file " + from + " can be moved to");
  }
  struct stat old {};
  if (target->exists && ::stat(target->path.c_str(), &old) == 0) {
    int fd = ::open(from.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd >= 0) {
      TakeModeAndOwner(fd, old);
      ::close(fd);
    }
  }
  if (std::rename(from.c_str(), target->path.c_str()) != 0) {
    return Status::Error(to + ": cannot move " + from +
                         " into place: " + ErrnoText());
  }
  return Status::Ok();
}

Status CheckOutputWritable(const std::string& path) {
  struct stat st {};
  std::string folder;
  if (path != "-" && ::stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode)) {
    folder = path;
  } else {
    Result<OutputTarget> target = ResolveOutput(path);
    if (!target.ok()) return target.status();
    if (target->kind == OutputTarget::Kind::kStdout) return Status::Ok();
    if (target->kind == OutputTarget::Kind::kStream) {
      if (::faccessat(AT_FDCWD, path.c_str(), W_OK, AT_EACCESS) != 0) {
        return Status::Error(path + ": cannot write: " + ErrnoText());
      }
      return Status::Ok();
    }
    folder = FolderOf(target->path);
  }
  // A file is replaced through a temporary in its folder: the folder must
  // take new files.
  if (::faccessat(AT_FDCWD, folder.c_str(), W_OK | X_OK, AT_EACCESS) != 0) {
    return Status::Error(path + ": cannot create files in folder " + folder +
                         ": " + ErrnoText());
  }
  return Status::Ok();
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
