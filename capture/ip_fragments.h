// IP fragment reassembly for IPv4 and IPv6 (NFS over UDP sends 8 KiB reads
// as fragmented datagrams; a decoder needs the whole datagram). Bounded:
// partial datagrams expire after `timeout` of packet-clock time and the
// oldest is evicted when buffered bytes exceed `max_bytes`. Overlapping
// fragments keep the first copy of each byte (RFC 5722 says drop the whole
// datagram for IPv6; we keep it, because a passive observer prefers a
// plausible datagram to none, and count the overlap).
#ifndef BBPROF_CAPTURE_IP_FRAGMENTS_H_
#define BBPROF_CAPTURE_IP_FRAGMENTS_H_

#include <array>
#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <vector>

#include "capture/ip.h"
#include "trace/record.h"

namespace bbprof::capture {

struct FragmentStats {
  uint64_t reassembled = 0;
  uint64_t overlapping_bytes = 0;
  uint64_t timed_out = 0;  // partial datagrams dropped by the timeout
  uint64_t evicted = 0;    // partial datagrams dropped by the memory cap
  uint64_t oversized = 0;  // fragments beyond 64 KiB (or the IPv6 maximum)
};

class FragmentReassembler {
 public:
  FragmentReassembler(trace::TimeNs timeout = 30'000'000'000,
                      size_t max_bytes = 64u << 20)
      : timeout_(timeout), max_bytes_(max_bytes) {}

  // Feeds one fragment (`ip.is_fragment` must be true). Returns the whole
  // transport payload once every piece has arrived; the earliest
  // fragment's timestamp is stored in *first_ts.
  std::optional<std::vector<std::byte>> Add(const IpResult& ip,
                                            trace::TimeNs ts,
                                            trace::TimeNs* first_ts);
  // Drops partial datagrams older than the timeout.
  void Expire(trace::TimeNs now);
  size_t buffered_bytes() const { return bytes_; }
  size_t pending() const { return table_.size(); }
  const FragmentStats& stats() const { return stats_; }

 private:
  struct Key {
    bool v6;
    uint8_t protocol;
    uint32_t id;
    std::array<uint8_t, 16> src, dst;
    auto operator<=>(const Key&) const = default;
  };
  struct Partial {
    trace::TimeNs first_ts = 0;
    std::map<uint32_t, std::vector<std::byte>> pieces;  // non-overlapping
    std::optional<uint32_t> total;  // known once the last fragment arrives
    size_t bytes = 0;
  };
  void Erase(std::map<Key, Partial>::iterator it);

  trace::TimeNs timeout_;
  size_t max_bytes_;
  std::map<Key, Partial> table_;
  size_t bytes_ = 0;
  FragmentStats stats_;
};

}  // namespace bbprof::capture

#endif  // BBPROF_CAPTURE_IP_FRAGMENTS_H_
