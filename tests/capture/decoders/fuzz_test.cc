// Random bytes, random splits and random holes into every decoder: nothing
// may crash, hang or read out of bounds (run under the asan preset), and the
// events must stay well-formed. Bounded and seeded: deterministic.
#include <gtest/gtest.h>

#include <random>

#include "capture/decoders/decoders.h"
#include "tests/capture/decoders/test_sink.h"

namespace bbprof::capture {
namespace {

// Inputs that are mostly protocol-shaped, then mutated, reach deeper states
// than pure noise.
using std::string_view_literals::operator""sv;
const std::string_view kSeeds[] = {
    "GET / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: "
    "chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n",
    "HTTP/1.1 200 OK\r\nContent-Length: 3\r\n\r\nabcHTTP/1.1 100 "
    "Continue\r\n\r\n",
    "CONNECT a:1 HTTP/1.1\r\n\r\nHTTP/1.1 200 OK\r\n\r\n",
    "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n\x00\x00\x04\x01\x05\x00\x00\x00\x01"
    "abcd"sv,
    "\x80\x00\x00\x28\x00\x00\x00\x01\x00\x00\x00\x00\x00\x00\x00\x02"sv,
    "\x00\x1d\xbe\xef\x01\x00\x00\x01\x00\x00\x00\x00\x00\x00"sv,
    // HTTP/2 with a decodable HPACK block (GET, /, http, a literal :path).
    "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n\x00\x00\x07\x01\x05\x00\x00\x00\x01"
    "\x82\x86\x44\x03/a1"sv,
    // PostgreSQL: SSLRequest, then a simple query and a Parse.
    "\x00\x00\x00\x08\x04\xd2\x16\x2fQ\x00\x00\x00\x0dSELECT 1\x00"
    "P\x00\x00\x00\x10s\x00SELECT 2\x00\x00\x00"sv,
    // MySQL: COM_QUERY, COM_PING.
    "\x09\x00\x00\x00\x03SELECT 1\x01\x00\x00\x00\x0e"sv,
};

TEST(Fuzz, RandomAndMutatedInputNeverCrashes) {
  std::mt19937 rng(12345);
  for (const DecoderInfo& info : AllDecoders()) {
    for (int round = 0; round < 300; ++round) {
      RecordingSink sink;
      std::unique_ptr<StreamDecoder> sd;
      std::unique_ptr<DatagramDecoder> dd;
      if (info.make_stream) sd = info.make_stream(sink);
      if (info.make_datagram) dd = info.make_datagram(sink);
      for (int step = 0; step < 20; ++step) {
        std::string data;
        if (rng() % 2) {
          data = std::string(kSeeds[rng() % std::size(kSeeds)]);
          for (int m = rng() % 4; m > 0 && !data.empty(); --m)
            data[rng() % data.size()] = static_cast<char>(rng());
        } else {
          data.resize(rng() % 200);
          for (char& ch : data) ch = static_cast<char>(rng());
        }
        Direction dir = rng() % 2 ? Direction::kToServer : Direction::kToClient;
        if (sd) {
          size_t split = data.empty() ? 0 : rng() % data.size();
          sd->OnData(dir, step,
                     AsBytes(std::string_view(data).substr(0, split)));
          if (rng() % 8 == 0) sd->OnGap(dir, rng() % 5000);
          sd->OnData(dir, step, AsBytes(std::string_view(data).substr(split)));
          if (info.probe_stream) {
            int p = info.probe_stream(AsBytes(data));
            ASSERT_GE(p, 0);
            ASSERT_LE(p, 100);
          }
        }
        if (dd) {
          dd->OnDatagram(dir, step, AsBytes(data));
          int p = info.probe_datagram(AsBytes(data));
          ASSERT_GE(p, 0);
          ASSERT_LE(p, 100);
        }
      }
      if (sd) sd->OnEnd(100);
      for (const AppEvent& e : sink.events) {
        ASSERT_EQ(e.has_token, e.kind != trace::Kind::kMessage) << info.name;
      }
    }
  }
}

}  // namespace
}  // namespace bbprof::capture
