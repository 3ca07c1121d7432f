#include "capture/pcap_source.h"

#include <pcap/pcap.h>

#include <cstdio>
#include <cstring>

#include "trace/byte_stream.h"
#include "trace/timestamp.h"

namespace bbprof::capture {

// What libpcap reads through when it cannot read the file itself: our
// InputStream, and the message of its last error, which libpcap would
// reduce to strerror(EIO) ("Input/output error").
struct StreamCookie {
  std::unique_ptr<trace::InputStream> in;
  std::string error;
};

struct PacketSource::Impl {
  pcap_t* pcap = nullptr;
  bool nano = false;
  StreamCookie* cookie = nullptr;  // owned by libpcap's FILE, if any
  uint64_t frames = 0;             // delivered so far, for messages
  const std::function<void(const Frame&)>* fn = nullptr;
  ~Impl() {
    if (pcap != nullptr) pcap_close(pcap);
  }
};

namespace {

// libpcap reads offline captures from a FILE*; a compressed file or standard
// input is handed to it through a stdio cookie over our InputStream, which
// detects gzip and zstd by their magic bytes.
ssize_t CookieRead(void* cookie, char* buf, size_t size) {
  auto* c = static_cast<StreamCookie*>(cookie);
  Result<size_t> n = c->in->Read(buf, size);
  if (!n.ok()) {
    c->error = n.status().message();
    errno = EIO;
    return -1;
  }
  return static_cast<ssize_t>(*n);
}

int CookieClose(void* cookie) {
  delete static_cast<StreamCookie*>(cookie);
  return 0;
}

// Some tools write the classic pcap header's version fields in the wrong
// byte order (2.4 read as 512.1024); libpcap refuses such files, Wireshark
// reads them. This stream fixes the two fields on the way in.
class VersionFixStream final : public trace::InputStream {
 public:
  explicit VersionFixStream(std::unique_ptr<trace::InputStream> in)
      : in_(std::move(in)) {}
  Result<size_t> Read(char* buf, size_t size) override {
    Result<size_t> n = in_->Read(buf, size);
    if (!n.ok()) return n;
    for (size_t i = 0; i < *n; ++i, ++pos_) {
      if (pos_ >= 4 && pos_ < 8) buf[i] = kFix[le_ ? pos_ - 4 : pos_];
      if (pos_ == 0) le_ = static_cast<unsigned char>(buf[i]) == 0xd4 ||
                           static_cast<unsigned char>(buf[i]) == 0x4d;
    }
    return n;
  }
  uint64_t raw_bytes_read() const override { return in_->raw_bytes_read(); }
  uint32_t raw_crc32() const override { return in_->raw_crc32(); }

 private:
  // Version 2.4 little-endian, then (indexed from 4) big-endian.
  static constexpr char kFix[8] = {2, 0, 4, 0, 0, 2, 0, 4};
  std::unique_ptr<trace::InputStream> in_;
  uint64_t pos_ = 0;
  bool le_ = true;
};

bool HasSwappedVersion(const std::string& err) {
  return err.find("512.1024") != std::string::npos;
}

bool StartsCompressed(const std::string& path) {
  FILE* f = std::fopen(path.c_str(), "rb");
  if (f == nullptr) return false;
  unsigned char m[4] = {};
  size_t n = std::fread(m, 1, sizeof m, f);
  std::fclose(f);
  return (n >= 2 && m[0] == 0x1f && m[1] == 0x8b) ||
         (n == 4 && m[0] == 0x28 && m[1] == 0xb5 && m[2] == 0x2f && m[3] == 0xfd);
}

void Deliver(u_char* user, const struct pcap_pkthdr* h, const u_char* bytes) {
  auto* impl = reinterpret_cast<PacketSource::Impl*>(user);
  Frame f;
  // A pcapng block may carry any 64-bit timestamp at any resolution, so the
  // product is checked; out of range becomes -1, outside the valid range of
  // trace/timestamp.h, which the reducer counts as timestamp_out_of_range.
  if (!trace::CheckedTimeFromParts(h->ts.tv_sec, h->ts.tv_usec,
                                   impl->nano ? 1 : 1000, &f.ts)) {
    f.ts = -1;
  }
  f.data = std::span<const std::byte>(reinterpret_cast<const std::byte*>(bytes),
                                      h->caplen);
  f.wire_length = h->len;
  ++impl->frames;
  (*impl->fn)(f);
}

}  // namespace

PacketSource::~PacketSource() = default;

Result<std::unique_ptr<PacketSource>> PacketSource::OpenFile(
    const std::string& path) {
  char err[PCAP_ERRBUF_SIZE] = {};
  std::unique_ptr<PacketSource> src(new PacketSource());
  src->impl_ = std::make_unique<Impl>();
  src->name_ = path == "-" ? std::string("standard input") : path;
  bool plain = path != "-" && !StartsCompressed(path);
  if (plain) {
    src->impl_->pcap = pcap_open_offline_with_tstamp_precision(
        path.c_str(), PCAP_TSTAMP_PRECISION_NANO, err);
  }
  bool fix_version = plain && src->impl_->pcap == nullptr &&
                     HasSwappedVersion(err);
  if (!plain || fix_version) {
    auto in = trace::OpenInputStream(path);
    if (!in.ok()) return in.status();
    if (fix_version) {
      *in = std::make_unique<VersionFixStream>(std::move(*in));
    }
    cookie_io_functions_t io{};
    io.read = &CookieRead;
    io.close = &CookieClose;
    auto* raw = new StreamCookie{std::move(*in), {}};
    FILE* f = fopencookie(raw, "rb", io);
    if (f == nullptr) {
      delete raw;
      return Status::Error(src->name_ + ": " + std::strerror(errno));
    }
    src->impl_->pcap = pcap_fopen_offline_with_tstamp_precision(
        f, PCAP_TSTAMP_PRECISION_NANO, err);
    if (src->impl_->pcap == nullptr) {
      if (!raw->error.empty()) {
        Status s = Status::Error(raw->error + " (in the capture file header)");
        std::fclose(f);
        return s;
      }
      std::fclose(f);
    } else {
      src->impl_->cookie = raw;
    }
  }
  if (src->impl_->pcap == nullptr) {
    return Status::Error(src->name_ + ": not a capture libpcap can read (" +
                         std::string(err) + ")");
  }
  src->impl_->nano = pcap_get_tstamp_precision(src->impl_->pcap) ==
                     PCAP_TSTAMP_PRECISION_NANO;
  return src;
}

Result<std::unique_ptr<PacketSource>> PacketSource::OpenLive(
    const LiveOptions& o) {
  char err[PCAP_ERRBUF_SIZE] = {};
  std::unique_ptr<PacketSource> src(new PacketSource());
  src->impl_ = std::make_unique<Impl>();
  src->live_ = true;
  src->name_ = o.interface;
  pcap_t* p = pcap_create(o.interface.c_str(), err);
  if (p == nullptr) {
    return Status::Error("cannot open interface '" + o.interface + "': " + err);
  }
  src->impl_->pcap = p;
  pcap_set_snaplen(p, o.snaplen);
  pcap_set_promisc(p, o.promiscuous ? 1 : 0);
  pcap_set_timeout(p, o.timeout_ms);
  if (o.buffer_bytes > 0) pcap_set_buffer_size(p, o.buffer_bytes);
  // Not every platform has nanosecond stamps; microseconds then.
  pcap_set_tstamp_precision(p, PCAP_TSTAMP_PRECISION_NANO);
  int rc = pcap_activate(p);
  if (rc < 0) {
    std::string detail = pcap_geterr(p);
    std::string what;
    switch (rc) {
      case PCAP_ERROR_NO_SUCH_DEVICE:
        what = "no such interface '" + o.interface + "' (bbprof capture -D lists them)";
        break;
      case PCAP_ERROR_PERM_DENIED:
        what = "no permission to capture on '" + o.interface +
               "': run as root, or give bbprof the capabilities "
               "(setcap cap_net_raw,cap_net_admin=eip bbprof)";
        break;
      case PCAP_ERROR_IFACE_NOT_UP:
        what = "interface '" + o.interface + "' is not up";
        break;
      default:
        what = "cannot capture on '" + o.interface + "'";
    }
    if (!detail.empty()) what += " (" + detail + ")";
    return Status::Error(what);
  }
  src->impl_->nano = pcap_get_tstamp_precision(p) == PCAP_TSTAMP_PRECISION_NANO;
  return src;
}

Result<std::vector<std::string>> PacketSource::ListInterfaces() {
  char err[PCAP_ERRBUF_SIZE] = {};
  pcap_if_t* all = nullptr;
  if (pcap_findalldevs(&all, err) != 0) {
    return Status::Error(std::string("cannot list interfaces: ") + err);
  }
  std::vector<std::string> out;
  for (pcap_if_t* d = all; d != nullptr; d = d->next) {
    std::string line = d->name;
    if (d->description != nullptr) line += std::string(" (") + d->description + ")";
    if ((d->flags & PCAP_IF_LOOPBACK) != 0) line += " [loopback]";
    if ((d->flags & PCAP_IF_UP) == 0) line += " [down]";
    out.push_back(std::move(line));
  }
  pcap_freealldevs(all);
  return out;
}

Status PacketSource::SetFilter(const std::string& expression) {
  if (expression.empty()) return Status::Ok();
  struct bpf_program prog {};
  if (pcap_compile(impl_->pcap, &prog, expression.c_str(), 1,
                   PCAP_NETMASK_UNKNOWN) != 0) {
    return Status::Error("bad filter '" + expression + "': " +
                         pcap_geterr(impl_->pcap));
  }
  int rc = pcap_setfilter(impl_->pcap, &prog);
  pcap_freecode(&prog);
  if (rc != 0) {
    return Status::Error("cannot install filter '" + expression + "': " +
                         pcap_geterr(impl_->pcap));
  }
  return Status::Ok();
}

Result<int> PacketSource::Dispatch(int max,
                                   const std::function<void(const Frame&)>& fn) {
  impl_->fn = &fn;
  int n = pcap_dispatch(impl_->pcap, max, &Deliver,
                        reinterpret_cast<u_char*>(impl_.get()));
  impl_->fn = nullptr;
  if (n == PCAP_ERROR_BREAK) return 0;
  if (n < 0) {
    at_end_ = true;
    if (impl_->cookie != nullptr && !impl_->cookie->error.empty()) {
      // The decompressor's own words ("FILE: truncated gzip stream") and
      // where: libpcap would only say "Input/output error".
      return Status::Error(impl_->cookie->error + " (after packet " +
                           std::to_string(impl_->frames) +
                           "; expected the rest of the capture)");
    }
    return Status::Error(name_ + ": " + pcap_geterr(impl_->pcap));
  }
  if (n == 0 && !live_) at_end_ = true;
  return n;
}

void PacketSource::BreakLoop() { pcap_breakloop(impl_->pcap); }

uint32_t PacketSource::link_type() const {
  return static_cast<uint32_t>(pcap_datalink(impl_->pcap));
}

int PacketSource::snaplen() const { return pcap_snapshot(impl_->pcap); }

SourceStats PacketSource::Stats() const {
  SourceStats s;
  if (!live_) return s;
  struct pcap_stat ps {};
  if (pcap_stats(impl_->pcap, &ps) == 0) {
    s.received = ps.ps_recv;
    s.kernel_drops = ps.ps_drop;
    s.if_drops = ps.ps_ifdrop;
  }
  return s;
}

}  // namespace bbprof::capture
