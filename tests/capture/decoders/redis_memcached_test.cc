#include <gtest/gtest.h>

#include "capture/decoders/decoders.h"
#include "tests/capture/decoders/test_sink.h"

namespace bbprof::capture {
namespace {

constexpr Direction kC = Direction::kToServer;
constexpr Direction kS = Direction::kToClient;

void FeedSplit(StreamDecoder& d, Direction dir, std::string_view text,
               size_t split) {
  d.OnData(dir, 1, AsBytes(text.substr(0, split)));
  d.OnData(dir, 2, AsBytes(text.substr(split)));
}

std::string At(size_t start, size_t split) { return start < split ? "1" : "2"; }

TEST(Redis, PipelinedRequestsPairInOrderSplitEverywhere) {
  const std::string req =
      "*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$5\r\nhe\r\nl\r\n"  // payload holds CRLF
      "PING\r\n"
      "*2\r\n$3\r\nGET\r\n$1\r\nk\r\n";
  const std::string resp =
      "+OK\r\n"
      "|1\r\n+ttl\r\n:3\r\n+PONG\r\n"  // RESP3 attribute before the value
      "*2\r\n$5\r\nhe\r\nl\r\n*-1\r\n";
  const size_t r1 = req.find("PING"), r2 = req.find("*2");
  const size_t p1 = resp.find("|1"), p2 = resp.find("*2");
  for (size_t split = 0; split <= std::max(req.size(), resp.size()); ++split) {
    RecordingSink sink;
    auto d = FindDecoder("redis")->make_stream(sink);
    size_t cs = std::min(split, req.size()), ss = std::min(split, resp.size());
    FeedSplit(*d, kC, req, cs);
    FeedSplit(*d, kS, resp, ss);
    std::string want = "C0@" + At(0, cs) + " C1@" + At(r1, cs) + " C2@" +
                       At(r2, cs) + " R0@" + At(0, ss) + " R1@" + At(p1, ss) +
                       " R2@" + At(p2, ss);
    ASSERT_EQ(sink.Summary(), want) << split;
    ASSERT_TRUE(sink.counts.empty()) << split;
  }
}

TEST(Redis, PushesAreMessagesAndGarbageResynchronises) {
  RecordingSink sink;
  auto d = FindDecoder("redis")->make_stream(sink);
  d->OnData(kC, 1, Bytes("*1\r\n$4\r\nPING\r\n"));
  d->OnData(kS, 2, Bytes(">2\r\n+message\r\n+hi\r\n"));
  d->OnData(kS, 3, Bytes("+PONG\r\n"));
  d->OnData(kS, 4, Bytes("?garbage\r\n+OK\r\n"));
  EXPECT_EQ(sink.Summary(), "C0@1 M@2 R0@3 M@4");
  EXPECT_EQ(sink.count("redis_bad_frame"), 1u);
  EXPECT_EQ(sink.count("redis_unmatched_response"), 1u);
}

TEST(Redis, GapInsideBulkStaysInSync) {
  RecordingSink sink;
  auto d = FindDecoder("redis")->make_stream(sink);
  d->OnData(kC, 1, Bytes("*2\r\n$3\r\nGET\r\n$1\r\nk\r\n"));
  d->OnData(kS, 2, Bytes("$100\r\n0123456789"));
  d->OnGap(kS, 80);
  d->OnData(kS, 3, Bytes("0123456789\r\n"));
  d->OnData(kC, 4, Bytes("*1\r\n$4\r\nPING\r\n"));
  d->OnData(kS, 5, Bytes("+PONG\r\n"));
  EXPECT_EQ(sink.Summary(), "C0@1 R0@2 C1@4 R1@5");
  EXPECT_TRUE(sink.counts.empty());
}

TEST(Memcached, StorageRetrievalAndNoreplySplitEverywhere) {
  const std::string req =
      "set k 0 0 5\r\nab\r\nc\r\n"
      "get k j\r\n"
      "delete j noreply\r\n"
      "incr n 1\r\n";
  const std::string resp =
      "STORED\r\n"
      "VALUE k 0 5\r\nab\r\nc\r\nVALUE j 0 3\r\nEND\r\nEND\r\n"  // data looks
                                                                 // like END
      "7\r\n";
  const size_t r1 = req.find("get"), r2 = req.find("delete"),
               r3 = req.find("incr");
  const size_t p1 = resp.find("VALUE"), p2 = resp.rfind("7\r\n");
  for (size_t split = 0; split <= std::max(req.size(), resp.size()); ++split) {
    RecordingSink sink;
    auto d = FindDecoder("memcached")->make_stream(sink);
    size_t cs = std::min(split, req.size()), ss = std::min(split, resp.size());
    FeedSplit(*d, kC, req, cs);
    FeedSplit(*d, kS, resp, ss);
    std::string want = "C0@" + At(0, cs) + " C1@" + At(r1, cs) + " M@" +
                       At(r2, cs) + " C2@" + At(r3, cs) + " R0@" + At(0, ss) +
                       " R1@" + At(p1, ss) + " R2@" + At(p2, ss);
    ASSERT_EQ(sink.Summary(), want) << split;
    ASSERT_TRUE(sink.counts.empty()) << split;
  }
}

TEST(Memcached, UnknownCommandAndLostResponse) {
  RecordingSink sink;
  auto d = FindDecoder("memcached")->make_stream(sink);
  d->OnData(kC, 1, Bytes("bogus stuff\r\nget a\r\n"));
  d->OnGap(kS, 30);
  d->OnData(kC, 2, Bytes("get b\r\n"));
  d->OnData(kS, 3, Bytes("partial tail\r\nEND\r\n"));
  EXPECT_EQ(sink.Summary(), "C0@1 C1@2 R1@3");
  EXPECT_EQ(sink.count("memcached_bad_command"), 1u);
  EXPECT_EQ(sink.count("memcached_resync"), 1u);
  EXPECT_EQ(sink.count("memcached_response_lost"), 1u);
}

TEST(RedisMemcachedProbe, AcceptOwnRejectOthers) {
  const DecoderInfo* redis = FindDecoder("redis");
  const DecoderInfo* mc = FindDecoder("memcached");
  EXPECT_GE(redis->probe_stream(Bytes("*1\r\n$4\r\nPING\r\n")), 80);
  EXPECT_EQ(redis->probe_stream(Bytes("get k\r\n")), 0);
  EXPECT_EQ(redis->probe_stream(Bytes("GET / HTTP/1.1\r\n\r\n")), 0);
  EXPECT_GE(mc->probe_stream(Bytes("get ferret_popups_list\r\n")), 70);
  EXPECT_EQ(mc->probe_stream(Bytes("*1\r\n$4\r\nPING\r\n")), 0);
  EXPECT_EQ(mc->probe_stream(Bytes("GET / HTTP/1.1\r\n\r\n")), 0);
}

TEST(Redis, CallsNameTheirCommandUpperCasedSplitEverywhere) {
  const std::string req =
      "*2\r\n$3\r\nget\r\n$1\r\nk\r\n"
      "ping\r\n"
      "*3\r\n$6\r\nCLIENT\r\n$7\r\nSETNAME\r\n$1\r\nx\r\n"
      "*0\r\n";
  for (size_t split = 0; split <= req.size(); ++split) {
    RecordingSink sink;
    auto d = FindDecoder("redis")->make_stream(sink);
    FeedSplit(*d, kC, req, split);
    ASSERT_EQ(sink.CallOps(), "redis:GET redis:PING redis:CLIENT -") << split;
    // The call keeps the time of its first byte, not of its command's.
    ASSERT_EQ(sink.events[0].ts, split == 0 ? 2 : 1) << split;
  }
}

TEST(Memcached, CallsNameTheirCommand) {
  RecordingSink sink;
  auto d = FindDecoder("memcached")->make_stream(sink);
  d->OnData(kC, 1,
            AsBytes("get a b\r\nset k 0 0 1\r\nx\r\ndelete k noreply\r\n"));
  EXPECT_EQ(sink.CallOps(), "memcached:get memcached:set");
}

}  // namespace
}  // namespace bbprof::capture
