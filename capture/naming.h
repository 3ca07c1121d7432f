// Node naming (paper section 6.2: a node is whatever the user wants to see as
// a black box). Host granularity names a node by its IP address; service
// granularity names a server endpoint by IP:port and a client by its IP, so
// that two services on one host are two nodes while a client's ephemeral
// ports do not each become a node. At either, a server called from its own
// address (a client and a server on one host, over loopback or not) is named
// IP:port: by its address alone, each such call would be a node calling
// itself, which nesting cannot place (a capture on one machine found no
// pattern at all), and which would offer itself as a parent or child of the
// host's other calls. A user map renames addresses, CIDR blocks
// or IP:port endpoints; the most specific entry wins (IP:port, then the
// longest matching prefix).
#ifndef BBPROF_CAPTURE_NAMING_H_
#define BBPROF_CAPTURE_NAMING_H_

#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"

namespace bbprof::capture {

// A transport endpoint. IPv4 addresses use the first 4 bytes of `addr`.
struct Endpoint {
  bool v6 = false;
  std::array<uint8_t, 16> addr{};
  uint16_t port = 0;
  auto operator<=>(const Endpoint&) const = default;
};

// "10.0.0.1", "2001:db8::1".
std::string FormatAddress(const Endpoint& e);
// "10.0.0.1:80", "[2001:db8::1]:80".
std::string FormatEndpoint(const Endpoint& e);
// Parses an address (no port, no brackets) into *e (port left alone).
bool ParseAddress(std::string_view text, Endpoint* e);

enum class Granularity { kHost, kService };
bool ParseGranularity(std::string_view text, Granularity* out);

class NameMap {
 public:
  // Parses the map file format of docs/capture.md: one `PATTERN NAME` per
  // line, PATTERN an address, a CIDR block (10.0.0.0/24, 2001:db8::/32) or
  // an endpoint (10.0.0.5:5432, [2001:db8::5]:53); `#` starts a comment.
  // Errors read "FILE:LINE: what is wrong".
  static Result<NameMap> Load(const std::string& path);
  static Result<NameMap> Parse(std::string_view text, std::string_view origin);

  // The mapped name of an endpoint / an address, or empty.
  std::string_view ForEndpoint(const Endpoint& e) const;
  std::string_view ForAddress(const Endpoint& e) const;
  bool empty() const { return endpoints_.empty() && prefixes_.empty(); }

 private:
  struct Prefix {
    bool v6;
    std::array<uint8_t, 16> addr;
    int bits;
    std::string name;
  };
  struct Exact {
    Endpoint endpoint;
    std::string name;
  };
  std::vector<Exact> endpoints_;   // sorted by endpoint
  std::vector<Prefix> prefixes_;   // sorted longest prefix first
};

// Names endpoints at the chosen granularity through the map.
class Namer {
 public:
  Namer(Granularity granularity, NameMap map)
      : granularity_(granularity), map_(std::move(map)) {}
  // `is_server`: the endpoint is the server side of its flow (its port
  // matters at service granularity). `from_own_address`: a server whose
  // client has its address; its port matters at any granularity.
  std::string Name(const Endpoint& e, bool is_server,
                   bool from_own_address = false) const;

 private:
  Granularity granularity_;
  NameMap map_;
};

}  // namespace bbprof::capture

#endif  // BBPROF_CAPTURE_NAMING_H_
