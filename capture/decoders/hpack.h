// HPACK (RFC 7541) header-block decoding for the HTTP/2 decoder, through
// libnghttp2's inflater: the static and dynamic tables and the Huffman code
// are the library's (a well-kept, fuzzed implementation; ours would be a
// few hundred lines of tables to get exactly right). One instance per
// direction of a connection: HPACK state is per encoder.
#ifndef BBPROF_CAPTURE_DECODERS_HPACK_H_
#define BBPROF_CAPTURE_DECODERS_HPACK_H_

#include <cstddef>
#include <cstdint>
#include <functional>
#include <span>
#include <string_view>

struct nghttp2_hd_inflater;

namespace bbprof::capture {

class HpackDecoder {
 public:
  HpackDecoder();
  ~HpackDecoder();
  HpackDecoder(const HpackDecoder&) = delete;
  HpackDecoder& operator=(const HpackDecoder&) = delete;

  using FieldFn =
      std::function<void(std::string_view name, std::string_view value)>;
  // Decodes one whole header block (a HEADERS frame's fragment and its
  // CONTINUATIONs, padding and priority removed), calling `field` for each
  // header in order. False if the block does not decode: the dynamic table
  // is then out of step with the encoder's and this decoder stays broken.
  bool Decode(std::span<const std::byte> block, const FieldFn& field);
  // SETTINGS_HEADER_TABLE_SIZE as the peer decoding this direction set it:
  // the most the encoder may grow its dynamic table to.
  void SetMaxTableSize(uint32_t size);
  // A block was lost (a capture hole) or failed: nothing decodes any more.
  void Break() { broken_ = true; }
  bool broken() const { return broken_; }

 private:
  nghttp2_hd_inflater* inflater_ = nullptr;
  bool broken_ = false;
};

}  // namespace bbprof::capture

#endif  // BBPROF_CAPTURE_DECODERS_HPACK_H_
