#include <gtest/gtest.h>

#include "capture/decoders/decoders.h"
#include "capture/decoders/op_names.h"
#include "tests/capture/decoders/test_sink.h"

namespace bbprof::capture {
namespace {

constexpr Direction kC = Direction::kToServer;
constexpr Direction kS = Direction::kToClient;
constexpr std::string_view kPreface = "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";

void Frame(std::vector<std::byte>& v, uint8_t type, uint8_t flags,
           uint32_t stream, size_t length) {
  v.push_back(static_cast<std::byte>(length >> 16));
  Put16(v, static_cast<uint16_t>(length));
  v.push_back(static_cast<std::byte>(type));
  v.push_back(static_cast<std::byte>(flags));
  Put32(v, stream);
  // Header blocks are HPACK: 0x82 is a whole field (":method: GET"), so
  // any length (priority fields included) decodes.
  std::byte fill = type == 1 || type == 9 ? std::byte{0x82} : std::byte{0x5a};
  for (size_t i = 0; i < length; ++i) v.push_back(fill);
}

// Client: preface, SETTINGS, HEADERS (no END_HEADERS) + CONTINUATION on
// stream 1, padded DATA with END_STREAM, HEADERS+END_STREAM on stream 3,
// PING, WINDOW_UPDATE.
std::vector<std::byte> ClientBytes() {
  std::vector<std::byte> c = Bytes(kPreface);
  Frame(c, 4, 0, 0, 12);
  Frame(c, 1, 0x20, 1, 20);  // PRIORITY flag, no END_HEADERS
  Frame(c, 9, 0x4, 1, 7);
  Frame(c, 0, 0x9, 1, 30);  // PADDED | END_STREAM
  Frame(c, 1, 0x5, 3, 11);
  Frame(c, 6, 0, 0, 8);
  Frame(c, 8, 0, 0, 4);
  return c;
}

// Server: SETTINGS, HEADERS on 3, DATA+END_STREAM on 3, HEADERS on 1,
// DATA on 1, trailers HEADERS+END_STREAM on 1.
std::vector<std::byte> ServerBytes() {
  std::vector<std::byte> s;
  Frame(s, 4, 0, 0, 6);
  Frame(s, 1, 0x4, 3, 5);
  Frame(s, 0, 0x1, 3, 10);
  Frame(s, 1, 0x4, 1, 5);
  Frame(s, 0, 0x0, 1, 100);
  Frame(s, 1, 0x5, 1, 3);
  return s;
}

TEST(Http2, CallsAtClientHeadersReturnsAtFirstResponseHeadersSplitEverywhere) {
  auto c = ClientBytes();
  auto s = ServerBytes();
  size_t c3 = c.size() - (9 + 11) - (9 + 8) - (9 + 4);
  size_t s3 = 9 + 6, s1 = s3 + 9 + 5 + 9 + 10;
  for (size_t split = 0; split <= std::max(c.size(), s.size()); ++split) {
    RecordingSink sink;
    auto d = FindDecoder("http2")->make_stream(sink);
    size_t cs = std::min(split, c.size()), ss = std::min(split, s.size());
    d->OnData(kC, 1, Span(c).subspan(0, cs));
    d->OnData(kC, 2, Span(c).subspan(cs));
    d->OnData(kS, 1, Span(s).subspan(0, ss));
    d->OnData(kS, 2, Span(s).subspan(ss));
    auto at = [](size_t start, size_t sp) { return start < sp ? "1" : "2"; };
    std::string want = std::string("C1@") + at(kPreface.size() + 21, cs) +
                       " C3@" + at(c3, cs) + " R3@" + at(s3, ss) + " R1@" +
                       at(s1, ss);
    ASSERT_EQ(sink.Summary(), want) << split;
    ASSERT_TRUE(sink.counts.empty()) << split;
  }
}

TEST(Http2, EndStreamVariantReturnsAtTheLastFrame) {
  RecordingSink sink;
  auto d = FindDecoder("http2-end")->make_stream(sink);
  auto s = ServerBytes();
  d->OnData(kC, 1, Span(ClientBytes()));
  d->OnData(kS, 2, Span(s).subspan(0, 40));
  d->OnData(kS, 3, Span(s).subspan(40));
  // R3: DATA+END_STREAM at offset 29 (in the first part); R1: trailers.
  EXPECT_EQ(sink.Summary(), "C1@1 C3@1 R3@2 R1@3");
}

TEST(Http2, ResetsAndGoaway) {
  RecordingSink sink;
  auto d = FindDecoder("http2")->make_stream(sink);
  std::vector<std::byte> c = Bytes(kPreface);
  Frame(c, 1, 0x4, 1, 4);
  Frame(c, 1, 0x4, 3, 4);
  Frame(c, 3, 0, 3, 4);  // client cancels 3
  d->OnData(kC, 1, Span(c));
  std::vector<std::byte> s;
  Frame(s, 3, 0, 1, 4);  // server refuses 1: that is its answer
  Frame(s, 7, 0, 0, 8);
  d->OnData(kS, 2, Span(s));
  EXPECT_EQ(sink.Summary(), "C1@1 C3@1 R1@2");
  EXPECT_EQ(sink.count("http2_stream_reset"), 2u);
  EXPECT_EQ(sink.count("http2_goaway"), 1u);
}

TEST(Http2, MissingPrefaceAndGapsResynchronise) {
  RecordingSink sink;
  auto d = FindDecoder("http2")->make_stream(sink);
  std::vector<std::byte> c;
  Frame(c, 1, 0x4, 5, 10);
  Frame(c, 0, 0x1, 5, 10);
  d->OnData(kC, 1, Span(c));
  d->OnGap(kC, 1000);
  std::vector<std::byte> c2 = Bytes("tail of a lost frame.");
  Frame(c2, 1, 0x4, 7, 10);
  Frame(c2, 0, 0x1, 7, 10);
  d->OnData(kC, 2, Span(c2));
  EXPECT_EQ(sink.Summary(), "C5@1 C7@2");
  EXPECT_EQ(sink.count("http2_missing_preface"), 1u);
  EXPECT_EQ(sink.count("http2_resync"), 1u);
}

TEST(Http2Probe, PrefaceOrFrames) {
  const DecoderInfo* h2 = FindDecoder("http2");
  EXPECT_EQ(h2->probe_stream(Bytes(kPreface)), 100);
  std::vector<std::byte> c;
  Frame(c, 1, 0x4, 1, 20);
  Frame(c, 0, 0x1, 1, 5);
  EXPECT_GT(h2->probe_stream(Span(c)), 0);
  EXPECT_EQ(h2->probe_stream(Bytes("GET / HTTP/1.1\r\n\r\n")), 0);
  EXPECT_EQ(h2->probe_stream(Bytes("*3\r\n$3\r\nSET\r\n")), 0);
}

// A HEADERS frame carrying `block` (an HPACK header block).
void HeadersFrame(std::vector<std::byte>& v, uint8_t flags, uint32_t stream,
                  std::string_view block) {
  v.push_back(static_cast<std::byte>(block.size() >> 16));
  Put16(v, static_cast<uint16_t>(block.size()));
  v.push_back(std::byte{1});
  v.push_back(static_cast<std::byte>(flags));
  Put32(v, stream);
  Append(v, AsBytes(block));
}

// HPACK (RFC 7541) by hand: indexed fields (0x80 | index), and literals with
// incremental indexing of an indexed name (0x40 | index), value not Huffman.
std::string Literal(uint8_t name_index, std::string_view value) {
  return std::string(1, static_cast<char>(0x40 | name_index)) +
         static_cast<char>(value.size()) + std::string(value);
}

TEST(Http2, CallsNameTheirGrpcMethodOrHttpRouteThroughTheDynamicTable) {
  std::vector<std::byte> c = Bytes(kPreface);
  // POST (3), :path literal (4), content-type literal (31): both indexed
  // into the dynamic table (62: content-type, 63: :path).
  HeadersFrame(c, 0x4, 1,
               "\x83" + Literal(4, "/helloworld.Greeter/SayHello") +
                   Literal(31, "application/grpc+proto"));
  // The same again from the dynamic table alone.
  HeadersFrame(c, 0x4, 3, "\x83\xbf\xbe");
  // GET (2), a literal :path with a number, no gRPC content-type; then
  // padded (0x8) with priority (0x20) and split by a CONTINUATION.
  std::string block = "\x82" + Literal(4, "/item/42?q=1");
  std::string first =
      std::string("\x02") + std::string(5, '\0') + block.substr(0, 3) + "pp";
  HeadersFrame(c, 0x28, 5, first);
  std::vector<std::byte> cont;
  HeadersFrame(cont, 0x4, 5, block.substr(3));
  cont[3] = std::byte{9};  // CONTINUATION
  Append(c, cont);
  for (size_t split = 0; split <= c.size(); ++split) {
    RecordingSink sink;
    auto d = FindDecoder("http2")->make_stream(sink);
    d->OnData(kC, 1, Span(c).subspan(0, split));
    d->OnData(kC, 2, Span(c).subspan(split));
    ASSERT_EQ(
        sink.CallOps(),
        "grpc:/helloworld.Greeter/SayHello grpc:/helloworld.Greeter/SayHello "
        "http:GET:/item/{n}")
        << split;
    ASSERT_TRUE(sink.counts.empty()) << split;
  }
}

TEST(Http2, ServerSettingsGrowTheHeaderTableAndLostBlocksLeaveNoOp) {
  std::vector<std::byte> s;
  // SETTINGS_HEADER_TABLE_SIZE = 8192.
  s.insert(s.end(), {std::byte{0}, std::byte{0}, std::byte{6}, std::byte{4},
                     std::byte{0}});
  Put32(s, 0);
  Put16(s, 1);
  Put32(s, 8192);
  std::vector<std::byte> c = Bytes(kPreface);
  // A dynamic table size update to 8192 (0x3f e1 3f: 31 + 8161), then GET /.
  HeadersFrame(c, 0x4, 1, std::string("\x3f\xe1\x3f\x82\x84", 5));
  RecordingSink sink;
  auto d = FindDecoder("http2")->make_stream(sink);
  d->OnData(kS, 1, Span(s));
  d->OnData(kC, 2, Span(c));
  EXPECT_EQ(sink.CallOps(), "http:GET:/");
  // A hole in the client's bytes: later calls have no op, counted once.
  d->OnGap(kC, 100);
  std::vector<std::byte> more;
  HeadersFrame(more, 0x4, 3, "\x82\x84");
  HeadersFrame(more, 0x4, 5, "\x82\x84");
  d->OnData(kC, 3, Span(more));
  EXPECT_EQ(sink.CallOps(), "http:GET:/ - -");
  EXPECT_EQ(sink.count("http2_hpack_lost"), 1u);
}

}  // namespace
}  // namespace bbprof::capture
