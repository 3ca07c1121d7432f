#include <gtest/gtest.h>

#include "capture/decoders/decoders.h"
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
  for (size_t i = 0; i < length; ++i) v.push_back(std::byte{0x5a});
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

}  // namespace
}  // namespace bbprof::capture
