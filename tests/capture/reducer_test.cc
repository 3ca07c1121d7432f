// The reducer end to end on constructed frames: flows, orientation, decoder
// choice, callids, reordering, holes, snap length, UDP, fragments, naming.
#include "capture/reducer.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "capture/link.h"
#include "tests/capture/packet_builder.h"

namespace bbprof::capture {
namespace {

using testing::Addr;
using testing::PacketBuilder;
using Bytes = PacketBuilder::Bytes;

constexpr trace::TimeNs kMs = 1'000'000;

struct Out {
  trace::TimeNs ts;
  std::string kind, sender, receiver, callid;
};

class Harness {
 public:
  explicit Harness(ReducerOptions o = {})
      : reducer_(std::move(o), &nodes_, [this](const trace::Record& r) {
          out.push_back({r.ts_ns, std::string(trace::KindName(r.kind)),
                         std::string(nodes_.Name(r.sender)),
                         std::string(nodes_.Name(r.receiver)),
                         r.callid_is_number ? std::to_string(r.callid_number)
                                            : std::string(r.callid)});
          return Status::Ok();
        }) {}

  void Frame(trace::TimeNs ts, const Bytes& ip, bool v6 = false,
             size_t snap = 0) {
    Bytes f = PacketBuilder::Ethernet(ip, v6);
    std::span<const std::byte> data(f);
    if (snap > 0 && snap < f.size()) data = data.first(snap);
    ASSERT_TRUE(reducer_
                    .AddFrame(kLinkEthernet, ts, data,
                              static_cast<uint32_t>(f.size()))
                    .ok());
  }
  void Finish() { ASSERT_TRUE(reducer_.Finish().ok()); }
  uint64_t Counter(const std::string& name) const {
    auto c = reducer_.counters();
    auto it = c.find(name);
    return it == c.end() ? 0 : it->second;
  }
  std::string Kinds() const {
    std::string s;
    for (const Out& o : out) s += o.kind + " ";
    return s;
  }

  std::vector<Out> out;
  Reducer& reducer() { return reducer_; }

 private:
  trace::NodeTable nodes_;
  Reducer reducer_;
};

const Addr kClient{"10.0.0.1", 40000};
const Addr kWeb{"10.0.0.2", 80};

std::string Get(const std::string& path) {
  return "GET " + path + " HTTP/1.1\r\nHost: x\r\n\r\n";
}
std::string Ok(const std::string& body) {
  return "HTTP/1.1 200 OK\r\nContent-Length: " + std::to_string(body.size()) +
         "\r\n\r\n" + body;
}

// One HTTP/1.1 connection with two requests, handshake and close.
void HttpConnection(Harness& h, const Addr& c, const Addr& s, trace::TimeNs t0,
                    uint32_t cseq = 1000, uint32_t sseq = 5000) {
  std::string r1 = Get("/a"), r2 = Get("/b"), a1 = Ok("hello"), a2 = Ok("x");
  h.Frame(t0, PacketBuilder::Tcp(c, s, cseq, kTcpSyn, ""));
  h.Frame(t0 + 1, PacketBuilder::Tcp(s, c, sseq, kTcpSyn | kTcpAck, ""));
  uint32_t cs = cseq + 1, ss = sseq + 1;
  h.Frame(t0 + 1 * kMs, PacketBuilder::Tcp(c, s, cs, kTcpAck, r1));
  cs += static_cast<uint32_t>(r1.size());
  h.Frame(t0 + 3 * kMs, PacketBuilder::Tcp(s, c, ss, kTcpAck, a1));
  ss += static_cast<uint32_t>(a1.size());
  h.Frame(t0 + 4 * kMs, PacketBuilder::Tcp(c, s, cs, kTcpAck, r2));
  cs += static_cast<uint32_t>(r2.size());
  h.Frame(t0 + 7 * kMs, PacketBuilder::Tcp(s, c, ss, kTcpAck, a2));
  ss += static_cast<uint32_t>(a2.size());
  h.Frame(t0 + 8 * kMs, PacketBuilder::Tcp(c, s, cs, kTcpFin | kTcpAck, ""));
  h.Frame(t0 + 9 * kMs, PacketBuilder::Tcp(s, c, ss, kTcpFin | kTcpAck, ""));
}

TEST(ReducerTest, HttpConnectionBecomesPairedCallsAndReturns) {
  Harness h;
  HttpConnection(h, kClient, kWeb, 0);
  h.Finish();
  ASSERT_EQ(h.out.size(), 4u) << h.Kinds();
  EXPECT_EQ(h.Kinds(), "CALL RET CALL RET ");
  EXPECT_EQ(h.out[0].sender, "10.0.0.1");
  EXPECT_EQ(h.out[0].receiver, "10.0.0.2");
  EXPECT_EQ(h.out[1].sender, "10.0.0.2");
  EXPECT_EQ(h.out[0].ts, 1 * kMs);
  EXPECT_EQ(h.out[1].ts, 3 * kMs);
  EXPECT_EQ(h.out[0].callid, h.out[1].callid);
  EXPECT_EQ(h.out[2].callid, h.out[3].callid);
  EXPECT_NE(h.out[0].callid, h.out[2].callid);
  // Flow serial 1 in the high 32 bits.
  EXPECT_EQ(std::stoull(h.out[0].callid) >> 32, 1u);
  EXPECT_EQ(h.Counter("tcp_flows"), 1u);
  EXPECT_EQ(h.Counter("live_flows"), 0u);  // FIN both ways ended it
}

TEST(ReducerTest, CallidsDifferBetweenConnectionsAndOnReuse) {
  Harness h;
  HttpConnection(h, kClient, kWeb, 0);
  HttpConnection(h, kClient, kWeb, 20 * kMs);  // same four-tuple, new SYN
  HttpConnection(h, {"10.0.0.1", 40001}, kWeb, 40 * kMs);
  h.Finish();
  ASSERT_EQ(h.out.size(), 12u);
  EXPECT_NE(h.out[0].callid, h.out[4].callid);
  EXPECT_NE(h.out[4].callid, h.out[8].callid);
  EXPECT_EQ(h.Counter("tcp_flows"), 3u);
}

TEST(ReducerTest, MidstreamFlowsFindTheServerByPort) {
  Harness h;
  // Joined after the handshake; the server's response comes first, from
  // the HTTP port, so 10.0.0.2 is the server although it spoke first.
  h.Frame(0, PacketBuilder::Tcp(kWeb, kClient, 500, kTcpAck, Ok("early")));
  h.Frame(1 * kMs, PacketBuilder::Tcp(kClient, kWeb, 900, kTcpAck, Get("/")));
  h.Frame(2 * kMs, PacketBuilder::Tcp(
                       kWeb, kClient,
                       500 + static_cast<uint32_t>(Ok("early").size()),
                       kTcpAck, Ok("ok")));
  h.Finish();
  EXPECT_EQ(h.Counter("tcp_flows_midstream"), 1u);
  ASSERT_EQ(h.out.size(), 3u) << h.Kinds();
  EXPECT_EQ(h.out[1].kind, "CALL");
  EXPECT_EQ(h.out[1].sender, "10.0.0.1");
  EXPECT_EQ(h.out[2].kind, "RET");
  EXPECT_EQ(h.out[2].callid, h.out[1].callid);
}

TEST(ReducerTest, UnknownPortsUseTheGenericRuleWithTheLowerPortServing) {
  Harness h;
  Addr server{"10.0.0.9", 7000}, client{"10.0.0.1", 51000};
  h.Frame(0, PacketBuilder::Tcp(client, server, 1, kTcpAck, "PING\r\n"));
  h.Frame(1 * kMs, PacketBuilder::Tcp(server, client, 1, kTcpAck, "+PONG\r\n"));
  h.Frame(2 * kMs, PacketBuilder::Tcp(client, server, 7, kTcpAck, "PING\r\n"));
  h.Frame(3 * kMs, PacketBuilder::Tcp(server, client, 8, kTcpAck, "+PONG\r\n"));
  h.Finish();
  ASSERT_EQ(h.Kinds(), "CALL RET CALL RET ");
  EXPECT_EQ(h.out[0].sender, "10.0.0.1");
  EXPECT_EQ(h.out[0].receiver, "10.0.0.9");
}

TEST(ReducerTest, OutOfOrderSegmentsAreReassembledAndRecordsStayOrdered) {
  Harness h;
  std::string req = Get("/long-path-split-in-two");
  std::string first = req.substr(0, 10), second = req.substr(10);
  Addr other_client{"10.0.0.3", 40000};
  h.Frame(0, PacketBuilder::Tcp(kClient, kWeb, 1, kTcpSyn, ""));
  // The second half is captured first; the first half 2 ms later.
  h.Frame(1 * kMs, PacketBuilder::Tcp(kClient, kWeb, 12, kTcpAck, second));
  // Meanwhile another connection makes a call at 2 ms.
  h.Frame(2 * kMs, PacketBuilder::Tcp(other_client, kWeb, 1, kTcpAck, Get("/")));
  h.Frame(3 * kMs, PacketBuilder::Tcp(kClient, kWeb, 2, kTcpAck, first));
  h.Finish();
  ASSERT_EQ(h.out.size(), 2u);
  EXPECT_EQ(h.out[0].sender, "10.0.0.3");
  EXPECT_EQ(h.out[1].sender, "10.0.0.1");
  EXPECT_EQ(h.out[1].ts, 3 * kMs);  // the packet with the request's first byte
  for (size_t i = 1; i < h.out.size(); ++i) EXPECT_LE(h.out[i - 1].ts, h.out[i].ts);
}

TEST(ReducerTest, AHoleOlderThanTheWindowIsDeclaredAndCallsGoOn) {
  ReducerOptions o;
  o.reorder_window = 100 * kMs;
  Harness h(o);
  std::string r1 = Get("/1"), lost = Get("/lost"), r3 = Get("/3");
  uint32_t seq = 1;
  h.Frame(0, PacketBuilder::Tcp(kClient, kWeb, seq, kTcpAck, r1));
  seq += static_cast<uint32_t>(r1.size() + lost.size());  // never captured
  h.Frame(10 * kMs, PacketBuilder::Tcp(kClient, kWeb, seq, kTcpAck, r3));
  // Time moves on with other traffic; the hole is declared, /3 decoded.
  for (int i = 1; i <= 10; ++i) {
    h.Frame(i * 50 * kMs,
            PacketBuilder::Udp({"10.0.0.7", 999}, {"10.0.0.8", 998}, "x"));
  }
  EXPECT_EQ(h.out.size(), 2u) << h.Kinds();
  h.Finish();
  ASSERT_EQ(h.out.size(), 2u);
  EXPECT_EQ(h.out[1].ts, 10 * kMs);
  EXPECT_EQ(h.Counter("tcp_gap_bytes"), lost.size());
  EXPECT_EQ(h.Counter("udp_no_decoder"), 10u);
}

TEST(ReducerTest, ShortSnapLengthStillPairsEveryExchange) {
  Harness h;
  std::string body(3000, 'b');
  uint32_t cs = 1, ss = 1;
  for (int i = 0; i < 5; ++i) {
    std::string req = Get("/" + std::to_string(i));
    std::string resp = Ok(body);
    h.Frame(i * 10 * kMs, PacketBuilder::Tcp(kClient, kWeb, cs, kTcpAck, req),
            false, 96);
    cs += static_cast<uint32_t>(req.size());
    h.Frame(i * 10 * kMs + 2 * kMs,
            PacketBuilder::Tcp(kWeb, kClient, ss, kTcpAck, resp), false, 96);
    ss += static_cast<uint32_t>(resp.size());
  }
  h.Finish();
  EXPECT_EQ(h.Kinds(), "CALL RET CALL RET CALL RET CALL RET CALL RET ");
  for (size_t i = 0; i + 1 < h.out.size(); i += 2) {
    EXPECT_EQ(h.out[i].callid, h.out[i + 1].callid);
  }
  // Only the responses exceed 96 bytes.
  EXPECT_EQ(h.Counter("tcp_segments_snapped"), 5u);
}

std::string DnsMessage(uint16_t id, bool response) {
  std::string m;
  m += static_cast<char>(id >> 8);
  m += static_cast<char>(id & 0xFF);
  m += response ? std::string("\x81\x80", 2) : std::string("\x01\x00", 2);
  m += std::string("\x00\x01\x00\x00\x00\x00\x00\x00", 8);
  m += std::string("\x03" "www" "\x07" "example" "\x03" "com" "\x00\x00\x01\x00\x01", 21);
  return m;
}

TEST(ReducerTest, DnsOverUdpPairsByIdAndMessagesModeEmitsEveryDatagram) {
  const Addr resolver{"10.0.0.53", 53}, stub{"10.0.0.1", 3333};
  for (bool messages : {false, true}) {
    ReducerOptions o;
    o.messages = messages;
    Harness h(o);
    h.Frame(0, PacketBuilder::Udp(stub, resolver, DnsMessage(0x1234, false)));
    h.Frame(1 * kMs, PacketBuilder::Udp(stub, resolver, DnsMessage(0x1235, false)));
    h.Frame(2 * kMs, PacketBuilder::Udp(resolver, stub, DnsMessage(0x1235, true)));
    h.Frame(3 * kMs, PacketBuilder::Udp(resolver, stub, DnsMessage(0x1234, true)));
    h.Finish();
    ASSERT_EQ(h.out.size(), 4u);
    if (messages) {
      EXPECT_EQ(h.Kinds(), "MSG MSG MSG MSG ");
      EXPECT_EQ(h.out[0].callid, "");
      EXPECT_EQ(h.out[2].sender, "10.0.0.53");
    } else {
      EXPECT_EQ(h.Kinds(), "CALL CALL RET RET ");
      EXPECT_EQ(h.out[0].callid, h.out[3].callid);
      EXPECT_EQ(h.out[1].callid, h.out[2].callid);
      EXPECT_EQ(std::stoull(h.out[0].callid) & 0xFFFFFFFF, 0x1234u);
    }
  }
}

TEST(ReducerTest, FragmentedUdpDatagramIsReassembled) {
  Harness h;
  const Addr resolver{"10.0.0.53", 53}, stub{"10.0.0.1", 3333};
  h.Frame(0, PacketBuilder::Udp(stub, resolver, DnsMessage(7, false)));
  // The response's UDP datagram in two IPv4 fragments (offsets in 8 bytes).
  Bytes udp = PacketBuilder::Udp(resolver, stub, DnsMessage(7, true));
  Bytes l4(udp.begin() + 20, udp.end());
  Bytes part1(l4.begin(), l4.begin() + 16), part2(l4.begin() + 16, l4.end());
  h.Frame(2 * kMs, PacketBuilder::Ip(resolver.ip, stub.ip, 17, part2, 99,
                                     static_cast<uint16_t>(16 / 8)));
  h.Frame(3 * kMs, PacketBuilder::Ip(resolver.ip, stub.ip, 17, part1, 99, 0x2000));
  h.Finish();
  ASSERT_EQ(h.Kinds(), "CALL RET ");
  EXPECT_EQ(h.out[1].ts, 2 * kMs);  // the earliest fragment's time
  EXPECT_EQ(h.Counter("ip_fragments_reassembled"), 1u);
}

TEST(ReducerTest, ServiceGranularityAndNameMapOnIpv6) {
  auto map = NameMap::Parse("2001:db8::1 web\n[2001:db8::2]:8080 api\n", "m");
  ASSERT_TRUE(map.ok());
  ReducerOptions o;
  o.granularity = Granularity::kService;
  o.names = *map;
  Harness h(o);
  Addr web{"2001:db8::1", 50000}, api{"2001:db8::2", 8080},
      other{"2001:db8::3", 8080};
  h.Frame(0, PacketBuilder::Tcp(web, api, 1, kTcpSyn, ""), true);
  h.Frame(1 * kMs, PacketBuilder::Tcp(web, api, 2, kTcpAck, Get("/")), true);
  h.Frame(2 * kMs, PacketBuilder::Tcp(web, other, 1, kTcpSyn, ""), true);
  h.Frame(3 * kMs, PacketBuilder::Tcp(web, other, 2, kTcpAck, Get("/")), true);
  h.Finish();
  ASSERT_EQ(h.out.size(), 2u);
  EXPECT_EQ(h.out[0].sender, "web");
  EXPECT_EQ(h.out[0].receiver, "api");
  EXPECT_EQ(h.out[1].receiver, "[2001:db8::3]:8080");
}

// At host granularity a server is named by its address, except when its
// client has that address too (one machine, over loopback): then by its
// endpoint, or each call would be the host calling itself.
TEST(ReducerTest, AServerCalledFromItsOwnAddressIsNamedByItsPort) {
  Harness h;
  const Addr local_client{"127.0.0.1", 50000}, local_web{"127.0.0.1", 8080},
      remote_client{"10.0.0.9", 50001};
  h.Frame(0, PacketBuilder::Tcp(local_client, local_web, 1, kTcpSyn, ""));
  h.Frame(1 * kMs,
          PacketBuilder::Tcp(local_client, local_web, 2, kTcpAck, Get("/")));
  h.Frame(2 * kMs, PacketBuilder::Tcp(remote_client, local_web, 1, kTcpSyn, ""));
  h.Frame(3 * kMs,
          PacketBuilder::Tcp(remote_client, local_web, 2, kTcpAck, Get("/")));
  h.Finish();
  ASSERT_EQ(h.out.size(), 2u);
  EXPECT_EQ(h.out[0].sender, "127.0.0.1");
  EXPECT_EQ(h.out[0].receiver, "127.0.0.1:8080");
  EXPECT_EQ(h.out[1].sender, "10.0.0.9");
  EXPECT_EQ(h.out[1].receiver, "127.0.0.1");
}

TEST(ReducerTest, ForcedDecoderOverridesPortAndProbe) {
  ForcedDecoder f;
  ASSERT_EQ(ParseForcedDecoder("tcp/80=generic", &f), "");
  ReducerOptions o;
  o.forced.push_back(f);
  Harness h(o);
  // Not HTTP at all: the http decoder would count garbage; generic pairs it.
  h.Frame(0, PacketBuilder::Tcp(kClient, kWeb, 1, kTcpAck, "\x01\x02\x03"));
  h.Frame(1 * kMs, PacketBuilder::Tcp(kWeb, kClient, 1, kTcpAck, "\x04\x05"));
  h.Finish();
  EXPECT_EQ(h.Kinds(), "CALL RET ");
}

TEST(ReducerTest, ForcedDecoderSyntaxErrorsSayWhatIsWrong) {
  ForcedDecoder f;
  EXPECT_NE(ParseForcedDecoder("tcp8080=http", &f).find("expected PROTO/PORT=DECODER"),
            std::string::npos);
  EXPECT_NE(ParseForcedDecoder("sctp/80=http", &f).find("not tcp or udp"),
            std::string::npos);
  EXPECT_NE(ParseForcedDecoder("tcp/99999=http", &f).find("not a port"),
            std::string::npos);
  EXPECT_NE(ParseForcedDecoder("tcp/80=gopher", &f).find("unknown decoder 'gopher'"),
            std::string::npos);
  EXPECT_NE(ParseForcedDecoder("udp/80=http", &f).find("does not decode udp"),
            std::string::npos);
}

TEST(ReducerTest, UndecodablePacketsAreCountedByReason) {
  Harness h;
  Bytes arp(28, std::byte{0});
  Bytes frame(12, std::byte{0x02});
  PacketBuilder::Put16(frame, 0x0806);
  frame.insert(frame.end(), arp.begin(), arp.end());
  ASSERT_TRUE(h.reducer().AddFrame(kLinkEthernet, 0, frame, 42).ok());
  h.Frame(1, PacketBuilder::Ip("10.0.0.1", "10.0.0.2", 1, Bytes(8)));  // ICMP
  Bytes truncated = PacketBuilder::Tcp(kClient, kWeb, 1, kTcpAck, "");
  truncated.resize(30);  // IP header, then 10 bytes of a 20-byte TCP header
  h.Frame(2, truncated);
  h.Finish();
  EXPECT_EQ(h.Counter("non_ip_ethertype"), 1u);
  EXPECT_EQ(h.Counter("not_tcp_or_udp"), 1u);
  EXPECT_EQ(h.Counter("truncated_tcp") + h.Counter("ip_bad_total_length"), 1u);
  EXPECT_EQ(h.Counter("packets"), 3u);
  EXPECT_TRUE(h.out.empty());
}

TEST(ReducerTest, IdleFlowsEndAndFreeTheirState) {
  ReducerOptions o;
  o.tcp_idle_timeout = 1'000 * kMs;
  Harness h(o);
  h.Frame(0, PacketBuilder::Tcp(kClient, kWeb, 1, kTcpAck, Get("/")));
  EXPECT_EQ(h.reducer().live_flows(), 1u);
  h.Frame(5'000 * kMs,
          PacketBuilder::Udp({"10.0.0.7", 999}, {"10.0.0.8", 998}, "x"));
  EXPECT_EQ(h.Counter("flows_ended_idle"), 1u);
  EXPECT_EQ(h.reducer().live_flows(), 1u);  // only the UDP flow
  h.Finish();
}

// Issue 16: connections that never close, opened faster than the idle
// timeout ends them, must not grow the flow table past --max-flows. The
// least recently active flow goes first (its call is still written), each
// eviction is counted, the limit's callback fires once, and a connection
// that survives still pairs its return with its call.
TEST(ReducerTest, MaxFlowsEvictsTheLeastRecentlyActiveAndCountsIt) {
  ReducerOptions o;
  o.max_flows = 8;
  int warnings = 0;
  o.on_limit = [&](std::string_view what) {
    ++warnings;
    EXPECT_NE(what.find("--max-flows"), std::string_view::npos);
  };
  Harness h(o);
  trace::TimeNs t = 0;
  auto client = [](int i) {
    return Addr{"10.2.0." + std::to_string(i % 200 + 1),
                static_cast<uint16_t>(20000 + i)};
  };
  constexpr int kConnections = 1000;
  for (int i = 0; i < kConnections; ++i) {
    h.Frame(t += kMs, PacketBuilder::Tcp(client(i), kWeb, 0, kTcpSyn, ""));
    h.Frame(t += kMs,
            PacketBuilder::Tcp(client(i), kWeb, 1, kTcpAck, Get("/")));
    EXPECT_LE(h.reducer().live_flows(), 8u);
  }
  // The newest connection is still followed: its answer pairs.
  h.Frame(t += kMs, PacketBuilder::Tcp(kWeb, client(kConnections - 1), 1,
                                       kTcpAck, Ok("x")));
  h.Finish();
  EXPECT_EQ(h.Counter("flows_evicted"), kConnections - 8u);
  EXPECT_EQ(h.Counter("flows_ended_idle"), 0u);
  EXPECT_EQ(warnings, 1);
  EXPECT_EQ(h.Kinds().find("RET"),
            h.Kinds().size() - 4);  // one RET, the last record
  EXPECT_EQ(std::count_if(h.out.begin(), h.out.end(),
                          [](const Out& r) { return r.kind == "CALL"; }),
            kConnections);
}

// The idle timeout runs on capture time within one input: a file whose
// packets span more than the timeout ends the silent connections as it is
// read, so live flows stay those of the last timeout's worth of traffic.
TEST(ReducerTest, IdleTimeoutEndsFlowsByCaptureTimeWithinOneInput) {
  ReducerOptions o;
  o.tcp_idle_timeout = 10'000 * kMs;
  Harness h(o);
  trace::TimeNs t = 0;
  for (int i = 0; i < 100; ++i) {  // one new silent connection a second
    Addr c{"10.3.0." + std::to_string(i + 1), 30000};
    h.Frame(t += 1'000 * kMs,
            PacketBuilder::Tcp(c, kWeb, 1, kTcpAck, Get("/")));
    EXPECT_LE(h.reducer().live_flows(), 12u);
  }
  EXPECT_GE(h.Counter("flows_ended_idle"), 88u);
  EXPECT_EQ(h.Counter("flows_evicted"), 0u);
  h.Finish();
}

// The flow table under churn: thousands of connections, half of them reset
// (and so ended, their table slots freed) in random order while the rest stay
// open. Every surviving connection must still be found when its server
// answers; a lookup that missed (a broken deletion in the open-addressing
// table) would start a new, midstream flow whose return matches no call.
TEST(ReducerTest, FlowTableFindsEveryLiveFlowWhileOthersEnd) {
  constexpr int kConnections = 3000;
  Harness h;
  std::vector<Addr> clients;
  for (int i = 0; i < kConnections; ++i) {
    clients.push_back({"10.1." + std::to_string(i / 250) + "." +
                           std::to_string(i % 250 + 1),
                       static_cast<uint16_t>(40000 + i % 7)});
  }
  trace::TimeNs t = 0;
  for (const Addr& c : clients) {
    h.Frame(t += 1000, PacketBuilder::Tcp(c, kWeb, 0, kTcpSyn, ""));
    h.Frame(t += 1000, PacketBuilder::Tcp(c, kWeb, 1, kTcpAck, Get("/")));
  }
  std::vector<int> order(kConnections);
  for (int i = 0; i < kConnections; ++i) order[static_cast<size_t>(i)] = i;
  std::mt19937 rng(7);
  std::shuffle(order.begin(), order.end(), rng);
  const size_t half = kConnections / 2;
  for (size_t k = 0; k < half; ++k) {
    const Addr& c = clients[static_cast<size_t>(order[k])];
    h.Frame(t += 1000, PacketBuilder::Tcp(c, kWeb, 1 + static_cast<uint32_t>(Get("/").size()),
                                          kTcpRst, ""));
  }
  std::shuffle(order.begin() + static_cast<std::ptrdiff_t>(half), order.end(), rng);
  for (size_t k = half; k < order.size(); ++k) {
    h.Frame(t += 1000, PacketBuilder::Tcp(kWeb, clients[static_cast<size_t>(order[k])],
                                          1, kTcpAck, Ok("x")));
  }
  EXPECT_EQ(h.reducer().live_flows(), kConnections - half);
  h.Finish();
  EXPECT_EQ(h.Counter("tcp_flows"), kConnections);
  EXPECT_EQ(h.Counter("tcp_flows_midstream"), 0u);
  std::set<std::string> calls;
  size_t returns = 0;
  for (const Out& o : h.out) {
    if (o.kind == "CALL") {
      EXPECT_TRUE(calls.insert(o.callid).second) << o.callid;
    } else if (o.kind == "RET") {
      ++returns;
      EXPECT_EQ(calls.count(o.callid), 1u) << "a return without its call";
    }
  }
  EXPECT_EQ(calls.size(), static_cast<size_t>(kConnections));
  EXPECT_EQ(returns, half);
}


// The whole packet path under random traffic: protocol-shaped payloads on
// well-known and random ports, random TCP flags and sequence numbers (gaps,
// overlaps, retransmissions, resets), IP fragments, truncated frames and
// flipped bytes. Nothing may crash or read out of bounds (the asan preset
// runs this), every frame is accepted, and the records leave in time order
// with the counters accounting for every one of them. Seeded: deterministic.
TEST(ReducerTest, RandomTrafficNeverCrashesAndRecordsStayOrdered) {
  static const std::string kPayloads[] = {
      "GET /a HTTP/1.1\r\nHost: x\r\n\r\n",
      "HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello",
      "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\n\r\n",
      "*2\r\n$3\r\nGET\r\n$1\r\nk\r\n",
      "$5\r\nvalue\r\n",
      "get key\r\n",
      "VALUE key 0 1\r\nx\r\nEND\r\n",
      std::string("\x80\x00\x00\x1c\x00\x00\x00\x07\x00\x00\x00\x00\x00\x00\x00\x02"
                  "\x00\x01\x86\xa3\x00\x00\x00\x03\x00\x00\x00\x01", 28),
      DnsMessage(0x4242, false),
      DnsMessage(0x4242, true),
      "Q\x00\x00\x00\x0eselect 1;\x00",
  };
  static const uint16_t kPorts[] = {80, 53, 111, 2049, 6379, 11211, 5432, 8080, 9999};
  std::mt19937 rng(20261123);
  Harness h;
  std::vector<Addr> hosts;
  for (int i = 0; i < 12; ++i) {
    hosts.push_back({"10.9." + std::to_string(i / 4) + "." + std::to_string(i % 4 + 1),
                     static_cast<uint16_t>(rng() % 2 ? kPorts[rng() % 9] : 30000 + rng() % 50)});
  }
  trace::TimeNs t = 1'000'000'000;
  for (int n = 0; n < 20000; ++n) {
    t += static_cast<trace::TimeNs>(rng() % 3'000'000);  // up to 3 ms apart
    const Addr& a = hosts[rng() % hosts.size()];
    const Addr& b = hosts[rng() % hosts.size()];
    std::string payload = kPayloads[rng() % std::size(kPayloads)];
    if (rng() % 4 == 0) payload = payload.substr(0, rng() % (payload.size() + 1));
    if (rng() % 8 == 0 && !payload.empty()) {
      payload[rng() % payload.size()] = static_cast<char>(rng());
    }
    Bytes ip;
    const unsigned kind = rng() % 10;
    if (kind < 6) {
      static const uint8_t kFlags[] = {kTcpAck, kTcpAck, kTcpAck | kTcpPsh, kTcpSyn,
                                       kTcpSyn | kTcpAck, kTcpFin | kTcpAck, kTcpRst};
      const uint8_t flags = kFlags[rng() % std::size(kFlags)];
      const uint32_t seq = static_cast<uint32_t>(1 + rng() % 400);
      ip = PacketBuilder::Tcp(a, b, seq, flags, flags & kTcpSyn ? "" : payload);
    } else if (kind < 9) {
      ip = PacketBuilder::Udp(a, b, payload);
    } else {
      // A fragment of a UDP datagram, first or not, with random offset.
      Bytes udp = PacketBuilder::Udp(a, b, payload + payload);
      Bytes l4(udp.begin() + 20, udp.end());
      const size_t cut = std::min(l4.size(), size_t{8} * (1 + rng() % 4));
      Bytes part(l4.begin(), l4.begin() + static_cast<std::ptrdiff_t>(cut));
      const auto offset = static_cast<uint16_t>(rng() % 3);
      ip = PacketBuilder::Ip(a.ip, b.ip, 17, part, static_cast<uint16_t>(rng() % 4),
                             static_cast<uint16_t>((rng() % 2 ? 0x2000 : 0) | offset));
    }
    if (rng() % 50 == 0 && ip.size() > 20) {
      ip[rng() % ip.size()] = static_cast<std::byte>(rng());  // a flipped byte anywhere
    }
    const size_t snap = rng() % 10 == 0 ? 14 + rng() % 60 : 0;  // truncated frames
    h.Frame(t, ip, false, snap);
  }
  h.Finish();
  for (size_t i = 1; i < h.out.size(); ++i) {
    ASSERT_LE(h.out[i - 1].ts, h.out[i].ts) << "record " << i << " out of order";
  }
  EXPECT_EQ(h.Counter("packets"), 20000u);
  EXPECT_EQ(h.Counter("records_call") + h.Counter("records_ret") + h.Counter("records_msg"),
            h.out.size());
  EXPECT_GT(h.out.size(), 100u);  // the decoders did run
  EXPECT_EQ(h.reducer().live_flows(), 0u);
}

}  // namespace
}  // namespace bbprof::capture
