#include "capture/decoders/hpack.h"

#include <nghttp2/nghttp2.h>

namespace bbprof::capture {

HpackDecoder::HpackDecoder() {
  if (nghttp2_hd_inflate_new(&inflater_) != 0) {
    inflater_ = nullptr;
    broken_ = true;  // out of memory: no names, but no crash either
  }
}

HpackDecoder::~HpackDecoder() {
  if (inflater_ != nullptr) nghttp2_hd_inflate_del(inflater_);
}

bool HpackDecoder::Decode(std::span<const std::byte> block,
                          const FieldFn& field) {
  if (broken_) return false;
  // nghttp2 takes a mutable pointer but does not write through it.
  auto* in =
      const_cast<uint8_t*>(reinterpret_cast<const uint8_t*>(block.data()));
  size_t left = block.size();
  while (true) {
    nghttp2_nv nv;
    int flags = 0;
    ssize_t n = nghttp2_hd_inflate_hd2(inflater_, &nv, &flags, in, left, 1);
    if (n < 0) {
      broken_ = true;
      return false;
    }
    in += n;
    left -= static_cast<size_t>(n);
    if ((flags & NGHTTP2_HD_INFLATE_EMIT) != 0) {
      field(
          std::string_view(reinterpret_cast<const char*>(nv.name), nv.namelen),
          std::string_view(reinterpret_cast<const char*>(nv.value),
                           nv.valuelen));
    }
    if ((flags & NGHTTP2_HD_INFLATE_FINAL) != 0) {
      nghttp2_hd_inflate_end_headers(inflater_);
      return true;
    }
    if ((flags & NGHTTP2_HD_INFLATE_EMIT) == 0 && left == 0) {
      broken_ = true;  // in_final was set: the block ended inside a field
      return false;
    }
  }
}

void HpackDecoder::SetMaxTableSize(uint32_t size) {
  if (broken_) return;
  if (nghttp2_hd_inflate_change_table_size(inflater_, size) != 0)
    broken_ = true;
}

}  // namespace bbprof::capture
