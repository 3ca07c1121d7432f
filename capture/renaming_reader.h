// RenamingReader: a trace read through the capture's node naming (naming.h),
// so that a trace can be renamed at analysis time (`nest`, `convolve`,
// `stats` take capture's --granularity and --names) instead of being
// captured again. It wraps any TraceReader and renames each node the first
// time it is seen; records pass through untouched otherwise.
//
// A node name is read back as the endpoint the capture named it after:
// "10.0.0.1" or "2001:db8::1" (a host, or a client at service granularity),
// "10.0.0.1:80" or "[2001:db8::1]:80" (a server at service granularity).
// Names that are not addresses (a names map's names, maketrace's names)
// stay as they are.
#ifndef BBPROF_CAPTURE_RENAMING_READER_H_
#define BBPROF_CAPTURE_RENAMING_READER_H_

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "capture/naming.h"
#include "trace/reader.h"

namespace bbprof::capture {

// Parses a node name written by the capture; *has_port tells whether it
// named a server endpoint. False when the name is not an address.
bool ParseNodeEndpoint(std::string_view name, Endpoint* e, bool* has_port);

// The name `name` gets through `namer` (service granularity keeps the
// trace's own granularity: a name with a port is a server, one without a
// host or client). `from_own_address`: as Namer::Name, for a server whose
// caller has its address.
std::string RenameNode(std::string_view name, const Namer& namer,
                       bool from_own_address = false);

class RenamingReader : public trace::TraceReader {
 public:
  // Names are interned into `nodes` (a fresh table if null).
  RenamingReader(std::unique_ptr<trace::TraceReader> inner, Namer namer,
                 std::shared_ptr<trace::NodeTable> nodes = nullptr);
  uint64_t raw_bytes_read() const override { return inner_->raw_bytes_read(); }

 protected:
  bool Advance(trace::Record& rec) override;

 private:
  trace::NodeId Map(trace::NodeId id);
  // The id a server node gets when its caller has its address (Namer::Name):
  // renamed by host, the two would be one node calling itself.
  trace::NodeId MapFromOwnAddress(trace::NodeId id);
  // Whether two inner nodes are named after one address.
  bool SameAddress(trace::NodeId a, trace::NodeId b);
  void SyncState();

  std::unique_ptr<trace::TraceReader> inner_;
  Namer namer_;
  static constexpr trace::NodeId kUnmapped = 0xFFFFFFFFu;
  std::vector<trace::NodeId> map_;  // inner id -> our id
  std::vector<trace::NodeId> own_map_;  // the same, by MapFromOwnAddress
  // Per inner id, the address it is named after (parsed on first need).
  struct Address {
    bool parsed = false, is_address = false;
    Endpoint endpoint;
  };
  std::vector<Address> addresses_;
};

}  // namespace bbprof::capture

#endif  // BBPROF_CAPTURE_RENAMING_READER_H_
