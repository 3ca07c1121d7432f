#include "capture/naming.h"

#include <gtest/gtest.h>

namespace bbprof::capture {
namespace {

Endpoint Ep(const std::string& ip, uint16_t port) {
  Endpoint e;
  EXPECT_TRUE(ParseAddress(ip, &e)) << ip;
  e.port = port;
  return e;
}

TEST(NamingTest, FormatsAddressesAndEndpoints) {
  EXPECT_EQ(FormatEndpoint(Ep("10.1.2.3", 80)), "10.1.2.3:80");
  EXPECT_EQ(FormatEndpoint(Ep("2001:db8:0:0::1", 53)), "[2001:db8::1]:53");
  EXPECT_EQ(FormatAddress(Ep("::1", 0)), "::1");
  Endpoint e;
  EXPECT_FALSE(ParseAddress("10.1.2", &e));
  EXPECT_FALSE(ParseAddress("host.example", &e));
}

TEST(NamingTest, MostSpecificEntryWins) {
  auto map = NameMap::Parse(
      "# comment line\n"
      "10.0.0.0/8      datacenter\n"
      "10.1.0.0/16     rack1   # trailing comment\n"
      "10.1.2.3        db\n"
      "10.1.2.3:6379   cache\n"
      "2001:db8::/32   v6net\n",
      "names.map");
  ASSERT_TRUE(map.ok()) << map.status().message();
  EXPECT_EQ(map->ForEndpoint(Ep("10.1.2.3", 6379)), "cache");
  EXPECT_EQ(map->ForEndpoint(Ep("10.1.2.3", 5432)), "");
  EXPECT_EQ(map->ForAddress(Ep("10.1.2.3", 0)), "db");
  EXPECT_EQ(map->ForAddress(Ep("10.1.9.9", 0)), "rack1");
  EXPECT_EQ(map->ForAddress(Ep("10.200.0.1", 0)), "datacenter");
  EXPECT_EQ(map->ForAddress(Ep("11.0.0.1", 0)), "");
  EXPECT_EQ(map->ForAddress(Ep("2001:db8:ffff::1", 0)), "v6net");
}

TEST(NamingTest, GranularityDecidesWhetherServerPortsNameNodes) {
  auto map = NameMap::Parse("10.0.0.5 db\n10.0.0.6:8080 api\n", "m");
  ASSERT_TRUE(map.ok());
  Namer host(Granularity::kHost, *map);
  Namer service(Granularity::kService, *map);
  EXPECT_EQ(host.Name(Ep("10.0.0.5", 5432), true), "db");
  EXPECT_EQ(service.Name(Ep("10.0.0.5", 5432), true), "db:5432");
  EXPECT_EQ(service.Name(Ep("10.0.0.5", 40000), false), "db");
  EXPECT_EQ(service.Name(Ep("10.0.0.6", 8080), true), "api");
  EXPECT_EQ(host.Name(Ep("10.0.0.6", 8080), true), "api");
  // A client's port never names it, even when a map entry matches it.
  EXPECT_EQ(host.Name(Ep("10.0.0.6", 8080), false), "10.0.0.6");
  EXPECT_EQ(service.Name(Ep("10.0.0.7", 9000), true), "10.0.0.7:9000");
}

// A server called from its own address keeps its port at any granularity
// (by address alone the call would be a node calling itself); its callers,
// and its calls from other addresses, are named as before.
TEST(NamingTest, AServerCalledFromItsOwnAddressKeepsItsPort) {
  auto map = NameMap::Parse("10.0.0.5 db\n10.0.0.6:8080 api\n", "m");
  ASSERT_TRUE(map.ok());
  Namer host(Granularity::kHost, *map);
  Namer service(Granularity::kService, *map);
  EXPECT_EQ(host.Name(Ep("127.0.0.1", 6379), true, true), "127.0.0.1:6379");
  EXPECT_EQ(host.Name(Ep("127.0.0.1", 6379), true, false), "127.0.0.1");
  EXPECT_EQ(host.Name(Ep("127.0.0.1", 40000), false, true), "127.0.0.1");
  EXPECT_EQ(host.Name(Ep("::1", 80), true, true), "[::1]:80");
  EXPECT_EQ(host.Name(Ep("10.0.0.5", 5432), true, true), "db:5432");
  EXPECT_EQ(host.Name(Ep("10.0.0.6", 8080), true, true), "api");
  EXPECT_EQ(service.Name(Ep("10.0.0.7", 9000), true, true), "10.0.0.7:9000");
}

TEST(NamingTest, MapErrorsNameFileAndLine) {
  auto bad = [](const std::string& text) {
    auto m = NameMap::Parse(text, "x.map");
    EXPECT_FALSE(m.ok()) << text;
    return m.ok() ? std::string() : m.status().message();
  };
  EXPECT_EQ(bad("10.0.0.1 a\n10.0.0.2\n"),
            "x.map:2: expected 'ADDRESS|CIDR|IP:PORT NAME', found 1 words");
  EXPECT_EQ(bad("10.0.0.0/33 a\n"), "x.map:1: bad prefix length in '10.0.0.0/33'");
  EXPECT_EQ(bad("10.0.0.300 a\n"),
            "x.map:1: '10.0.0.300' is not an address, a CIDR block or an "
            "IP:PORT");
  EXPECT_EQ(bad("web a\n"),
            "x.map:1: 'web' is not an address, a CIDR block or an IP:PORT");
  EXPECT_EQ(bad("10.0.0.1:99999 a\n"), "x.map:1: bad endpoint '10.0.0.1:99999'");
  EXPECT_EQ(bad("[::1:80 a\n"),
            "x.map:1: bad endpoint '[::1:80' (expected [IPv6]:PORT)");
  EXPECT_NE(bad("10.0.0.1 a(b)\n").find("x.map:1: bad node name 'a(b)'"),
            std::string::npos);
  auto missing = NameMap::Load("/nonexistent/names.map");
  EXPECT_FALSE(missing.ok());
}

TEST(NamingTest, ParsesGranularity) {
  Granularity g;
  EXPECT_TRUE(ParseGranularity("service", &g));
  EXPECT_EQ(g, Granularity::kService);
  EXPECT_FALSE(ParseGranularity("process", &g));
}

}  // namespace
}  // namespace bbprof::capture
