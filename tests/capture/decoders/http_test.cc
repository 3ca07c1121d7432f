#include <gtest/gtest.h>

#include "capture/decoders/decoders.h"
#include "tests/capture/decoders/test_sink.h"

namespace bbprof::capture {
namespace {

constexpr Direction kC = Direction::kToServer;
constexpr Direction kS = Direction::kToClient;

std::unique_ptr<StreamDecoder> MakeHttp(EventSink& s) {
  return FindDecoder("http")->make_stream(s);
}

// Feeds `text` in direction `dir` split at `split`: the first part at ts 1,
// the rest at ts 2.
void FeedSplit(StreamDecoder& d, Direction dir, std::string_view text,
               size_t split) {
  d.OnData(dir, 1, AsBytes(text.substr(0, split)));
  d.OnData(dir, 2, AsBytes(text.substr(split)));
}

TEST(Http, PipelinedRequestsAndResponsesSplitEverywhere) {
  const std::string req =
      "GET /a HTTP/1.1\r\nHost: x\r\n\r\n"
      "POST /b HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n\r\nhello"
      "HEAD /c HTTP/1.1\r\nHost: x\r\n\r\n";
  const std::string resp =
      "HTTP/1.1 200 OK\r\nContent-Length: 3\r\n\r\nabc"
      "HTTP/1.1 201 Created\r\nTransfer-Encoding: chunked\r\n\r\n"
      "4;ext=1\r\nwxyz\r\n0\r\nTrailer: t\r\n\r\n"
      "HTTP/1.1 200 OK\r\nContent-Length: 1000\r\n\r\n";  // HEAD: no body
  const size_t req2 = req.find("POST"), req3 = req.find("HEAD");
  const size_t resp2 = resp.find("HTTP/1.1 201"),
               resp3 = resp.rfind("HTTP/1.1 200");
  for (size_t split = 0; split <= std::max(req.size(), resp.size()); ++split) {
    RecordingSink sink;
    auto d = MakeHttp(sink);
    size_t rs = std::min(split, req.size());
    FeedSplit(*d, kC, req, rs);
    size_t ps = std::min(split, resp.size());
    FeedSplit(*d, kS, resp, ps);
    auto at = [](size_t start, size_t s) { return start < s ? "1" : "2"; };
    std::string want = std::string("C0@") + at(0, rs) + " C1@" + at(req2, rs) +
                       " C2@" + at(req3, rs) + " R0@" + at(0, ps) + " R1@" +
                       at(resp2, ps) + " R2@" + at(resp3, ps);
    ASSERT_EQ(sink.Summary(), want) << split;
    ASSERT_TRUE(sink.counts.empty()) << split;
  }
}

TEST(Http, BodilessStatusesAndCloseDelimitedBody) {
  RecordingSink sink;
  auto d = MakeHttp(sink);
  d->OnData(kC, 1,
            Bytes("GET /1 HTTP/1.1\r\n\r\nGET /2 HTTP/1.1\r\n\r\nGET /3 "
                  "HTTP/1.0\r\n\r\n"));
  d->OnData(kS, 2,
            Bytes("HTTP/1.1 204 No Content\r\nContent-Length: 9\r\n\r\n"));
  d->OnData(kS, 3, Bytes("HTTP/1.1 304 Not Modified\r\n\r\n"));
  d->OnData(kS, 4, Bytes("HTTP/1.0 200 OK\r\n\r\nbody until close"));
  d->OnData(kS, 5, Bytes("HTTP/1.1 200 this is body, not a response"));
  d->OnEnd(6);
  EXPECT_EQ(sink.Summary(), "C0@1 C1@1 C2@1 R0@2 R1@3 R2@4");
}

TEST(Http, ExpectContinueInterimIsAMessageAndFinalIsTheReturn) {
  RecordingSink sink;
  auto d = MakeHttp(sink);
  d->OnData(kC, 1,
            Bytes("PUT /x HTTP/1.1\r\nExpect: 100-continue\r\nContent-Length: "
                  "4\r\n\r\n"));
  d->OnData(kS, 2, Bytes("HTTP/1.1 100 Continue\r\n\r\n"));
  d->OnData(kC, 3, Bytes("data"));
  d->OnData(kS, 4, Bytes("HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n"));
  EXPECT_EQ(sink.Summary(), "C0@1 M@2 R0@4");
  EXPECT_EQ(sink.count("http_interim_response"), 1u);
}

TEST(Http, ConnectBecomesATunnel) {
  RecordingSink sink;
  auto d = MakeHttp(sink);
  d->OnData(
      kC, 1,
      Bytes(
          "CONNECT example.com:443 HTTP/1.1\r\nHost: example.com:443\r\n\r\n"));
  d->OnData(kS, 2, Bytes("HTTP/1.1 200 Connection established\r\n\r\n"));
  d->OnData(kC, 3, Bytes("\x16\x03\x01 TLS hello GET / HTTP/1.1\r\n\r\n"));
  d->OnData(kS, 4, Bytes("HTTP/1.1 200 OK\r\n\r\n"));
  EXPECT_EQ(sink.Summary(), "C0@1 R0@2");
  EXPECT_EQ(sink.count("http_connect_tunnel"), 1u);
}

TEST(Http, FailedConnectIsNotATunnel) {
  RecordingSink sink;
  auto d = MakeHttp(sink);
  d->OnData(kC, 1, Bytes("CONNECT a:1 HTTP/1.1\r\n\r\nGET / HTTP/1.1\r\n\r\n"));
  d->OnData(kS, 2,
            Bytes("HTTP/1.1 403 Forbidden\r\nContent-Length: 0\r\n\r\nHTTP/1.1 "
                  "200 OK\r\nContent-Length: 0\r\n\r\n"));
  EXPECT_EQ(sink.Summary(), "C0@1 C1@1 R0@2 R1@2");
}

TEST(Http, GapInBodyStaysInSyncGapInHeadersResynchronises) {
  RecordingSink sink;
  auto d = MakeHttp(sink);
  d->OnData(kC, 1, Bytes("GET /1 HTTP/1.1\r\n\r\nGET /2 HTTP/1.1\r\n\r\n"));
  d->OnData(kS, 2,
            Bytes("HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\n0123456789"));
  d->OnGap(kS, 80);  // inside the body
  d->OnData(kS, 3,
            Bytes("0123456789HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n"));
  d->OnData(kC, 4, Bytes("GET /3 HTTP/1.1\r\nHo"));
  d->OnGap(kC, 30);
  d->OnData(kC, 5, Bytes("rest of headers\r\n\r\nGET /4 HTTP/1.1\r\n\r\n"));
  EXPECT_EQ(sink.Summary(), "C0@1 C1@1 R0@2 R1@3 C2@4 C3@5");
  EXPECT_EQ(sink.count("http_resync"), 1u);
}

TEST(Http, LostResponsePairsNextResponseWithLatestRequest) {
  RecordingSink sink;
  auto d = MakeHttp(sink);
  d->OnData(kC, 1, Bytes("GET /1 HTTP/1.1\r\n\r\n"));
  d->OnGap(kS, 60);  // the whole response to /1
  d->OnData(kC, 2, Bytes("GET /2 HTTP/1.1\r\n\r\n"));
  d->OnData(kS, 3, Bytes("HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n"));
  EXPECT_EQ(sink.Summary(), "C0@1 C1@2 R1@3");
  EXPECT_EQ(sink.count("http_response_lost"), 1u);
}

TEST(Http, BadChunkSizeIsCountedAndResynchronised) {
  RecordingSink sink;
  auto d = MakeHttp(sink);
  d->OnData(kC, 1, Bytes("GET /1 HTTP/1.1\r\n\r\nGET /2 HTTP/1.1\r\n\r\n"));
  d->OnData(kS, 2,
            Bytes("HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip, "
                  "chunked\r\n\r\nzz\r\njunk\r\n"));
  d->OnData(kS, 3, Bytes("HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n"));
  EXPECT_EQ(sink.Summary(), "C0@1 C1@1 R0@2 R1@3");
  EXPECT_EQ(sink.count("http_bad_chunk_size"), 1u);
}

TEST(Http, UnmatchedResponseIsAMessage) {
  RecordingSink sink;
  auto d = MakeHttp(sink);
  d->OnData(kS, 1,
            Bytes("HTTP/1.1 408 Request Timeout\r\nContent-Length: 0\r\n\r\n"));
  EXPECT_EQ(sink.Summary(), "M@1");
  EXPECT_EQ(sink.count("http_unmatched_response"), 1u);
}

TEST(Http, H2cUpgradeHandsOverToHttp2) {
  RecordingSink sink;
  auto d = MakeHttp(sink);
  d->OnData(kC, 1,
            Bytes("GET / HTTP/1.1\r\nConnection: Upgrade, HTTP2-Settings\r\n"
                  "Upgrade: h2c\r\nHTTP2-Settings: AAMAAABkAAQAAP__\r\n\r\n"));
  std::vector<std::byte> s = Bytes(
      "HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\nUpgrade: "
      "h2c\r\n\r\n");
  // Server SETTINGS, then HEADERS on stream 1 answering the upgrade request.
  Append(s, Bytes(std::string_view("\x00\x00\x00\x04\x00\x00\x00\x00\x00", 9)));
  Append(s, Bytes(std::string_view("\x00\x00\x01\x01\x04\x00\x00\x00\x01\x88",
                                   10)));
  d->OnData(kS, 2, Span(s));
  std::vector<std::byte> c = Bytes("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n");
  Append(c, Bytes(std::string_view("\x00\x00\x01\x01\x05\x00\x00\x00\x03\x82",
                                   10)));
  d->OnData(kC, 3, Span(c));
  d->OnData(
      kS, 4,
      Bytes(std::string_view("\x00\x00\x01\x01\x05\x00\x00\x00\x03\x88", 10)));
  EXPECT_EQ(sink.Summary(), "C0@1 M@2 R0@2 C2147483651@3 R2147483651@4");
  EXPECT_EQ(sink.count("http_h2c_upgrade"), 1u);
}

TEST(Http, PriorKnowledgeHttp2OnAnHttpPort) {
  RecordingSink sink;
  auto d = MakeHttp(sink);
  std::vector<std::byte> c = Bytes("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n");
  Append(c, Bytes(std::string_view("\x00\x00\x01\x01\x05\x00\x00\x00\x01\x82",
                                   10)));
  d->OnData(kC, 1, Span(c));
  EXPECT_EQ(sink.Summary(), "C1@1");
}

TEST(Http, WebSocketUpgradeBecomesATunnel) {
  RecordingSink sink;
  auto d = MakeHttp(sink);
  d->OnData(kC, 1,
            Bytes("GET /ws HTTP/1.1\r\nUpgrade: websocket\r\nConnection: "
                  "Upgrade\r\n\r\n"));
  d->OnData(kS, 2,
            Bytes("HTTP/1.1 101 Switching Protocols\r\nUpgrade: "
                  "websocket\r\n\r\n\x81\x05hello"));
  d->OnData(kC, 3, Bytes("GET /x HTTP/1.1\r\n\r\n"));
  EXPECT_EQ(sink.Summary(), "C0@1 R0@2");
  EXPECT_EQ(sink.count("http_upgrade_tunnel"), 1u);
}

TEST(HttpProbe, AcceptsRequestsRejectsOthers) {
  const DecoderInfo* http = FindDecoder("http");
  EXPECT_GE(
      http->probe_stream(Bytes("GET /index.html HTTP/1.1\r\nHost: a\r\n\r\n")),
      90);
  EXPECT_GE(http->probe_stream(Bytes("POST /upl")), 50);
  EXPECT_EQ(http->probe_stream(Bytes("*1\r\n$4\r\nPING\r\n")), 0);
  EXPECT_EQ(http->probe_stream(Bytes("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n")), 0);
  EXPECT_EQ(http->probe_stream(Bytes("get key\r\n")), 0);
}

TEST(Http, CallsNameTheirMethodAndRouteTemplate) {
  RecordingSink sink;
  auto d = FindDecoder("http")->make_stream(sink);
  d->OnData(
      Direction::kToServer, 1,
      AsBytes("GET /item/42?x=1 HTTP/1.1\r\nHost: h\r\n\r\n"
              "POST /users/123e4567-e89b-12d3-a456-426614174000/avatar "
              "HTTP/1.1\r\nContent-Length: 2\r\n\r\nhi"
              "GET http://proxy.example/a%20b/deadbeef0123 HTTP/1.1\r\n\r\n"));
  EXPECT_EQ(sink.CallOps(),
            "http:GET:/item/{n} http:POST:/users/{uuid}/avatar "
            "http:GET:/a%20b/{id}");
}

}  // namespace
}  // namespace bbprof::capture
