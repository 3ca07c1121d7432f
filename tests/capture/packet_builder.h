// Builds captured frames for the capture tests: Ethernet + IPv4/IPv6 +
// TCP/UDP with the fields the reducer reads (checksums are not checked by a
// passive observer and are left zero), and writes them to pcap files through
// libpcap's own dump API, so the tests make the captures they read.
#ifndef BBPROF_TESTS_CAPTURE_PACKET_BUILDER_H_
#define BBPROF_TESTS_CAPTURE_PACKET_BUILDER_H_

#include <arpa/inet.h>
#include <pcap/pcap.h>

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "capture/transport.h"

namespace bbprof::testing {

struct Addr {
  std::string ip;  // "10.0.0.1" or "2001:db8::1"
  uint16_t port = 0;
};

class PacketBuilder {
 public:
  using Bytes = std::vector<std::byte>;

  static Bytes Tcp(const Addr& src, const Addr& dst, uint32_t seq,
                   uint8_t flags, std::string_view payload, uint32_t ack = 0) {
    Bytes seg;
    Put16(seg, src.port);
    Put16(seg, dst.port);
    Put32(seg, seq);
    Put32(seg, ack);
    seg.push_back(std::byte{5 << 4});
    seg.push_back(static_cast<std::byte>(flags));
    Put16(seg, 65535);
    Put16(seg, 0);
    Put16(seg, 0);
    Append(seg, payload);
    return Ip(src.ip, dst.ip, 6, seg);
  }

  static Bytes Udp(const Addr& src, const Addr& dst, std::string_view payload) {
    Bytes seg;
    Put16(seg, src.port);
    Put16(seg, dst.port);
    Put16(seg, static_cast<uint16_t>(8 + payload.size()));
    Put16(seg, 0);
    Append(seg, payload);
    return Ip(src.ip, dst.ip, 17, seg);
  }

  // An Ethernet frame around an IP packet (what Tcp/Udp return).
  static Bytes Ethernet(const Bytes& ip_packet, bool v6) {
    Bytes f(12, std::byte{0x02});
    Put16(f, v6 ? 0x86DD : 0x0800);
    f.insert(f.end(), ip_packet.begin(), ip_packet.end());
    return f;
  }

  static Bytes Ip(const std::string& src, const std::string& dst,
                  uint8_t proto, const Bytes& payload, uint16_t id = 1,
                  uint16_t frag_field = 0) {
    Bytes p;
    uint8_t s[16], d[16];
    if (inet_pton(AF_INET, src.c_str(), s) == 1) {
      inet_pton(AF_INET, dst.c_str(), d);
      p.push_back(std::byte{0x45});
      p.push_back(std::byte{0});
      Put16(p, static_cast<uint16_t>(20 + payload.size()));
      Put16(p, id);
      Put16(p, frag_field);
      p.push_back(std::byte{64});
      p.push_back(static_cast<std::byte>(proto));
      Put16(p, 0);
      p.insert(p.end(), reinterpret_cast<std::byte*>(s),
               reinterpret_cast<std::byte*>(s) + 4);
      p.insert(p.end(), reinterpret_cast<std::byte*>(d),
               reinterpret_cast<std::byte*>(d) + 4);
    } else {
      inet_pton(AF_INET6, src.c_str(), s);
      inet_pton(AF_INET6, dst.c_str(), d);
      Put32(p, 0x60000000u);
      Put16(p, static_cast<uint16_t>(payload.size()));
      p.push_back(static_cast<std::byte>(proto));
      p.push_back(std::byte{64});
      p.insert(p.end(), reinterpret_cast<std::byte*>(s),
               reinterpret_cast<std::byte*>(s) + 16);
      p.insert(p.end(), reinterpret_cast<std::byte*>(d),
               reinterpret_cast<std::byte*>(d) + 16);
    }
    p.insert(p.end(), payload.begin(), payload.end());
    return p;
  }

  static void Put16(Bytes& b, uint16_t v) {
    b.push_back(static_cast<std::byte>(v >> 8));
    b.push_back(static_cast<std::byte>(v));
  }
  static void Put32(Bytes& b, uint32_t v) {
    Put16(b, static_cast<uint16_t>(v >> 16));
    Put16(b, static_cast<uint16_t>(v));
  }
  static void Append(Bytes& b, std::string_view s) {
    for (char c : s) b.push_back(static_cast<std::byte>(c));
  }
};

// Writes Ethernet frames to a pcap file with libpcap (nanosecond stamps when
// `nano`), each cut to `snaplen` as a capture with that snap length would be.
class PcapWriter {
 public:
  PcapWriter(const std::string& path, bool nano = true, int snaplen = 262144)
      : snaplen_(snaplen) {
    dead_ = pcap_open_dead_with_tstamp_precision(
        DLT_EN10MB, snaplen,
        nano ? PCAP_TSTAMP_PRECISION_NANO : PCAP_TSTAMP_PRECISION_MICRO);
    dump_ = pcap_dump_open(dead_, path.c_str());
    nano_ = nano;
  }
  ~PcapWriter() { Close(); }
  void Close() {
    if (dump_ != nullptr) pcap_dump_close(dump_);
    if (dead_ != nullptr) pcap_close(dead_);
    dump_ = nullptr;
    dead_ = nullptr;
  }
  bool ok() const { return dump_ != nullptr; }
  // `ts_ns`: nanoseconds since the epoch.
  void Add(int64_t ts_ns, const PacketBuilder::Bytes& frame) {
    struct pcap_pkthdr h {};
    h.ts.tv_sec = ts_ns / 1'000'000'000;
    int64_t frac = ts_ns % 1'000'000'000;
    h.ts.tv_usec = static_cast<suseconds_t>(nano_ ? frac : frac / 1000);
    h.len = static_cast<bpf_u_int32>(frame.size());
    h.caplen = static_cast<bpf_u_int32>(
        std::min<size_t>(frame.size(), static_cast<size_t>(snaplen_)));
    pcap_dump(reinterpret_cast<u_char*>(dump_), &h,
              reinterpret_cast<const u_char*>(frame.data()));
  }

 private:
  pcap_t* dead_ = nullptr;
  pcap_dumper_t* dump_ = nullptr;
  bool nano_ = true;
  int snaplen_;
};

}  // namespace bbprof::testing

#endif  // BBPROF_TESTS_CAPTURE_PACKET_BUILDER_H_
