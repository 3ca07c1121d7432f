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

std::string RenameNode(std::string_view name, const Namer& namer) {
  Endpoint e;
  bool has_port = false;
  if (!ParseNodeEndpoint(name, &e, &has_port)) return std::string(name);
  return namer.Name(e, has_port);
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

bool RenamingReader::Advance(trace::Record& rec) {
  const bool more = inner_->Next(rec);
  if (inner_->meta().size() != meta_.size() ||
      inner_->bad_lines_skipped() != bad_lines_ || !more) {
    SyncState();
  }
  if (!more) return false;
  rec.sender = Map(rec.sender);
  rec.receiver = Map(rec.receiver);
  return true;
}

}  // namespace bbprof::capture
