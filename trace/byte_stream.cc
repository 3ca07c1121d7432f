#include "trace/byte_stream.h"

#include <fcntl.h>
#include <libdeflate.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>
#include <zstd.h>

#include <cerrno>
#include <cstring>
#include <vector>

#include "base/interrupt.h"

namespace bbprof::trace {

namespace {

constexpr size_t kChunk = 1 << 18;

// Plain file or standard input, with a few bytes of look-ahead that were
// already read to sniff the compression magic.
class FileInput final : public InputStream {
 public:
  FileInput(int fd, bool owns, std::string path)
      : fd_(fd), owns_(owns), path_(std::move(path)) {}
  ~FileInput() override {
    if (owns_) ::close(fd_);
  }

  // Reads up to 4 bytes without consuming them.
  Result<std::string_view> Peek4() {
    while (peek_len_ < 4) {
      if (!WaitReadable(fd_)) return Interrupted();
      ssize_t n = ::read(fd_, peek_ + peek_len_, 4 - peek_len_);
      if (n < 0) {
        if (errno == EINTR) continue;
        return Status::Error(path_ + ": read failed: " + std::strerror(errno));
      }
      if (n == 0) break;
      crc_ = libdeflate_crc32(crc_, peek_ + peek_len_, static_cast<size_t>(n));
      peek_len_ += static_cast<size_t>(n);
      raw_ += static_cast<uint64_t>(n);
    }
    return std::string_view(peek_, peek_len_);
  }

  Result<size_t> Read(char* buf, size_t size) override {
    if (peek_pos_ < peek_len_) {
      size_t n = std::min(size, peek_len_ - peek_pos_);
      std::memcpy(buf, peek_ + peek_pos_, n);
      peek_pos_ += n;
      return n;
    }
    for (;;) {
      if (!WaitReadable(fd_)) return Interrupted();
      ssize_t n = ::read(fd_, buf, size);
      if (n < 0) {
        if (errno == EINTR) continue;
        return Status::Error(path_ + ": read failed: " + std::strerror(errno));
      }
      raw_ += static_cast<uint64_t>(n);
      crc_ = libdeflate_crc32(crc_, buf, static_cast<size_t>(n));
      return static_cast<size_t>(n);
    }
  }
  uint64_t raw_bytes_read() const override { return raw_; }
  uint32_t raw_crc32() const override { return crc_; }

 private:
  // A pipe that stays open would block a read for ever; a graceful
  // interrupt (capture -r -) ends the wait instead (base/interrupt.h).
  Status Interrupted() const { return Status::Error(path_ + ": interrupted"); }

  int fd_;
  bool owns_;
  std::string path_;
  char peek_[4] = {};
  size_t peek_len_ = 0;
  size_t peek_pos_ = 0;
  uint64_t raw_ = 0;
  uint32_t crc_ = 0;
};

class GzipInput final : public InputStream {
 public:
  GzipInput(std::unique_ptr<FileInput> src, std::string path)
      : src_(std::move(src)), path_(std::move(path)), in_(kChunk) {
    std::memset(&z_, 0, sizeof z_);
    // 15 + 32: zlib or gzip header, detected automatically.
    ok_ = inflateInit2(&z_, 15 + 32) == Z_OK;
  }
  ~GzipInput() override { inflateEnd(&z_); }

  Result<size_t> Read(char* buf, size_t size) override {
    if (!ok_) return Status::Error(path_ + ": cannot initialise gzip decoder");
    z_.next_out = reinterpret_cast<Bytef*>(buf);
    z_.avail_out = static_cast<uInt>(size);
    while (z_.avail_out == size) {
      if (z_.avail_in == 0) {
        if (src_eof_) {
          if (in_member_) {
            return Status::Error(path_ + ": truncated gzip stream");
          }
          break;
        }
        Result<size_t> n = src_->Read(in_.data(), in_.size());
        if (!n.ok()) return n.status();
        if (*n == 0) {
          src_eof_ = true;
          continue;
        }
        z_.next_in = reinterpret_cast<Bytef*>(in_.data());
        z_.avail_in = static_cast<uInt>(*n);
      }
      in_member_ = true;
      int rc = inflate(&z_, Z_NO_FLUSH);
      if (rc == Z_STREAM_END) {
        // Concatenated gzip members are one stream (as gzip -d treats them).
        in_member_ = false;
        inflateReset(&z_);
        continue;
      }
      if (rc != Z_OK && rc != Z_BUF_ERROR) {
        return Status::Error(path_ + ": corrupt gzip data" +
                             (z_.msg ? std::string(" (") + z_.msg + ")" : ""));
      }
    }
    return size - z_.avail_out;
  }
  uint64_t raw_bytes_read() const override { return src_->raw_bytes_read(); }
  uint32_t raw_crc32() const override { return src_->raw_crc32(); }

 private:
  std::unique_ptr<FileInput> src_;
  std::string path_;
  std::vector<char> in_;
  z_stream z_;
  bool ok_ = false;
  bool src_eof_ = false;
  bool in_member_ = false;
};

class ZstdInput final : public InputStream {
 public:
  ZstdInput(std::unique_ptr<FileInput> src, std::string path)
      : src_(std::move(src)),
        path_(std::move(path)),
        in_(ZSTD_DStreamInSize()),
        ds_(ZSTD_createDStream()) {
    ZSTD_initDStream(ds_);
  }
  ~ZstdInput() override { ZSTD_freeDStream(ds_); }

  Result<size_t> Read(char* buf, size_t size) override {
    ZSTD_outBuffer out{buf, size, 0};
    while (out.pos == 0) {
      if (inb_.pos == inb_.size) {
        if (src_eof_) {
          if (last_ret_ != 0) {
            return Status::Error(path_ + ": truncated zstd stream");
          }
          break;
        }
        Result<size_t> n = src_->Read(in_.data(), in_.size());
        if (!n.ok()) return n.status();
        if (*n == 0) {
          src_eof_ = true;
          continue;
        }
        inb_ = ZSTD_inBuffer{in_.data(), *n, 0};
      }
      size_t ret = ZSTD_decompressStream(ds_, &out, &inb_);
      if (ZSTD_isError(ret)) {
        return Status::Error(path_ + ": corrupt zstd data (" +
                             ZSTD_getErrorName(ret) + ")");
      }
      last_ret_ = ret;
    }
    return out.pos;
  }
  uint64_t raw_bytes_read() const override { return src_->raw_bytes_read(); }
  uint32_t raw_crc32() const override { return src_->raw_crc32(); }

 private:
  std::unique_ptr<FileInput> src_;
  std::string path_;
  std::vector<char> in_;
  ZSTD_DStream* ds_;
  ZSTD_inBuffer inb_{nullptr, 0, 0};
  size_t last_ret_ = 0;
  bool src_eof_ = false;
};

class PlainOutput final : public OutputStream {
 public:
  explicit PlainOutput(AtomicFile f) : f_(std::move(f)) {}
  Status Write(const char* data, size_t size) override {
    return f_.Write(data, size);
  }
  Status Close() override { return f_.Commit(); }

 private:
  AtomicFile f_;
};

class GzipOutput final : public OutputStream {
 public:
  explicit GzipOutput(AtomicFile f) : f_(std::move(f)), out_(kChunk) {
    std::memset(&z_, 0, sizeof z_);
    // 15 + 16: gzip wrapper. Level 6 is gzip's own default.
    ok_ = deflateInit2(&z_, 6, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) ==
          Z_OK;
  }
  ~GzipOutput() override { deflateEnd(&z_); }
  Status Write(const char* data, size_t size) override {
    if (!ok_) return Status::Error(f_.path() + ": gzip encoder failed");
    z_.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(data));
    z_.avail_in = static_cast<uInt>(size);
    return Pump(Z_NO_FLUSH);
  }
  Status Close() override {
    BBPROF_RETURN_IF_ERROR(Pump(Z_FINISH));
    return f_.Commit();
  }

 private:
  Status Pump(int flush) {
    for (;;) {
      z_.next_out = reinterpret_cast<Bytef*>(out_.data());
      z_.avail_out = static_cast<uInt>(out_.size());
      int rc = deflate(&z_, flush);
      if (rc == Z_STREAM_ERROR) {
        return Status::Error(f_.path() + ": gzip encoder failed");
      }
      BBPROF_RETURN_IF_ERROR(f_.Write(out_.data(), out_.size() - z_.avail_out));
      if (flush == Z_FINISH ? rc == Z_STREAM_END : z_.avail_in == 0) break;
    }
    return Status::Ok();
  }
  AtomicFile f_;
  std::vector<char> out_;
  z_stream z_;
  bool ok_ = false;
};

class ZstdOutput final : public OutputStream {
 public:
  explicit ZstdOutput(AtomicFile f)
      : f_(std::move(f)),
        out_(ZSTD_CStreamOutSize()),
        cs_(ZSTD_createCCtx()) {
    ZSTD_CCtx_setParameter(cs_, ZSTD_c_compressionLevel, 3);
  }
  ~ZstdOutput() override { ZSTD_freeCCtx(cs_); }
  Status Write(const char* data, size_t size) override {
    ZSTD_inBuffer in{data, size, 0};
    while (in.pos < in.size) {
      BBPROF_RETURN_IF_ERROR(Step(&in, ZSTD_e_continue, nullptr));
    }
    return Status::Ok();
  }
  Status Close() override {
    ZSTD_inBuffer in{nullptr, 0, 0};
    size_t remaining = 1;
    while (remaining != 0) {
      BBPROF_RETURN_IF_ERROR(Step(&in, ZSTD_e_end, &remaining));
    }
    return f_.Commit();
  }

 private:
  Status Step(ZSTD_inBuffer* in, ZSTD_EndDirective mode, size_t* remaining) {
    ZSTD_outBuffer out{out_.data(), out_.size(), 0};
    size_t rc = ZSTD_compressStream2(cs_, &out, in, mode);
    if (ZSTD_isError(rc)) {
      return Status::Error(f_.path() + ": zstd encoder failed (" +
                           ZSTD_getErrorName(rc) + ")");
    }
    if (remaining != nullptr) *remaining = rc;
    return f_.Write(out_.data(), out.pos);
  }
  AtomicFile f_;
  std::vector<char> out_;
  ZSTD_CCtx* cs_;
};

bool EndsWith(std::string_view s, std::string_view suffix) {
  return s.size() >= suffix.size() &&
         s.substr(s.size() - suffix.size()) == suffix;
}

}  // namespace

Result<std::unique_ptr<InputStream>> OpenInputStream(const std::string& path) {
  std::unique_ptr<FileInput> file;
  if (path == "-") {
    file = std::make_unique<FileInput>(STDIN_FILENO, false, "standard input");
  } else {
    int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
      return Status::Error(path + ": cannot open: " + std::strerror(errno));
    }
    struct stat st;
    if (fstat(fd, &st) == 0 && S_ISDIR(st.st_mode)) {
      ::close(fd);
      return Status::Error(path + ": is a directory, not a trace file");
    }
    posix_fadvise(fd, 0, 0, POSIX_FADV_SEQUENTIAL);
    file = std::make_unique<FileInput>(fd, true, path);
  }
  Result<std::string_view> head = file->Peek4();
  if (!head.ok()) return head.status();
  std::string_view h = *head;
  const std::string name = path == "-" ? "standard input" : path;
  if (h.size() >= 2 && static_cast<unsigned char>(h[0]) == 0x1f &&
      static_cast<unsigned char>(h[1]) == 0x8b) {
    return std::unique_ptr<InputStream>(
        std::make_unique<GzipInput>(std::move(file), name));
  }
  if (h.size() >= 4 && h == std::string_view("\x28\xb5\x2f\xfd", 4)) {
    return std::unique_ptr<InputStream>(
        std::make_unique<ZstdInput>(std::move(file), name));
  }
  return std::unique_ptr<InputStream>(std::move(file));
}

uint64_t FileSizeOrZero(const std::string& path) {
  if (path == "-") return 0;
  struct stat st;
  if (::stat(path.c_str(), &st) != 0 || !S_ISREG(st.st_mode)) return 0;
  return static_cast<uint64_t>(st.st_size);
}

Compression CompressionForPath(std::string_view path) {
  if (EndsWith(path, ".gz")) return Compression::kGzip;
  if (EndsWith(path, ".zst")) return Compression::kZstd;
  return Compression::kNone;
}

Result<std::unique_ptr<OutputStream>> OpenOutputStream(const std::string& path) {
  Result<AtomicFile> f = AtomicFile::Create(path);
  if (!f.ok()) return f.status();
  switch (CompressionForPath(path)) {
    case Compression::kGzip:
      return std::unique_ptr<OutputStream>(
          std::make_unique<GzipOutput>(std::move(*f)));
    case Compression::kZstd:
      return std::unique_ptr<OutputStream>(
          std::make_unique<ZstdOutput>(std::move(*f)));
    case Compression::kNone:
      break;
  }
  return std::unique_ptr<OutputStream>(
      std::make_unique<PlainOutput>(std::move(*f)));
}

}  // namespace bbprof::trace
