#include "capture/naming.h"

#include <arpa/inet.h>

#include <algorithm>
#include <charconv>

#include "base/atomic_file.h"
#include "trace/node_table.h"

namespace bbprof::capture {

std::string FormatAddress(const Endpoint& e) {
  char buf[INET6_ADDRSTRLEN];
  const char* s = inet_ntop(e.v6 ? AF_INET6 : AF_INET, e.addr.data(), buf,
                            sizeof buf);
  return s != nullptr ? std::string(s) : std::string("?");
}

std::string FormatEndpoint(const Endpoint& e) {
  std::string a = FormatAddress(e);
  std::string port = std::to_string(e.port);
  return e.v6 ? "[" + a + "]:" + port : a + ":" + port;
}

bool ParseAddress(std::string_view text, Endpoint* e) {
  std::string s(text);
  Endpoint out = *e;
  out.addr.fill(0);
  if (inet_pton(AF_INET, s.c_str(), out.addr.data()) == 1) {
    out.v6 = false;
  } else if (inet_pton(AF_INET6, s.c_str(), out.addr.data()) == 1) {
    out.v6 = true;
  } else {
    return false;
  }
  *e = out;
  return true;
}

bool ParseGranularity(std::string_view text, Granularity* out) {
  if (text == "host") {
    *out = Granularity::kHost;
  } else if (text == "service") {
    *out = Granularity::kService;
  } else {
    return false;
  }
  return true;
}

namespace {

bool ParsePort(std::string_view text, uint16_t* port) {
  unsigned value = 0;
  auto [p, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || p != text.data() + text.size() || value > 65535 ||
      text.empty()) {
    return false;
  }
  *port = static_cast<uint16_t>(value);
  return true;
}

bool PrefixMatches(const std::array<uint8_t, 16>& a,
                   const std::array<uint8_t, 16>& b, int bits) {
  int whole = bits / 8;
  if (!std::equal(a.begin(), a.begin() + whole, b.begin())) {
    return false;
  }
  int rest = bits % 8;
  if (rest == 0) {
    return true;
  }
  uint8_t mask = static_cast<uint8_t>(0xFF << (8 - rest));
  return (a[whole] & mask) == (b[whole] & mask);
}

}  // namespace

Result<NameMap> NameMap::Load(const std::string& path) {
  auto text = ReadWholeFile(path);
  if (!text.ok()) {
    return text.status();
  }
  return Parse(*text, path);
}

Result<NameMap> NameMap::Parse(std::string_view text, std::string_view origin) {
  NameMap map;
  size_t line_no = 0;
  while (!text.empty()) {
    size_t nl = text.find('\n');
    std::string_view line = text.substr(0, nl);
    text = nl == std::string_view::npos ? std::string_view() : text.substr(nl + 1);
    ++line_no;
    auto fail = [&](const std::string& what) {
      return Status::Error(std::string(origin) + ":" + std::to_string(line_no) +
                           ": " + what);
    };
    if (size_t hash = line.find('#'); hash != std::string_view::npos) {
      line = line.substr(0, hash);
    }
    std::vector<std::string_view> words;
    for (size_t i = 0; i < line.size();) {
      while (i < line.size() && (line[i] == ' ' || line[i] == '\t' || line[i] == '\r')) ++i;
      size_t start = i;
      while (i < line.size() && line[i] != ' ' && line[i] != '\t' && line[i] != '\r') ++i;
      if (i > start) words.push_back(line.substr(start, i - start));
    }
    if (words.empty()) {
      continue;
    }
    if (words.size() != 2) {
      return fail("expected 'ADDRESS|CIDR|IP:PORT NAME', found " +
                  std::to_string(words.size()) + " words");
    }
    std::string_view pattern = words[0];
    std::string name(words[1]);
    if (std::string why = trace::CheckNodeName(name); !why.empty()) {
      return fail("bad node name '" + name + "': " + why);
    }
    Endpoint e;
    if (size_t slash = pattern.find('/'); slash != std::string_view::npos) {
      if (!ParseAddress(pattern.substr(0, slash), &e)) {
        return fail("bad address in CIDR block '" + std::string(pattern) + "'");
      }
      unsigned bits = 0;
      std::string_view b = pattern.substr(slash + 1);
      auto [p, ec] = std::from_chars(b.data(), b.data() + b.size(), bits);
      if (ec != std::errc() || p != b.data() + b.size() || b.empty() ||
          bits > (e.v6 ? 128u : 32u)) {
        return fail("bad prefix length in '" + std::string(pattern) + "'");
      }
      map.prefixes_.push_back({e.v6, e.addr, static_cast<int>(bits), name});
      continue;
    }
    if (ParseAddress(pattern, &e)) {  // a bare address: a /32 or /128
      map.prefixes_.push_back({e.v6, e.addr, e.v6 ? 128 : 32, name});
      continue;
    }
    // IP:PORT or [IPv6]:PORT.
    std::string_view addr, port;
    if (!pattern.empty() && pattern.front() == '[') {
      size_t close = pattern.find("]:");
      if (close == std::string_view::npos) {
        return fail("bad endpoint '" + std::string(pattern) + "' (expected [IPv6]:PORT)");
      }
      addr = pattern.substr(1, close - 1);
      port = pattern.substr(close + 2);
    } else {
      size_t colon = pattern.rfind(':');
      if (colon == std::string_view::npos) {
        return fail("'" + std::string(pattern) +
                    "' is not an address, a CIDR block or an IP:PORT");
      }
      addr = pattern.substr(0, colon);
      port = pattern.substr(colon + 1);
    }
    if (!ParseAddress(addr, &e) || !ParsePort(port, &e.port)) {
      return fail("bad endpoint '" + std::string(pattern) + "'");
    }
    map.endpoints_.push_back({e, name});
  }
  std::stable_sort(map.prefixes_.begin(), map.prefixes_.end(),
                   [](const Prefix& a, const Prefix& b) { return a.bits > b.bits; });
  std::stable_sort(map.endpoints_.begin(), map.endpoints_.end(),
                   [](const Exact& a, const Exact& b) { return a.endpoint < b.endpoint; });
  return map;
}

std::string_view NameMap::ForEndpoint(const Endpoint& e) const {
  auto it = std::lower_bound(
      endpoints_.begin(), endpoints_.end(), e,
      [](const Exact& x, const Endpoint& key) { return x.endpoint < key; });
  if (it != endpoints_.end() && it->endpoint == e) {
    return it->name;
  }
  return {};
}

std::string_view NameMap::ForAddress(const Endpoint& e) const {
  for (const Prefix& p : prefixes_) {  // longest first: the first match wins
    if (p.v6 == e.v6 && PrefixMatches(p.addr, e.addr, p.bits)) {
      return p.name;
    }
  }
  return {};
}

std::string Namer::Name(const Endpoint& e, bool is_server,
                        bool from_own_address) const {
  if (is_server) {
    if (std::string_view n = map_.ForEndpoint(e); !n.empty()) {
      return std::string(n);
    }
  }
  std::string_view mapped = map_.ForAddress(e);
  std::string host = mapped.empty() ? FormatAddress(e) : std::string(mapped);
  if (is_server &&
      (granularity_ == Granularity::kService || from_own_address)) {
    if (mapped.empty()) {
      return FormatEndpoint(e);
    }
    return host + ":" + std::to_string(e.port);
  }
  return host;
}

}  // namespace bbprof::capture
