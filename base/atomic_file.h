// AtomicFile: how every output of bbprof is written, by one rule.
//
// - A regular file, or a path where nothing exists yet, is replaced
//   atomically: data goes to a temporary file in the destination's folder;
//   Commit() flushes, fsyncs and renames it over the destination. A run that
//   fails leaves the old file, if any, untouched, and the temporary is
//   removed (by the destructor, or on SIGINT/SIGTERM by base/interrupt.h).
//   The new file keeps the old one's mode (and owner, where permitted).
// - A symbolic link is followed: its final target is the file replaced (the
//   temporary goes in the target's folder), and the link stays a link.
// - A character device (/dev/null, a terminal) or a FIFO is written straight
//   into: no temporary, no rename, no fsync. Such an output is not atomic.
// - "-" is standard output (not atomic either).
// - A folder, a block device or a socket is refused.
#ifndef BBPROF_BASE_ATOMIC_FILE_H_
#define BBPROF_BASE_ATOMIC_FILE_H_

#include <cstdio>
#include <string>
#include <string_view>

#include "base/status.h"

namespace bbprof {

class AtomicFile {
 public:
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
  // Whether the output replaces its destination atomically (false for
  // standard output, character devices and FIFOs).
  bool atomic() const { return !temp_path_.empty(); }

 private:
  AtomicFile() = default;
  std::string path_;        // as the user gave it, for messages
  std::string final_path_;  // where the temporary is renamed to
  std::string temp_path_;
  std::FILE* file_ = nullptr;
  bool is_stdout_ = false;
  int temp_handle_ = -1;  // in the interrupt registry
};

// Where an output named `path` lands, by the rule above.
struct OutputTarget {
  enum class Kind {
    kStdout,  // "-"
    kStream,  // a character device or a FIFO: written straight into
    kFile,    // a regular file, existing or new: replaced atomically
  };
  Kind kind = Kind::kFile;
  // kStream: the path as given; kFile: the file the links lead to.
  std::string path;
  bool exists = false;  // kFile: whether there is a file to replace
};
// An error for a folder, a block device, a socket or a link loop.
Result<OutputTarget> ResolveOutput(const std::string& path);

// Renames the finished file `from` over the output `to` by the same rule:
// through links, keeping the mode (and owner) of the file it replaces. `from`
// must be in the folder of `to`'s target (capture's OUT.partial is).
Status MoveOutputIntoPlace(const std::string& from, const std::string& to);

// Whether this process could write the output `path` (a file, device, FIFO,
// "-", or a folder new files go into), checked before long work starts (e.g.
// capture after dropping privileges). An error names the path and the cause.
Status CheckOutputWritable(const std::string& path);

// Writes a whole string to a file atomically.
Status WriteFileAtomically(const std::string& path, std::string_view contents);

// Reads a whole (small) file, e.g. a configuration or a result JSON.
Result<std::string> ReadWholeFile(const std::string& path);

}  // namespace bbprof

#endif  // BBPROF_BASE_ATOMIC_FILE_H_
