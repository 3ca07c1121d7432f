#include <gtest/gtest.h>

#include "capture/decoders/decoders.h"
#include "tests/capture/decoders/test_sink.h"

namespace bbprof::capture {
namespace {

constexpr Direction kC = Direction::kToServer;
constexpr Direction kS = Direction::kToClient;

TEST(Generic, TurnsBecomeCallsAndReturns) {
  RecordingSink sink;
  auto d = FindDecoder("generic")->make_stream(sink);
  d->OnData(kC, 1, Bytes("GET a\r\n"));
  d->OnData(kC, 2, Bytes("more request"));
  d->OnData(kS, 3, Bytes("VALUE"));
  d->OnData(kS, 4, Bytes("END"));
  d->OnData(kC, 5, Bytes("SET"));
  d->OnData(kS, 6, Bytes("OK"));
  EXPECT_EQ(sink.Summary(), "C1@1 R1@3 C2@5 R2@6");
}

TEST(Generic, ServerBannerIsAMessage) {
  RecordingSink sink;
  auto d = FindDecoder("generic")->make_stream(sink);
  d->OnData(kS, 1, Bytes("220 smtp ready"));
  d->OnData(kC, 2, Bytes("EHLO x"));
  d->OnData(kS, 3, Bytes("250 ok"));
  EXPECT_EQ(sink.Summary(), "M@1 C1@2 R1@3");
}

TEST(Generic, LostTurnsAreCounted) {
  RecordingSink sink;
  auto d = FindDecoder("generic")->make_stream(sink);
  d->OnData(kC, 1, Bytes("q1"));
  d->OnGap(kS, 10);  // the response's first bytes were lost
  d->OnData(kS, 2, Bytes("rest"));
  d->OnGap(kC, 5);  // a whole request lost
  d->OnData(kS, 3, Bytes("its response"));
  d->OnData(kC, 4, Bytes("q3"));
  d->OnData(kS, 5, Bytes("r3"));
  EXPECT_EQ(sink.Summary(), "C1@1 C3@4 R3@5");
  EXPECT_EQ(sink.count("generic_return_lost"), 1u);
  EXPECT_EQ(sink.count("generic_call_lost"), 1u);
}

TEST(Generic, CallsNameTheirFirstWord) {
  RecordingSink sink;
  auto d = FindDecoder("generic")->make_stream(sink);
  d->OnData(Direction::kToServer, 1, AsBytes("EHLO client\r\n"));
  d->OnData(Direction::kToClient, 2, AsBytes("250 ok\r\n"));
  d->OnData(Direction::kToServer, 3, AsBytes("\x01\x02 binary"));
  EXPECT_EQ(sink.CallOps(), "generic:EHLO -");
}

}  // namespace
}  // namespace bbprof::capture
