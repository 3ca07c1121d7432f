// pcap_count: the physical limit for offline capture reduction
// (bench/capture_bench.sh):
// a bare libpcap loop that only counts packets and bytes.
//   pcap_count FILE.pcap
#include <pcap/pcap.h>

#include <chrono>
#include <cstdint>
#include <cstdio>

namespace {
struct Totals {
  uint64_t packets = 0, bytes = 0;
};
void Count(u_char* user, const struct pcap_pkthdr* h, const u_char*) {
  auto* t = reinterpret_cast<Totals*>(user);
  ++t->packets;
  t->bytes += h->caplen;
}
}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: pcap_count FILE.pcap\n");
    return 2;
  }
  char err[PCAP_ERRBUF_SIZE];
  auto start = std::chrono::steady_clock::now();
  pcap_t* p = pcap_open_offline_with_tstamp_precision(argv[1], PCAP_TSTAMP_PRECISION_NANO, err);
  if (p == nullptr) {
    std::fprintf(stderr, "pcap_count: %s\n", err);
    return 1;
  }
  Totals t;
  if (pcap_loop(p, -1, &Count, reinterpret_cast<u_char*>(&t)) == -1) {
    std::fprintf(stderr, "pcap_count: %s\n", pcap_geterr(p));
    return 1;
  }
  pcap_close(p);
  double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::printf("%llu packets, %llu bytes in %.3f s: %.1f M packets/s\n",
              static_cast<unsigned long long>(t.packets),
              static_cast<unsigned long long>(t.bytes), s, t.packets / s / 1e6);
  return 0;
}
