// Helpers shared by the libFuzzer targets of fuzz/ (docs/fuzzing.md): an
// input held in memory under a path (for the readers that open paths:
// traces, captures), in-memory byte streams for the trace writers, and the
// invariants every record a reader hands out must keep. A broken invariant
// is a bug, not bad input: FUZZ_CHECK aborts so libFuzzer saves the input.
#ifndef BBPROF_FUZZ_FUZZ_UTIL_H_
#define BBPROF_FUZZ_FUZZ_UTIL_H_

#include <sys/mman.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <string_view>

#include "trace/byte_stream.h"
#include "trace/reader.h"
#include "trace/record.h"
#include "trace/timestamp.h"
#include "trace/token.h"

namespace bbprof::fuzz {

#define FUZZ_CHECK(cond, what)                                             \
  do {                                                                     \
    if (!(cond)) {                                                         \
      std::fprintf(stderr, "%s:%d: invariant broken: %s (%s)\n", __FILE__, \
                   __LINE__, #cond, std::string(what).c_str());            \
      std::abort();                                                        \
    }                                                                      \
  } while (0)

// One anonymous in-memory file (memfd), reused for every input, reachable
// by path as /proc/self/fd/N: the readers open it as they open any file
// (magic sniffing, gzip/zstd), and nothing touches the disk.
class MemFile {
 public:
  MemFile() : fd_(memfd_create("bbprof-fuzz", 0)) {
    FUZZ_CHECK(fd_ >= 0, "memfd_create failed");
    path_ = "/proc/self/fd/" + std::to_string(fd_);
  }
  ~MemFile() { close(fd_); }
  MemFile(const MemFile&) = delete;
  MemFile& operator=(const MemFile&) = delete;

  // Replaces the contents; returns the path to open.
  const std::string& Set(std::string_view bytes) {
    FUZZ_CHECK(ftruncate(fd_, 0) == 0, "ftruncate");
    size_t done = 0;
    while (done < bytes.size()) {
      ssize_t n = pwrite(fd_, bytes.data() + done, bytes.size() - done,
                         static_cast<off_t>(done));
      FUZZ_CHECK(n > 0, "pwrite");
      done += static_cast<size_t>(n);
    }
    return path_;
  }

 private:
  int fd_;
  std::string path_;
};

// Bytes written by a trace writer, kept in a string the caller owns.
class StringOutput final : public trace::OutputStream {
 public:
  explicit StringOutput(std::string* out) : out_(out) {}
  Status Write(const char* data, size_t size) override {
    out_->append(data, size);
    return Status::Ok();
  }
  Status Close() override { return Status::Ok(); }

 private:
  std::string* out_;
};

// A string read as a trace's byte stream.
class StringInput final : public trace::InputStream {
 public:
  explicit StringInput(std::string_view bytes) : bytes_(bytes) {}
  Result<size_t> Read(char* buf, size_t size) override {
    size_t n = std::min(size, bytes_.size() - pos_);
    std::memcpy(buf, bytes_.data() + pos_, n);
    pos_ += n;
    return n;
  }
  uint64_t raw_bytes_read() const override { return pos_; }
  uint32_t raw_crc32() const override { return 0; }

 private:
  std::string_view bytes_;
  size_t pos_ = 0;
};

// What every reader promises about a record it hands out (trace/token.h,
// trace/timestamp.h): a timestamp in range, known nodes with valid names,
// valid callid, pathid and op tokens.
inline void CheckRecord(const trace::Record& rec,
                        const trace::NodeTable& nodes) {
  FUZZ_CHECK(trace::InTimeRange(rec.ts_ns), std::to_string(rec.ts_ns));
  FUZZ_CHECK(rec.sender < nodes.size() && rec.receiver < nodes.size(),
             "node id out of the table");
  for (trace::NodeId id : {rec.sender, rec.receiver}) {
    std::string why =
        trace::CheckToken(nodes.Name(id), trace::TokenKind::kNodeName);
    FUZZ_CHECK(why.empty(), why);
  }
  if (!rec.callid_is_number && !rec.callid.empty()) {
    std::string why = trace::CheckToken(rec.callid, trace::TokenKind::kCallid);
    FUZZ_CHECK(why.empty(), why);
  }
  if (!rec.pathid_is_number && !rec.pathid.empty()) {
    std::string why = trace::CheckToken(rec.pathid, trace::TokenKind::kPathid);
    FUZZ_CHECK(why.empty(), why);
  }
  if (!rec.op.empty()) {
    std::string why = trace::CheckToken(rec.op, trace::TokenKind::kOp);
    FUZZ_CHECK(why.empty(), why);
  }
}

}  // namespace bbprof::fuzz

#endif  // BBPROF_FUZZ_FUZZ_UTIL_H_
