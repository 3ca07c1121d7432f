#include "capture/decoders/truth_header.h"

#include <gtest/gtest.h>
#include <nghttp2/nghttp2.h>

#include "capture/decoders/decoders.h"
#include "tests/capture/decoders/test_sink.h"
#include "trace/token.h"

namespace bbprof::capture {
namespace {

constexpr Direction kC = Direction::kToServer;
constexpr Direction kS = Direction::kToClient;

// Records each event's pathid (AppEvent::pathid is valid during Emit only).
class TruthSink : public RecordingSink {
 public:
  explicit TruthSink(const std::vector<std::string>& names) : truth(names) {}
  void Emit(const AppEvent& e) override {
    RecordingSink::Emit(e);
    paths.emplace_back(e.pathid.empty() ? "-" : e.pathid);
  }
  const TruthHeaders* truth_headers() const override { return &truth; }
  std::string Paths() const {
    std::string s;
    for (const std::string& p : paths) s += (s.empty() ? "" : " ") + p;
    return s;
  }
  TruthHeaders truth;
  std::vector<std::string> paths;
};

TEST(RequestIdFromHeader, EachConventionGivesItsTraceId) {
  EXPECT_EQ(RequestIdFromHeader("X-Request-Id", " req-17 "), "req-17");
  EXPECT_EQ(RequestIdFromHeader(
                "traceparent",
                "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"),
            "4bf92f3577b34da6a3ce929d0e0e4736");
  EXPECT_EQ(RequestIdFromHeader("Uber-Trace-Id", "7f3a:1b2c:0:1"), "7f3a");
  EXPECT_EQ(RequestIdFromHeader(
                "b3", "80f198ee56343ba864fe8b2a57d3eff7-e457b5a2e4d86bd1-1"),
            "80f198ee56343ba864fe8b2a57d3eff7");
  EXPECT_EQ(RequestIdFromHeader("B3", "1"), "");  // a sampling flag only
  EXPECT_EQ(RequestIdFromHeader("X-B3-TraceId", "a1b2c3"), "a1b2c3");
  // A pathid is a token: blanks, separators and non-ASCII are %-escaped.
  EXPECT_EQ(RequestIdFromHeader("x-request-id", "a b(c),d;e%f\xc3\xa9"),
            "a%20b%28c%29%2Cd%3Be%25f%C3%A9");
  EXPECT_EQ(RequestIdFromHeader("x-request-id", "-"), "%2D");
  EXPECT_EQ(RequestIdFromHeader("x-request-id", "  "), "");
}

TEST(TruthHeaders, NamesAreCaseInsensitiveAndRankedInOrder) {
  TruthHeaders t({"X-Request-Id", "traceparent", "x-request-id"});
  EXPECT_EQ(t.names(),
            (std::vector<std::string>{"x-request-id", "traceparent"}));
  EXPECT_EQ(t.Rank("X-REQUEST-ID"), 0);
  EXPECT_EQ(t.Rank("TraceParent"), 1);
  EXPECT_EQ(t.Rank("b3"), -1);
  EXPECT_EQ(TruthHeaders::ValidateName("X-Request-Id"), "");
  EXPECT_NE(TruthHeaders::ValidateName("X Request"), "");
  EXPECT_NE(TruthHeaders::ValidateName(""), "");
  EXPECT_NE(TruthHeaders::ValidateName("a:b"), "");

  // The first-ranked header present wins, whatever the order in the message.
  TruthHeaderScan scan(&t);
  scan.Header("traceparent", "00-abc-def-01");
  EXPECT_EQ(scan.pathid(), "abc");
  scan.Header("X-Request-ID", "r1");
  scan.Header("traceparent", "00-zzz-def-01");
  scan.Header("host", "x");
  EXPECT_EQ(scan.pathid(), "r1");
  scan.Reset(&t);
  EXPECT_EQ(scan.pathid(), "");
}

TEST(HttpTruth, KeepAliveRequestsAndTheirReturnsCarryTheirIdsSplitEverywhere) {
  const std::string req =
      "GET /item/1 HTTP/1.1\r\nHost: x\r\nX-Request-Id: r1\r\n\r\n"
      "POST /b HTTP/1.1\r\nx-request-id: r2\r\nContent-Length: 5\r\n\r\nhello"
      "GET /none HTTP/1.1\r\nHost: x\r\n\r\n";
  const std::string resp =
      "HTTP/1.1 200 OK\r\nContent-Length: 3\r\n\r\nabc"
      "HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n"
      "HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n";
  const size_t req2 = req.find("POST"), req3 = req.find("GET /none");
  for (size_t split = 0; split <= req.size(); ++split) {
    TruthSink sink({"X-Request-Id"});
    auto d = FindDecoder("http")->make_stream(sink);
    d->OnData(kC, 1, AsBytes(std::string_view(req).substr(0, split)));
    d->OnData(kC, 2, AsBytes(std::string_view(req).substr(split)));
    d->OnData(kS, 3, AsBytes(resp));
    // Calls keep the time of their first byte although they are emitted at
    // the end of their headers.
    auto at = [&](size_t start) { return start < split ? "1" : "2"; };
    std::string want = std::string("C0@") + at(0) + " C1@" + at(req2) + " C2@" +
                       at(req3) + " R0@3 R1@3 R2@3";
    ASSERT_EQ(sink.Summary(), want) << split;
    ASSERT_EQ(sink.Paths(), "r1 r2 - r1 r2 -") << split;
    ASSERT_TRUE(sink.counts.empty()) << split;
  }
}

TEST(HttpTruth, WithoutTruthHeadersCallsAreEmittedAtTheRequestLine) {
  RecordingSink sink;
  auto d = FindDecoder("http")->make_stream(sink);
  d->OnData(kC, 1, Bytes("GET / HTTP/1.1\r\nX-Request-Id: r1\r\n"));
  EXPECT_EQ(sink.Summary(), "C0@1");
  EXPECT_TRUE(sink.events[0].pathid.empty());
}

TEST(HttpTruth, AHeaderSectionCutShortStillGivesTheCall) {
  TruthSink sink({"x-request-id"});
  auto d = FindDecoder("http")->make_stream(sink);
  d->OnData(kC, 1, Bytes("GET /a HTTP/1.1\r\nHost: x\r\n"));
  EXPECT_EQ(sink.Summary(), "");
  d->OnGap(kC, 100);  // the rest of the headers were never captured
  d->OnData(kC, 2, Bytes("GET /b HTTP/1.1\r\nX-Request-Id: r2\r\n\r\n"));
  d->OnData(kC, 3, Bytes("GET /c HTTP/1.1\r\nX-Request-Id: r3\r\n"));
  d->OnEnd(4);  // the connection ended inside the headers
  EXPECT_EQ(sink.Summary(), "C0@1 C1@2 C2@3");
  EXPECT_EQ(sink.Paths(), "- r2 -");
}

// An id longer, as a token, than a pathid may be (trace::kMaxTokenBytes)
// cannot go into a trace: the writer refused the record (found by the
// decoder_http fuzzer, with %-escaped binary bytes). It is dropped and
// counted; a later-ranked header still gives its id.
TEST(HttpTruth, AnIdTooLongForAPathidIsDroppedAndCounted) {
  const std::string long_id(trace::kMaxTokenBytes + 1, 'a');
  // Escaped, a third as many bytes are already too many.
  const std::string binary_id(trace::kMaxTokenBytes / 3 + 1, '\xff');
  TruthHeaders t({"x-request-id", "traceparent"});
  TruthHeaderScan scan(&t);
  scan.Header("X-Request-Id", long_id);
  EXPECT_EQ(scan.pathid(), "");
  EXPECT_TRUE(scan.id_too_long());
  scan.Header("traceparent", "00-abc-def-01");
  EXPECT_EQ(scan.pathid(), "abc");
  EXPECT_FALSE(scan.id_too_long());
  scan.Reset(&t);
  scan.Header("x-request-id", binary_id);
  EXPECT_TRUE(scan.id_too_long());
  scan.Reset(&t);
  EXPECT_FALSE(scan.id_too_long());
  // An id of exactly the limit is kept.
  scan.Header("x-request-id", long_id.substr(1));
  EXPECT_EQ(scan.pathid().size(), trace::kMaxTokenBytes);

  TruthSink sink({"x-request-id", "traceparent"});
  auto d = FindDecoder("http")->make_stream(sink);
  d->OnData(kC, 1,
            Bytes("GET /a HTTP/1.1\r\nX-Request-Id: " + long_id +
                  "\r\n\r\nGET /b HTTP/1.1\r\nX-Request-Id: " + long_id +
                  "\r\ntraceparent: 00-abc-def-01\r\n\r\n"));
  d->OnData(kS, 2,
            Bytes("HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n"
                  "HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n"));
  EXPECT_EQ(sink.Summary(), "C0@1 C1@1 R0@2 R1@2");
  EXPECT_EQ(sink.Paths(), "- abc - abc");
  EXPECT_EQ(sink.count("http_request_id_too_long"), 1u);
}

// HTTP/2: header blocks encoded by nghttp2's deflater (Huffman coding and
// the dynamic table, as real clients send them).
class Deflater {
 public:
  Deflater() { nghttp2_hd_deflate_new(&d_, 4096); }
  ~Deflater() { nghttp2_hd_deflate_del(d_); }
  Deflater(const Deflater&) = delete;
  Deflater& operator=(const Deflater&) = delete;
  std::vector<std::byte> Block(
      const std::vector<std::pair<std::string, std::string>>& headers) {
    std::vector<nghttp2_nv> nv;
    for (const auto& [n, v] : headers) {
      nv.push_back({reinterpret_cast<uint8_t*>(const_cast<char*>(n.data())),
                    reinterpret_cast<uint8_t*>(const_cast<char*>(v.data())),
                    n.size(), v.size(), NGHTTP2_NV_FLAG_NONE});
    }
    std::vector<std::byte> out(
        nghttp2_hd_deflate_bound(d_, nv.data(), nv.size()));
    ssize_t n =
        nghttp2_hd_deflate_hd(d_, reinterpret_cast<uint8_t*>(out.data()),
                              out.size(), nv.data(), nv.size());
    EXPECT_GE(n, 0);
    out.resize(static_cast<size_t>(n));
    return out;
  }

 private:
  nghttp2_hd_deflater* d_ = nullptr;
};

void H2Frame(std::vector<std::byte>& v, uint8_t type, uint8_t flags,
             uint32_t stream, std::span<const std::byte> payload) {
  v.push_back(static_cast<std::byte>(payload.size() >> 16));
  Put16(v, static_cast<uint16_t>(payload.size()));
  v.push_back(static_cast<std::byte>(type));
  v.push_back(static_cast<std::byte>(flags));
  Put32(v, stream);
  Append(v, payload);
}

std::vector<std::pair<std::string, std::string>> GrpcHeaders(
    const std::string& trace_id) {
  return {{":method", "POST"},
          {":scheme", "http"},
          {":path", "/hotel.Search/Nearby"},
          {":authority", "search:50051"},
          {"content-type", "application/grpc"},
          {"traceparent", "00-" + trace_id + "-00f067aa0ba902b7-01"}};
}

TEST(Http2Truth, HpackDecodedIdsOnCallsAndReturnsSplitEverywhere) {
  Deflater enc;
  std::vector<std::byte> c(Bytes("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"));
  H2Frame(c, 4, 0, 0, {});
  // Stream 1: one HEADERS frame (END_HEADERS), then DATA.
  H2Frame(c, 1, 0x4, 1, enc.Block(GrpcHeaders("aaaa")));
  const std::vector<std::byte> body(20, std::byte{0x5a});
  H2Frame(c, 0, 0x1, 1, body);
  // Stream 3: padded HEADERS with priority, no END_HEADERS, the rest in a
  // CONTINUATION; its headers mostly come from the dynamic table now.
  auto block = enc.Block(GrpcHeaders("bbbb"));
  std::vector<std::byte> first;
  first.push_back(std::byte{2});                              // pad length
  for (int i = 0; i < 5; ++i) first.push_back(std::byte{0});  // priority
  size_t half = block.size() / 2;
  first.insert(first.end(), block.begin(), block.begin() + half);
  first.push_back(std::byte{0});
  first.push_back(std::byte{0});  // padding
  H2Frame(c, 1, 0x8 | 0x20 | 0x1, 3, first);
  H2Frame(c, 9, 0x4, 3, std::span<const std::byte>(block).subspan(half));
  // Stream 5: no truth header.
  H2Frame(c, 1, 0x5, 5, enc.Block({{":method", "GET"}, {":path", "/x"}}));
  std::vector<std::byte> s;
  H2Frame(s, 1, 0x4, 3, Bytes("\x88"));  // :status 200 (indexed)
  H2Frame(s, 1, 0x5, 1, Bytes("\x88"));
  H2Frame(s, 1, 0x5, 5, Bytes("\x88"));
  for (size_t split = 0; split <= c.size(); ++split) {
    TruthSink sink({"traceparent"});
    auto d = FindDecoder("http2")->make_stream(sink);
    d->OnData(kC, 1, Span(c).subspan(0, split));
    d->OnData(kC, 2, Span(c).subspan(split));
    d->OnData(kS, 3, Span(s));
    ASSERT_EQ(sink.Paths(), "aaaa bbbb - bbbb aaaa -") << split;
    ASSERT_EQ(sink.Kinds(trace::Kind::kCall), 3u) << split;
    ASSERT_TRUE(sink.counts.empty()) << split;
  }
}

TEST(Http2Truth, AHoleInTheClientsHeadersStopsIdsButNotCalls) {
  Deflater enc;
  std::vector<std::byte> c(Bytes("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"));
  H2Frame(c, 1, 0x5, 1, enc.Block(GrpcHeaders("aaaa")));
  std::vector<std::byte> after;
  H2Frame(after, 1, 0x5, 3, enc.Block(GrpcHeaders("bbbb")));
  TruthSink sink({"traceparent"});
  auto d = FindDecoder("http2")->make_stream(sink);
  d->OnData(kC, 1, Span(c));
  d->OnGap(kC, 50);
  d->OnData(kC, 2, Span(after));
  EXPECT_EQ(sink.Summary(), "C1@1 C3@2");
  EXPECT_EQ(sink.Paths(), "aaaa -");
  EXPECT_EQ(sink.count("http2_hpack_lost"), 1u);
}

TEST(Http2Truth, ABadHeaderBlockIsCountedAndTheCallStillEmitted) {
  std::vector<std::byte> c(Bytes("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"));
  H2Frame(c, 1, 0x5, 1, Bytes("\xff\xff\xff\xff\xff"));  // index overflow
  TruthSink sink({"traceparent"});
  auto d = FindDecoder("http2")->make_stream(sink);
  d->OnData(kC, 1, Span(c));
  EXPECT_EQ(sink.Summary(), "C1@1");
  EXPECT_EQ(sink.Paths(), "-");
  EXPECT_EQ(sink.count("http2_hpack_lost"), 1u);
}

}  // namespace
}  // namespace bbprof::capture
