// Decoders on real bytes: one TCP connection's segments from the shared
// sample captures (data/*.seg, made by data/extract.sh), with expected
// counts cross-checked against tshark's own dissection (noted per test).
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include "capture/decoders/decoders.h"
#include "tests/capture/decoders/test_sink.h"

namespace bbprof::capture {
namespace {

struct Segment {
  Direction dir;
  trace::TimeNs ts;
  std::vector<std::byte> bytes;
};

std::vector<Segment> LoadSegments(const std::string& name) {
  std::string path =
      std::string(BBPROF_SOURCE_DIR) + "/tests/capture/decoders/data/" + name;
  std::ifstream in(path);
  EXPECT_TRUE(in.good()) << path;
  std::vector<Segment> out;
  std::string dir, hex;
  long long ts = 0;
  while (in >> dir >> ts >> hex) {
    Segment s{dir == "C" ? Direction::kToServer : Direction::kToClient, ts, {}};
    for (size_t i = 0; i + 1 < hex.size(); i += 2) {
      s.bytes.push_back(
          static_cast<std::byte>(std::stoi(hex.substr(i, 2), nullptr, 16)));
    }
    out.push_back(std::move(s));
  }
  return out;
}

RecordingSink Decode(const char* decoder, const std::string& file) {
  RecordingSink sink;
  auto d = FindDecoder(decoder)->make_stream(sink);
  for (const Segment& s : LoadSegments(file)) d->OnData(s.dir, s.ts, s.bytes);
  d->OnEnd(0);
  return sink;
}

// Every return pairs with an earlier call of the same token.
void ExpectPaired(const RecordingSink& sink) {
  std::map<uint32_t, trace::TimeNs> open;
  for (const AppEvent& e : sink.events) {
    if (e.kind == trace::Kind::kCall) open[e.token] = e.ts;
    if (e.kind == trace::Kind::kReturn) {
      auto it = open.find(e.token);
      ASSERT_NE(it, open.end()) << e.token;
      EXPECT_LE(it->second, e.ts);
      open.erase(it);
    }
  }
}

TEST(RealCapture, NfsOverTcp) {
  // tshark -r nfs_base.pcap -Y "tcp.port==720 && frame.number<=59 && rpc"
  //   -T fields -e rpc.msgtyp: 19 calls, 19 replies; first xid 0xf61f87dc.
  RecordingSink sink = Decode("rpc", "nfs_base_720.seg");
  EXPECT_EQ(sink.Kinds(trace::Kind::kCall), 19u);
  EXPECT_EQ(sink.Kinds(trace::Kind::kReturn), 19u);
  ASSERT_FALSE(sink.events.empty());
  EXPECT_EQ(sink.events.front().token, 0xf61f87dcu);
  EXPECT_TRUE(sink.counts.empty());
  ExpectPaired(sink);
}

TEST(RealCapture, DnsOverTcpTwoQueriesInOneSegment) {
  // tshark: frame 4 carries dns.id 0xe831 and 0x5939 (queries); frames 6
  // and 8 the responses.
  RecordingSink sink = Decode("dns", "dns_tcp_multi.seg");
  EXPECT_EQ(sink.Summary(),
            "C59441@1743130421266384000 C22841@1743130421266384000 "
            "R59441@1743130421266678000 R22841@1743130421266739000");
  EXPECT_TRUE(sink.counts.empty());
}

TEST(RealCapture, GrpcUnaryWithoutPreface) {
  // tshark -d tcp.port==30035,http2: client HEADERS+DATA on stream 1, the
  // server's HEADERS on stream 1 (no END_STREAM captured).
  RecordingSink sink = Decode("http2", "grpc_unary.seg");
  EXPECT_EQ(sink.Summary(), "C1@1748919807873723000 R1@1748919807904549000");
  EXPECT_EQ(sink.count("http2_missing_preface"), 1u);
  // Returning at END_STREAM, the truncated response has no return.
  RecordingSink end = Decode("http2-end", "grpc_unary.seg");
  EXPECT_EQ(end.Kinds(trace::Kind::kCall), 1u);
  EXPECT_EQ(end.Kinds(trace::Kind::kReturn), 0u);
}

TEST(RealCapture, GrpcFramesSplitAcrossSegments) {
  // tshark -d tcp.port==20035,http2: HEADERS then DATA on stream 1, client
  // only.
  RecordingSink sink = Decode("http2", "grpc_segmented.seg");
  EXPECT_EQ(sink.Kinds(trace::Kind::kCall), 1u);
  EXPECT_EQ(sink.Kinds(trace::Kind::kReturn), 0u);
}

TEST(RealCapture, HttpConnectProxy) {
  // tshark: frame 4 CONNECT, frame 11 200, then TLS in the tunnel.
  RecordingSink sink = Decode("http", "http_connect_proxy.seg");
  EXPECT_EQ(sink.Kinds(trace::Kind::kCall), 1u);
  EXPECT_EQ(sink.Kinds(trace::Kind::kReturn), 1u);
  EXPECT_EQ(sink.count("http_connect_tunnel"), 1u);
  ExpectPaired(sink);
}

RecordingSink DecodeDatagrams(const char* decoder, const std::string& file) {
  RecordingSink sink;
  auto d = FindDecoder(decoder)->make_datagram(sink);
  for (const Segment& s : LoadSegments(file))
    d->OnDatagram(s.dir, s.ts, s.bytes);
  return sink;
}

TEST(RealCapture, DnsOverUdpNestedQuery) {
  // tshark: queries 0x8b34 (client to resolver) and 0xf34d (resolver to
  // upstream), then the responses in the reverse order.
  RecordingSink sink = DecodeDatagrams("dns", "dns_recursive_udp.dgram");
  ASSERT_EQ(sink.events.size(), 4u);
  EXPECT_EQ(sink.events[0].token, 0x8b34u);
  EXPECT_EQ(sink.events[1].token, 0xf34du);
  EXPECT_EQ(sink.events[2].kind, trace::Kind::kReturn);
  EXPECT_EQ(sink.events[2].token, 0xf34du);
  EXPECT_EQ(sink.events[3].token, 0x8b34u);
  EXPECT_TRUE(sink.counts.empty());
  for (const Segment& s : LoadSegments("dns_recursive_udp.dgram")) {
    if (s.dir == Direction::kToServer) {
      EXPECT_GE(FindDecoder("dns")->probe_datagram(s.bytes), 50);
      EXPECT_EQ(FindDecoder("rpc")->probe_datagram(s.bytes), 0);
    }
  }
}

TEST(RealCapture, PortmapAndSadmindOverUdp) {
  // tshark -Y udp -e rpc.msgtyp: 18 calls, 10 replies.
  RecordingSink sink = DecodeDatagrams("rpc", "rpc_portmap_sadmind_udp.dgram");
  EXPECT_EQ(sink.Kinds(trace::Kind::kCall), 18u);
  EXPECT_EQ(sink.Kinds(trace::Kind::kReturn), 10u);
  EXPECT_TRUE(sink.counts.empty());
  ExpectPaired(sink);
  for (const Segment& s : LoadSegments("rpc_portmap_sadmind_udp.dgram")) {
    if (s.dir == Direction::kToServer) {
      EXPECT_GE(FindDecoder("rpc")->probe_datagram(s.bytes), 90);
      EXPECT_EQ(FindDecoder("dns")->probe_datagram(s.bytes), 0);
    }
  }
}

TEST(RealCapture, ProbesRecogniseTheirProtocol) {
  auto first_client = [](const std::string& f) {
    for (const Segment& s : LoadSegments(f))
      if (s.dir == Direction::kToServer) return s.bytes;
    return std::vector<std::byte>{};
  };
  EXPECT_GE(FindDecoder("rpc")->probe_stream(first_client("nfs_base_720.seg")),
            90);
  EXPECT_GE(FindDecoder("dns")->probe_stream(first_client("dns_tcp_multi.seg")),
            50);
  EXPECT_GE(
      FindDecoder("http")->probe_stream(first_client("http_connect_proxy.seg")),
      90);
  EXPECT_GT(FindDecoder("http2")->probe_stream(first_client("grpc_unary.seg")),
            0);
  for (const char* other : {"rpc", "dns", "http"}) {
    EXPECT_EQ(FindDecoder(other)->probe_stream(first_client("grpc_unary.seg")),
              0)
        << other;
  }
  EXPECT_EQ(
      FindDecoder("http2")->probe_stream(first_client("nfs_base_720.seg")), 0);
  EXPECT_EQ(
      FindDecoder("http")->probe_stream(first_client("dns_tcp_multi.seg")), 0);
}

}  // namespace
}  // namespace bbprof::capture
