#include "capture/renaming_reader.h"

#include <charconv>
#include <utility>

namespace bbprof::capture {

bool ParseNodeEndpoint(std::string_view name, Endpoint* e, bool* has_port) {
  std::string_view addr = name;
  std::string_view port;
  if (!name.empty() && name.front() == '[') {
    const size_t close = name.find("]:");
    if (close == std::string_view::npos) return false;
    addr = name.substr(1, close - 1);
    port = name.substr(close + 2);
  } else if (const size_t colon = name.find(':');
             colon != std::string_view::npos &&
             name.find(':', colon + 1) == std::string_view::npos) {
    // One colon: IPv4 address and port (an IPv6 address has several).
    addr = name.substr(0, colon);
    port = name.substr(colon + 1);
  }
  Endpoint out;
  if (!ParseAddress(addr, &out)) return false;
  *has_port = addr.size() != name.size();
  if (*has_port) {
    unsigned value = 0;
    auto [p, ec] =
        std::from_chars(port.data(), port.data() + port.size(), value);
    if (port.empty() || ec != std::errc() || p != port.data() + port.size() ||
        value > 65535) {
      return false;
    }
    out.port = static_cast<uint16_t>(value);
  }
  *e = out;
  return true;
}

std::string RenameNode(std::string_view name, const Namer& namer,
                       bool from_own_address) {
  Endpoint e;
  bool has_port = false;
  if (!ParseNodeEndpoint(name, &e, &has_port)) return std::string(name);
  return namer.Name(e, has_port, from_own_address);
}

RenamingReader::RenamingReader(std::unique_ptr<trace::TraceReader> inner,
                               Namer namer,
                               std::shared_ptr<trace::NodeTable> nodes)
    : TraceReader(inner->path(), nodes ? std::move(nodes)
                                       : std::make_shared<trace::NodeTable>()),
      inner_(std::move(inner)),
      namer_(std::move(namer)) {
  SyncState();
}

void RenamingReader::SyncState() {
  status_ = inner_->status();
  meta_ = inner_->meta();
  bad_lines_ = inner_->bad_lines_skipped();
  first_bad_error_ = inner_->first_bad_line_error();
}

trace::NodeId RenamingReader::Map(trace::NodeId id) {
  if (id >= map_.size()) map_.resize(id + 1, kUnmapped);
  if (map_[id] == kUnmapped) {
    map_[id] = nodes_->Intern(RenameNode(inner_->nodes().Name(id), namer_));
  }
  return map_[id];
}

bool RenamingReader::SameAddress(trace::NodeId a, trace::NodeId b) {
  for (const trace::NodeId id : {a, b}) {
    if (id >= addresses_.size()) addresses_.resize(id + 1);
    Address& x = addresses_[id];
    if (x.parsed) continue;
    bool has_port = false;
    x.is_address =
        ParseNodeEndpoint(inner_->nodes().Name(id), &x.endpoint, &has_port);
    x.endpoint.port = 0;
    x.parsed = true;
  }
  const Address &x = addresses_[a], &y = addresses_[b];
  return x.is_address && y.is_address && x.endpoint == y.endpoint;
}

trace::NodeId RenamingReader::MapFromOwnAddress(trace::NodeId id) {
  if (id >= own_map_.size()) own_map_.resize(id + 1, kUnmapped);
  if (own_map_[id] == kUnmapped) {
    own_map_[id] = nodes_->Intern(RenameNode(inner_->nodes().Name(id), namer_,
                                             /*from_own_address=*/true));
  }
  return own_map_[id];
}

bool RenamingReader::Advance(trace::Record& rec) {
  const bool more = inner_->Next(rec);
  if (inner_->meta().size() != meta_.size() ||
      inner_->bad_lines_skipped() != bad_lines_ || !more) {
    SyncState();
  }
  if (!more) return false;
  const trace::NodeId sender = Map(rec.sender), receiver = Map(rec.receiver);
  if (sender == receiver && rec.sender != rec.receiver &&
      SameAddress(rec.sender, rec.receiver)) {
    // Two names that renaming would make one: a server and its caller on
    // one address. The server (the side named with a port) keeps its port.
    rec.sender = MapFromOwnAddress(rec.sender);
    rec.receiver = MapFromOwnAddress(rec.receiver);
  } else {
    rec.sender = sender;
    rec.receiver = receiver;
  }
  return true;
}

}  // namespace bbprof::capture
