// pcap_gen: writes a large synthetic capture of mixed traffic for the
// capture benchmark (bench/capture_bench.sh): DNS over UDP, ONC RPC
// (NFS-like) over TCP
// with record marking, HTTP/1.1 keep-alive, and a protocol only the generic
// rule knows (PostgreSQL-like simple queries), on many concurrent
// connections, with TCP handshakes, ACKs and closes, as a mirrored port
// would show them.
//   pcap_gen OUT.pcap [PACKETS]   (default 2,000,000)
// With --idle-conns, the crafted input of the memory bound
// (bench/memory_bounds.sh): N TCP
// connections to an HTTP server, each opened, sent one request and never
// closed nor answered, one every SPACING microseconds of capture time.
//   pcap_gen --idle-conns N [SPACING_US] OUT.pcap   (default spacing 10 us)
#include <cstdio>
#include <cstdlib>
#include <random>
#include <string>
#include <vector>

#include "capture/transport.h"
#include "tests/capture/packet_builder.h"

using bbprof::capture::kTcpAck;
using bbprof::capture::kTcpFin;
using bbprof::capture::kTcpSyn;
using bbprof::testing::Addr;
using bbprof::testing::PacketBuilder;
using bbprof::testing::PcapWriter;
using Bytes = PacketBuilder::Bytes;

namespace {

struct Conn {
  Addr client, server;
  uint32_t cseq = 1, sseq = 1;
  int exchanges_left = 0;
  uint32_t xid = 0;
};

class Gen {
 public:
  explicit Gen(PcapWriter& w) : w_(w), rng_(42) {}

  void Packet(const Bytes& ip) {
    ts_ +=
        step_ > 0
            ? step_
            : 2'000 + static_cast<int64_t>(rng_() % 16'000);  // 2-18 us apart
    w_.Add(ts_, PacketBuilder::Ethernet(ip, false));
    ++packets_;
  }
  void Tcp(Conn& c, bool from_client, uint8_t flags, const std::string& payload) {
    if (from_client) {
      Packet(PacketBuilder::Tcp(c.client, c.server, c.cseq, flags, payload, c.sseq));
      c.cseq += static_cast<uint32_t>(payload.size()) + ((flags & (kTcpSyn | kTcpFin)) ? 1 : 0);
    } else {
      Packet(PacketBuilder::Tcp(c.server, c.client, c.sseq, flags, payload, c.cseq));
      c.sseq += static_cast<uint32_t>(payload.size()) + ((flags & (kTcpSyn | kTcpFin)) ? 1 : 0);
    }
  }
  void Open(Conn& c) {
    c.cseq = static_cast<uint32_t>(rng_());
    c.sseq = static_cast<uint32_t>(rng_());
    Tcp(c, true, kTcpSyn, "");
    Tcp(c, false, kTcpSyn | kTcpAck, "");
    Tcp(c, true, kTcpAck, "");
    c.exchanges_left = 20 + static_cast<int>(rng_() % 80);
  }
  void Close(Conn& c) {
    Tcp(c, true, kTcpFin | kTcpAck, "");
    Tcp(c, false, kTcpFin | kTcpAck, "");
    Tcp(c, true, kTcpAck, "");
    c.client.port = static_cast<uint16_t>(c.client.port + 1000);  // a new connection
    if (c.client.port < 20000) c.client.port = static_cast<uint16_t>(20000 + c.client.port);
  }
  void Exchange(Conn& c, const std::string& req, const std::string& resp) {
    if (c.exchanges_left == 0) Open(c);
    Tcp(c, true, kTcpAck, req);
    Tcp(c, false, kTcpAck, resp);
    Tcp(c, true, kTcpAck, "");
    if (--c.exchanges_left == 0) Close(c);
  }

  static std::string Be32(uint32_t v) {
    std::string s(4, '\0');
    s[0] = static_cast<char>(v >> 24);
    s[1] = static_cast<char>(v >> 16);
    s[2] = static_cast<char>(v >> 8);
    s[3] = static_cast<char>(v);
    return s;
  }
  std::string RpcCall(uint32_t xid) {
    std::string body = Be32(xid) + Be32(0) + Be32(2) + Be32(100003) + Be32(3) +
                       Be32(6) + Be32(0) + Be32(0) + Be32(0) + Be32(0) +
                       std::string(32 + rng_() % 64, 'a');  // READ args
    return Be32(0x80000000u | static_cast<uint32_t>(body.size())) + body;
  }
  std::string RpcReply(uint32_t xid) {
    std::string body = Be32(xid) + Be32(1) + Be32(0) + Be32(0) + Be32(0) +
                       Be32(0) + std::string(100 + rng_() % 900, 'd');
    return Be32(0x80000000u | static_cast<uint32_t>(body.size())) + body;
  }
  static std::string Dns(uint16_t id, bool response) {
    std::string m;
    m += static_cast<char>(id >> 8);
    m += static_cast<char>(id & 0xFF);
    m += response ? std::string("\x81\x80", 2) : std::string("\x01\x00", 2);
    m += response ? std::string("\x00\x01\x00\x01\x00\x00\x00\x00", 8)
                  : std::string("\x00\x01\x00\x00\x00\x00\x00\x00", 8);
    m += std::string("\x03" "www" "\x07" "example" "\x03" "com" "\x00\x00\x01\x00\x01", 21);
    if (response) {
      m += std::string("\xc0\x0c\x00\x01\x00\x01\x00\x00\x0e\x10\x00\x04\x5d\xb8\xd8\x22", 16);
    }
    return m;
  }

  // The next packet's timestamp step, in nanoseconds (0: the mixed
  // traffic's random 2-18 us).
  void set_step(int64_t ns) { step_ = ns; }
  int64_t packets() const { return packets_; }
  std::mt19937_64& rng() { return rng_; }

 private:
  PcapWriter& w_;
  std::mt19937_64 rng_;
  int64_t ts_ = 1'700'000'000'000'000'000;
  int64_t packets_ = 0;
  int64_t step_ = 0;
};

// N connections that never close (see the header comment): 4 packets each,
// SYN, SYN-ACK, ACK and a request, from distinct client ports and addresses.
int IdleConnections(int argc, char** argv) {
  if (argc < 4) {
    std::fprintf(stderr,
                 "usage: pcap_gen --idle-conns N [SPACING_US] OUT.pcap\n");
    return 2;
  }
  const int64_t n = std::atoll(argv[2]);
  const int64_t spacing_ns = argc > 4 ? std::atoll(argv[3]) * 1000 : 10'000;
  PcapWriter w(argv[argc - 1]);
  if (!w.ok() || n <= 0 || spacing_ns <= 0) {
    std::fprintf(stderr, "pcap_gen: bad count or spacing, or cannot write %s\n",
                 argv[argc - 1]);
    return 1;
  }
  Gen g(w);
  g.set_step(spacing_ns / 4);
  for (int64_t i = 0; i < n; ++i) {
    // 1,000 connections per client host (a few hosts, as behind a proxy).
    const int64_t host = i / 1000;
    Conn c{{"10." + std::to_string(16 + host / 62'500 % 200) + "." +
                std::to_string(host / 250 % 250) + "." +
                std::to_string(host % 250 + 1),
            static_cast<uint16_t>(20000 + i % 1000)},
           {"10.255.0.1", 80}};
    g.Open(c);
    g.Tcp(c, true, kTcpAck,
          "GET /item/" + std::to_string(i) + " HTTP/1.1\r\nHost: shop\r\n\r\n");
  }
  std::printf("%lld packets\n", static_cast<long long>(g.packets()));
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc > 1 && std::string(argv[1]) == "--idle-conns")
    return IdleConnections(argc, argv);
  if (argc < 2) {
    std::fprintf(stderr, "usage: pcap_gen OUT.pcap [PACKETS]\n");
    return 2;
  }
  int64_t target = argc > 2 ? std::atoll(argv[2]) : 2'000'000;
  PcapWriter w(argv[1]);
  if (!w.ok()) {
    std::fprintf(stderr, "pcap_gen: cannot write %s\n", argv[1]);
    return 1;
  }
  Gen g(w);
  auto ip = [](int net, int host) {
    return "10." + std::to_string(net) + "." + std::to_string(host / 250) + "." +
           std::to_string(host % 250 + 1);
  };
  std::vector<Conn> http, rpc, generic;
  for (int i = 0; i < 400; ++i) {
    http.push_back({{ip(1, i), static_cast<uint16_t>(30000 + i)}, {ip(2, i % 8), 80}});
  }
  for (int i = 0; i < 100; ++i) {
    rpc.push_back({{ip(3, i), static_cast<uint16_t>(800 + i)}, {ip(4, i % 4), 2049}});
  }
  for (int i = 0; i < 200; ++i) {
    generic.push_back({{ip(5, i), static_cast<uint16_t>(40000 + i)}, {ip(6, i % 2), 5432}});
  }
  const std::string resp_body(400, 'x');
  uint16_t dns_id = 0;
  while (g.packets() < target) {
    uint64_t pick = g.rng()() % 100;
    if (pick < 35) {
      Conn& c = http[g.rng()() % http.size()];
      g.Exchange(c, "GET /item/" + std::to_string(g.rng()() % 100000) +
                        " HTTP/1.1\r\nHost: shop\r\nUser-Agent: bench\r\n\r\n",
                 "HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nContent-Length: " +
                     std::to_string(resp_body.size()) + "\r\n\r\n" + resp_body);
    } else if (pick < 60) {
      Conn& c = rpc[g.rng()() % rpc.size()];
      ++c.xid;
      g.Exchange(c, g.RpcCall(c.xid), g.RpcReply(c.xid));
    } else if (pick < 80) {
      Conn& c = generic[g.rng()() % generic.size()];
      g.Exchange(c, std::string("Q\0\0\0\x1dSELECT * FROM t WHERE id=1\0", 30),
                 std::string("T\0\0\0\x1e\0\x01id", 12) + std::string(60, 'r'));
    } else {
      Addr querier{ip(7, static_cast<int>(g.rng()() % 500)),
                  static_cast<uint16_t>(1024 + g.rng()() % 60000)};
      Addr resolver{ip(8, static_cast<int>(g.rng()() % 2)), 53};
      ++dns_id;
      g.Packet(PacketBuilder::Udp(querier, resolver, Gen::Dns(dns_id, false)));
      g.Packet(PacketBuilder::Udp(resolver, querier, Gen::Dns(dns_id, true)));
    }
  }
  std::printf("%lld packets\n", static_cast<long long>(g.packets()));
  return 0;
}
