#include "cli/naming_flags.h"

#include <algorithm>
#include <charconv>
#include <utility>
#include <vector>

#include "capture/renaming_reader.h"
#include "cli/analysis_input.h"

namespace bbprof::cli {

void AddNamingFlags(CommandLine& cl, bool capture) {
  if (capture) {
    cl.options().add_options()(
        "granularity", po::value<std::string>()->default_value("host"),
        "node names: host (IP address) or service (server IP:port, client "
        "IP); at both, a server called from its own address is IP:port");
  } else {
    cl.options().add_options()(
        "granularity", po::value<std::string>(),
        "rename nodes as the trace is read: host (IP address) or service "
        "(server IP:port, client IP); at both, a server called from its own "
        "address is IP:port; default: as in the trace");
  }
  cl.options().add_options()(
      "names", po::value<std::string>(),
      "map file: 'ADDRESS|CIDR|IP:PORT NAME' per line (docs/capture.md)")(
      "max-nodes",
      po::value<std::string>()->default_value(
          std::to_string(NamingFlags::kDefaultMaxNodes)),
      "distinct node names kept; names first seen beyond become the one node "
      "{other-nodes} (counted; 0: no limit)");
}

std::optional<int> ParseNamingFlags(const CommandLine& cl, bool capture,
                                    NamingFlags* out) {
  out->given = cl.Has("granularity") || cl.Has("names");
  // Without --granularity an analysis command keeps each name's own
  // granularity, which is what service granularity does to a name (a name
  // with a port is a server, one without a host or client).
  out->granularity =
      capture ? capture::Granularity::kHost : capture::Granularity::kService;
  if (cl.Has("granularity") &&
      !capture::ParseGranularity(cl.Get<std::string>("granularity"),
                                 &out->granularity)) {
    return cl.UsageError("--granularity must be host or service, not '" +
                         cl.Get<std::string>("granularity") + "'");
  }
  if (auto rc = ParseLimitFlag(cl, "max-nodes", &out->max_nodes)) return *rc;
  if (cl.Has("names")) {
    auto map = capture::NameMap::Load(cl.Get<std::string>("names"));
    if (!map.ok()) return cl.Fail(map.status());
    out->names = std::move(*map);
  }
  return std::nullopt;
}

Result<std::unique_ptr<trace::TraceReader>> OpenNamedInput(
    const std::string& path, const trace::ReaderOptions& options,
    const NamingFlags& naming, std::shared_ptr<trace::NodeTable> nodes) {
  auto limited = [&] {
    auto table = std::make_shared<trace::NodeTable>();
    table->SetLimit(static_cast<size_t>(naming.max_nodes));
    return table;
  };
  if (nodes == nullptr) nodes = limited();
  if (!naming.given) return OpenAnalysisInput(path, options, std::move(nodes));
  auto inner = OpenAnalysisInput(path, options, limited());
  if (!inner.ok()) return inner.status();
  std::unique_ptr<trace::TraceReader> renamed =
      std::make_unique<capture::RenamingReader>(
          std::move(*inner), capture::Namer(naming.granularity, naming.names),
          std::move(nodes));
  if (!renamed->status().ok()) return renamed->status();
  return renamed;
}

void WarnIfNodesFolded(const CommandLine& cl, const trace::NodeTable& nodes) {
  WarnIfNodesFolded(cl, nodes.limit(), nodes.folded());
}

void WarnIfNodesFolded(const CommandLine& cl, size_t limit, uint64_t folded) {
  if (folded == 0) return;
  Warn(cl, "more than " + std::to_string(limit) +
               " distinct node names: " + std::to_string(folded) +
               " mentions of later ones became the node " +
               std::string(trace::NodeTable::kOverflowName) +
               " (raise --max-nodes)");
}

namespace {

struct Block {
  capture::Endpoint net;
  int bits;
};

bool InBlock(const capture::Endpoint& e, const Block& b) {
  if (e.v6 != b.net.v6) return false;
  for (int i = 0; i < b.bits; ++i) {
    const int byte = i / 8, bit = 7 - i % 8;
    if (((e.addr[byte] >> bit) & 1) != ((b.net.addr[byte] >> bit) & 1)) {
      return false;
    }
  }
  return true;
}

// The block of `bits` that holds `e`, written "10.9.0.0/24".
std::string BlockName(capture::Endpoint e, int bits) {
  e.port = 0;
  const int total = e.v6 ? 128 : 32;
  for (int i = bits; i < total; ++i) {
    e.addr[i / 8] &= static_cast<uint8_t>(~(1u << (7 - i % 8)));
  }
  return capture::FormatAddress(e) + "/" + std::to_string(bits);
}

bool ParseBits(std::string_view text, int max, int* bits) {
  auto [p, ec] = std::from_chars(text.data(), text.data() + text.size(), *bits);
  return !text.empty() && ec == std::errc() && p == text.data() + text.size() &&
         *bits >= 0 && *bits <= max;
}

// A client's address: its name read as the capture writes names.
bool ClientAddress(std::string_view name, capture::Endpoint* e) {
  bool has_port = false;
  return capture::ParseNodeEndpoint(name, e, &has_port);
}

}  // namespace

std::string ParseClientsFlag(std::string_view text,
                             nesting::ClientFolding* out) {
  using Mode = nesting::ClientFolding::Mode;
  out->spec = std::string(text);
  if (text == "fold") {
    out->mode = Mode::kFold;
    return "";
  }
  if (text == "keep") {
    out->mode = Mode::kKeep;
    return "";
  }
  if (!text.starts_with("cidr:") || text.size() == 5) {
    return "--clients must be fold, keep, cidr:/N[,/M] or "
           "cidr:BLOCK[,BLOCK...], not '" +
           std::string(text) + "'";
  }
  std::vector<std::string_view> items;
  for (std::string_view rest = text.substr(5);;) {
    const size_t comma = rest.find(',');
    items.push_back(rest.substr(0, comma));
    if (comma == std::string_view::npos) break;
    rest = rest.substr(comma + 1);
  }
  if (items[0].starts_with('/')) {
    // Prefix lengths: the first for IPv4, the second (default 64) for IPv6.
    int v4 = 0, v6 = 64;
    if (items.size() > 2 || !ParseBits(items[0].substr(1), 32, &v4) ||
        (items.size() == 2 && (!items[1].starts_with('/') ||
                               !ParseBits(items[1].substr(1), 128, &v6)))) {
      return "--clients cidr: expects /N for IPv4 clients (0-32) and "
             "optionally ,/M for IPv6 (0-128), like cidr:/24 or "
             "cidr:/24,/48, not '" +
             std::string(text) + "'";
    }
    out->mode = Mode::kGroup;
    out->group = [v4, v6](std::string_view name) {
      capture::Endpoint e;
      if (!ClientAddress(name, &e))
        return std::string(nesting::kFoldedClientsName);
      return BlockName(e, e.v6 ? v6 : v4);
    };
    return "";
  }
  std::vector<Block> blocks;
  for (std::string_view item : items) {
    const size_t slash = item.find('/');
    Block b;
    if (slash == std::string_view::npos ||
        !capture::ParseAddress(item.substr(0, slash), &b.net) ||
        !ParseBits(item.substr(slash + 1), b.net.v6 ? 128 : 32, &b.bits)) {
      return "--clients cidr: '" + std::string(item) +
             "' is not a CIDR block like 10.0.0.0/8 or 2001:db8::/32";
    }
    blocks.push_back(b);
  }
  std::stable_sort(
      blocks.begin(), blocks.end(),
      [](const Block& a, const Block& b) { return a.bits > b.bits; });
  out->mode = Mode::kGroup;
  out->group = [blocks](std::string_view name) {
    capture::Endpoint e;
    if (ClientAddress(name, &e)) {
      for (const Block& b : blocks) {
        if (InBlock(e, b)) return BlockName(e, b.bits);
      }
    }
    return std::string(nesting::kFoldedClientsName);
  };
  return "";
}

}  // namespace bbprof::cli
