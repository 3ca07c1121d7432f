// Byte streams under the trace readers and writers. Input: a file or standard
// input ("-"), decompressed on the fly when it starts with the gzip or zstd
// magic bytes (whatever its name). Output: a file written atomically (see
// base/atomic_file.h) or standard output, compressed when the name ends in
// ".gz" or ".zst". Both stream in fixed-size chunks: memory does not grow
// with the file.
#ifndef BBPROF_TRACE_BYTE_STREAM_H_
#define BBPROF_TRACE_BYTE_STREAM_H_

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "base/atomic_file.h"
#include "base/status.h"

namespace bbprof::trace {

class InputStream {
 public:
  virtual ~InputStream() = default;
  // Reads up to `size` bytes; returns 0 at end of input.
  virtual Result<size_t> Read(char* buf, size_t size) = 0;
  // Bytes consumed from the underlying file so far (compressed bytes for a
  // compressed file): for progress against the file size.
  virtual uint64_t raw_bytes_read() const = 0;
  // CRC-32 (the zlib/gzip polynomial) of those bytes, kept up to date as they
  // are read, so a result can name its input exactly without a second pass
  // (nest records it; eval checks the truth trace against it).
  virtual uint32_t raw_crc32() const = 0;
};

// Opens `path` ("-" = standard input), detecting gzip/zstd compression.
Result<std::unique_ptr<InputStream>> OpenInputStream(const std::string& path);

// Size of the file in bytes, or 0 if unknown (standard input, a pipe).
uint64_t FileSizeOrZero(const std::string& path);

enum class Compression { kNone, kGzip, kZstd };
Compression CompressionForPath(std::string_view path);

class OutputStream {
 public:
  virtual ~OutputStream() = default;
  virtual Status Write(const char* data, size_t size) = 0;
  Status Write(std::string_view s) { return Write(s.data(), s.size()); }
  // Finishes compression, flushes and moves the file into place. Without a
  // successful Close the destination is left untouched.
  virtual Status Close() = 0;
};

Result<std::unique_ptr<OutputStream>> OpenOutputStream(const std::string& path);

}  // namespace bbprof::trace

#endif  // BBPROF_TRACE_BYTE_STREAM_H_
