// AtomicFile: output files appear whole or not at all. Data goes to a
// temporary file in the destination's folder; Commit() flushes, fsyncs and
// renames it over the destination. A run that fails (or is killed) leaves the
// old file, if any, untouched, and the destructor removes the temporary.
#ifndef BBPROF_BASE_ATOMIC_FILE_H_
#define BBPROF_BASE_ATOMIC_FILE_H_

#include <cstdio>
#include <string>
#include <string_view>

#include "base/status.h"

namespace bbprof {

class AtomicFile {
 public:
  // "-" writes to standard output (not atomic, but never left half-renamed).
  static Result<AtomicFile> Create(const std::string& path);

  AtomicFile(AtomicFile&& other) noexcept;
  AtomicFile& operator=(AtomicFile&& other) noexcept;
  AtomicFile(const AtomicFile&) = delete;
  AtomicFile& operator=(const AtomicFile&) = delete;
  ~AtomicFile();

  Status Write(std::string_view bytes);
  Status Write(const void* data, size_t size);
  // Flushes, syncs and renames into place. After Commit the object is closed.
  Status Commit();
  // Removes the temporary file without touching the destination.
  void Abandon();

  const std::string& path() const { return path_; }
  bool is_stdout() const { return is_stdout_; }

 private:
  AtomicFile() = default;
  std::string path_;
  std::string temp_path_;
  std::FILE* file_ = nullptr;
  bool is_stdout_ = false;
};

// Writes a whole string to a file atomically.
Status WriteFileAtomically(const std::string& path, std::string_view contents);

// Reads a whole (small) file, e.g. a configuration or a result JSON.
Result<std::string> ReadWholeFile(const std::string& path);

}  // namespace bbprof

#endif  // BBPROF_BASE_ATOMIC_FILE_H_
