#include <gtest/gtest.h>

#include <set>
#include <string>

#include "capture/decoder.h"

namespace bbprof::capture {
namespace {

TEST(Registry, EveryDecoderIsFoundByNameAndGenericIsLast) {
  auto all = AllDecoders();
  ASSERT_GE(all.size(), 5u);
  std::set<std::string> names;
  for (const DecoderInfo& d : all) {
    EXPECT_EQ(FindDecoder(d.name), &d);
    EXPECT_TRUE(names.insert(d.name).second) << d.name;
    EXPECT_TRUE(d.make_stream || d.make_datagram) << d.name;
  }
  for (const char* n : {"rpc", "dns", "http", "http2", "http2-end", "redis",
                        "memcached", "generic"}) {
    EXPECT_NE(FindDecoder(n), nullptr) << n;
  }
  EXPECT_STREQ(all.back().name, "generic");
  EXPECT_EQ(FindDecoder("nope"), nullptr);
}

TEST(Registry, WellKnownPorts) {
  auto has = [](const char* name, uint16_t port) {
    const auto& p = FindDecoder(name)->tcp_ports;
    return std::find(p.begin(), p.end(), port) != p.end();
  };
  EXPECT_TRUE(has("rpc", 111));
  EXPECT_TRUE(has("rpc", 2049));
  EXPECT_TRUE(has("dns", 53));
  for (uint16_t p : {80, 8080, 8000, 3128}) EXPECT_TRUE(has("http", p));
}

}  // namespace
}  // namespace bbprof::capture
