#include <gtest/gtest.h>

#include "capture/decoders/decoders.h"
#include "tests/capture/decoders/test_sink.h"

namespace bbprof::capture {
namespace {

// A DNS message: header plus one question for example.com A.
std::vector<std::byte> DnsMessage(uint16_t id, bool response) {
  std::vector<std::byte> m;
  Put16(m, id);
  Put16(m, response ? 0x8180 : 0x0100);
  Put16(m, 1);
  Put16(m, response ? 1 : 0);
  Put16(m, 0);
  Put16(m, 0);
  Append(m, Bytes(std::string_view("\x07"
                                   "example\x03"
                                   "com\x00\x00\x01\x00\x01",
                                   17)));
  if (response) {
    Append(
        m,
        Bytes(std::string_view(
            "\xc0\x0c\x00\x01\x00\x01\x00\x00\x00\x3c\x00\x04\x01\x02\x03\x04",
            16)));
  }
  return m;
}

std::vector<std::byte> Tcp(const std::vector<std::byte>& m) {
  std::vector<std::byte> v;
  Put16(v, static_cast<uint16_t>(m.size()));
  Append(v, m);
  return v;
}

TEST(DnsDatagram, QueryAndResponse) {
  RecordingSink sink;
  auto d = FindDecoder("dns")->make_datagram(sink);
  d->OnDatagram(Direction::kToServer, 5, Span(DnsMessage(0xbeef, false)));
  d->OnDatagram(Direction::kToClient, 6, Span(DnsMessage(0xbeef, true)));
  d->OnDatagram(Direction::kToClient, 7, Bytes("tiny"));
  EXPECT_EQ(sink.Summary(), "C48879@5 R48879@6");
  EXPECT_EQ(sink.count("dns_truncated"), 1u);
}

TEST(DnsStream, SeveralMessagesPerSegmentSplitEverywhere) {
  std::vector<std::byte> stream;
  Append(stream, Tcp(DnsMessage(1, false)));
  size_t second = stream.size();
  Append(stream, Tcp(DnsMessage(2, false)));
  for (size_t split = 0; split <= stream.size(); ++split) {
    RecordingSink sink;
    auto d = FindDecoder("dns")->make_stream(sink);
    d->OnData(Direction::kToServer, 1, Span(stream).subspan(0, split));
    d->OnData(Direction::kToServer, 2, Span(stream).subspan(split));
    std::string want = std::string("C1@") + (split > 0 ? "1" : "2") + " C2@" +
                       (split > second ? "1" : "2");
    ASSERT_EQ(sink.Summary(), want) << split;
    ASSERT_TRUE(sink.counts.empty()) << split;
  }
}

TEST(DnsStream, ResponsesAndResyncAfterGap) {
  RecordingSink sink;
  auto d = FindDecoder("dns")->make_stream(sink);
  auto r1 = Tcp(DnsMessage(10, true));
  d->OnData(Direction::kToClient, 1, Span(r1).subspan(0, 16));
  d->OnGap(Direction::kToClient, 14);
  d->OnData(Direction::kToClient, 2, Span(r1).subspan(30));  // tail of r1
  d->OnData(Direction::kToClient, 3, Span(Tcp(DnsMessage(11, true))));
  EXPECT_EQ(sink.Summary(), "R10@1 R11@3");
}

TEST(DnsStream, GarbageIsCountedNotDecoded) {
  RecordingSink sink;
  auto d = FindDecoder("dns")->make_stream(sink);
  d->OnData(Direction::kToServer, 1,
            Bytes(std::string_view("\x00\x05hello", 7)));
  EXPECT_TRUE(sink.events.empty());
  EXPECT_EQ(sink.count("dns_bad_length"), 1u);
}

TEST(DnsProbe, AcceptsQueriesRejectsOthers) {
  const DecoderInfo* dns = FindDecoder("dns");
  EXPECT_GE(dns->probe_datagram(Span(DnsMessage(7, false))), 50);
  EXPECT_GE(dns->probe_stream(Span(Tcp(DnsMessage(7, false)))), 50);
  EXPECT_EQ(
      dns->probe_datagram(Bytes("GET / HTTP/1.1\r\nHost: example\r\n\r\n")), 0);
  EXPECT_EQ(dns->probe_stream(Bytes("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n")), 0);
}

TEST(DnsDatagram, QueriesNameTheirType) {
  RecordingSink sink;
  auto d = FindDecoder("dns")->make_datagram(sink);
  auto q = DnsMessage(1, false);
  d->OnDatagram(Direction::kToServer, 1, Span(q));
  q[q.size() - 3] = std::byte{28};  // AAAA
  d->OnDatagram(Direction::kToServer, 2, Span(q));
  q[q.size() - 3] = std::byte{12};  // PTR
  d->OnDatagram(Direction::kToServer, 3, Span(q));
  q[q.size() - 4] = std::byte{0x10};  // 0x100c: no mnemonic
  d->OnDatagram(Direction::kToServer, 4, Span(q));
  d->OnDatagram(Direction::kToClient, 5, Span(DnsMessage(1, true)));
  EXPECT_EQ(sink.CallOps(), "dns:A dns:AAAA dns:PTR dns:TYPE4108");
  EXPECT_EQ(sink.ops.back(), "");  // a response names nothing
}

TEST(DnsStream, QueriesNameTheirType) {
  RecordingSink sink;
  auto d = FindDecoder("dns")->make_stream(sink);
  d->OnData(Direction::kToServer, 1, Span(Tcp(DnsMessage(3, false))));
  EXPECT_EQ(sink.CallOps(), "dns:A");
}

}  // namespace
}  // namespace bbprof::capture
