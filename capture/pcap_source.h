// Where frames come from: libpcap, live from an interface or offline from
// pcap/pcapng files (plain, gzip- or zstd-compressed, or standard input).
// The only part of capture/ that touches libpcap; the reducer sees frames.
// Timestamps are asked for at nanosecond precision, which libpcap provides
// from nanosecond pcap files, pcapng and Linux live capture.
#ifndef BBPROF_CAPTURE_PCAP_SOURCE_H_
#define BBPROF_CAPTURE_PCAP_SOURCE_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "base/status.h"
#include "trace/record.h"

namespace bbprof::capture {

struct Frame {
  trace::TimeNs ts = 0;
  std::span<const std::byte> data;  // captured bytes
  uint32_t wire_length = 0;         // length on the wire
};

struct LiveOptions {
  std::string interface;
  int snaplen = 262144;
  int buffer_bytes = 0;  // 0: libpcap's default
  bool promiscuous = true;
  int timeout_ms = 100;  // how long the kernel may hold packets back
};

struct SourceStats {
  uint64_t received = 0;      // ps_recv
  uint64_t kernel_drops = 0;  // ps_drop: no room in the buffer
  uint64_t if_drops = 0;      // ps_ifdrop: dropped by the interface
};

class PacketSource {
 public:
  // `path`: a pcap or pcapng file, possibly gzip/zstd compressed, or "-".
  static Result<std::unique_ptr<PacketSource>> OpenFile(const std::string& path);
  static Result<std::unique_ptr<PacketSource>> OpenLive(const LiveOptions& options);
  // Interfaces libpcap can capture on, with descriptions (for -D).
  static Result<std::vector<std::string>> ListInterfaces();

  ~PacketSource();
  PacketSource(const PacketSource&) = delete;
  PacketSource& operator=(const PacketSource&) = delete;

  // Compiles and installs a BPF filter ("" = none). A bad expression is an
  // error naming the expression and libpcap's complaint.
  Status SetFilter(const std::string& expression);

  // Delivers up to `max` frames (-1: whatever one buffer holds). Returns
  // the number delivered: 0 means a live timeout passed with nothing (or,
  // offline, the end of the file: see at_end()).
  Result<int> Dispatch(int max, const std::function<void(const Frame&)>& fn);
  bool at_end() const { return at_end_; }
  // Makes a Dispatch in progress return soon; safe in a signal handler.
  void BreakLoop();

  // The pcap LINKTYPE of the frames (link.h knows the ones we peel).
  uint32_t link_type() const;
  int snaplen() const;
  bool live() const { return live_; }
  const std::string& name() const { return name_; }
  // Kernel counters (live only; zeros offline).
  SourceStats Stats() const;

  struct Impl;  // libpcap's handle, defined in pcap_source.cc

 private:
  PacketSource() = default;
  std::unique_ptr<Impl> impl_;
  bool live_ = false;
  bool at_end_ = false;
  std::string name_;
};

}  // namespace bbprof::capture

#endif  // BBPROF_CAPTURE_PCAP_SOURCE_H_
