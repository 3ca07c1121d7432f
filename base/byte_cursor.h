// ByteCursor: every byte of packet input goes through this one bounds-checked
// reader over std::span<const std::byte> (style.md, after libtins'
// memory_helpers.h). Reads past the end never touch memory: they fail, set
// the cursor's error flag and return zero, so a decoder checks ok() once
// after a run of reads instead of before each one.
#ifndef BBPROF_BASE_BYTE_CURSOR_H_
#define BBPROF_BASE_BYTE_CURSOR_H_

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>
#include <string_view>

namespace bbprof {

class ByteCursor {
 public:
  ByteCursor() = default;
  explicit ByteCursor(std::span<const std::byte> data) : data_(data) {}

  size_t remaining() const { return data_.size() - pos_; }
  size_t position() const { return pos_; }
  bool ok() const { return ok_; }
  bool empty() const { return remaining() == 0; }
  std::span<const std::byte> rest() const { return data_.subspan(pos_); }

  bool Skip(size_t n) {
    if (!Need(n)) return false;
    pos_ += n;
    return true;
  }
  uint8_t U8() {
    if (!Need(1)) return 0;
    return static_cast<uint8_t>(data_[pos_++]);
  }
  // Network byte order (big endian), as on the wire.
  uint16_t U16() { return static_cast<uint16_t>(ReadBig(2)); }
  uint32_t U32() { return static_cast<uint32_t>(ReadBig(4)); }
  uint64_t U64() { return ReadBig(8); }
  // Little endian (pcap headers of the other byte order, BSD loopback).
  uint16_t U16Le() { return static_cast<uint16_t>(ReadLittle(2)); }
  uint32_t U32Le() { return static_cast<uint32_t>(ReadLittle(4)); }

  // A view of the next n bytes (empty and error if fewer remain).
  std::span<const std::byte> Bytes(size_t n) {
    if (!Need(n)) return {};
    auto s = data_.subspan(pos_, n);
    pos_ += n;
    return s;
  }
  // Copies a fixed-size wire header (a struct with a static_assert on its
  // size) out of the stream.
  template <typename T>
  bool Read(T* out) {
    if (!Need(sizeof(T))) return false;
    std::memcpy(out, data_.data() + pos_, sizeof(T));
    pos_ += sizeof(T);
    return true;
  }
  // Peeks without consuming; 0 and no error flag if out of range.
  uint8_t PeekU8(size_t offset = 0) const {
    return pos_ + offset < data_.size()
               ? static_cast<uint8_t>(data_[pos_ + offset])
               : 0;
  }

 private:
  bool Need(size_t n) {
    if (!ok_ || n > remaining()) {
      ok_ = false;
      return false;
    }
    return true;
  }
  uint64_t ReadBig(size_t n) {
    if (!Need(n)) return 0;
    uint64_t v = 0;
    for (size_t i = 0; i < n; ++i) v = (v << 8) | static_cast<uint8_t>(data_[pos_ + i]);
    pos_ += n;
    return v;
  }
  uint64_t ReadLittle(size_t n) {
    if (!Need(n)) return 0;
    uint64_t v = 0;
    for (size_t i = n; i-- > 0;) v = (v << 8) | static_cast<uint8_t>(data_[pos_ + i]);
    pos_ += n;
    return v;
  }

  std::span<const std::byte> data_;
  size_t pos_ = 0;
  bool ok_ = true;
};

inline std::span<const std::byte> AsBytes(std::string_view s) {
  return std::as_bytes(std::span<const char>(s.data(), s.size()));
}

}  // namespace bbprof

#endif  // BBPROF_BASE_BYTE_CURSOR_H_
