// RenamingReader: node names read back as the endpoints the capture named
// them after, renamed through the capture's Namer as a trace is read.
#include "capture/renaming_reader.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "tests/util/temp_dir.h"

namespace bbprof::capture {
namespace {

TEST(RenamingReaderTest, ParsesNodeNamesAsEndpoints) {
  Endpoint e;
  bool port = false;
  ASSERT_TRUE(ParseNodeEndpoint("10.0.0.1", &e, &port));
  EXPECT_FALSE(port);
  EXPECT_EQ(FormatAddress(e), "10.0.0.1");
  ASSERT_TRUE(ParseNodeEndpoint("10.0.0.1:80", &e, &port));
  EXPECT_TRUE(port);
  EXPECT_EQ(FormatEndpoint(e), "10.0.0.1:80");
  ASSERT_TRUE(ParseNodeEndpoint("2001:db8::1", &e, &port));
  EXPECT_FALSE(port);
  EXPECT_TRUE(e.v6);
  ASSERT_TRUE(ParseNodeEndpoint("[2001:db8::1]:53", &e, &port));
  EXPECT_TRUE(port);
  EXPECT_EQ(e.port, 53);
  for (const char* not_address :
       {"WS1", "client", "10.0.0.1:http", "10.0.0.1:70000", "[2001:db8::1]",
        "10.0.0.1:", ""}) {
    EXPECT_FALSE(ParseNodeEndpoint(not_address, &e, &port)) << not_address;
  }
}

TEST(RenamingReaderTest, RenamesAsTheCaptureWould) {
  auto map = NameMap::Parse("10.0.0.5:5432 db\n10.1.0.0/16 lan\n", "m.map");
  ASSERT_TRUE(map.ok()) << map.status().message();
  const Namer host(Granularity::kHost, *map);
  const Namer service(Granularity::kService, *map);
  EXPECT_EQ(RenameNode("10.0.0.9:80", host), "10.0.0.9");
  EXPECT_EQ(RenameNode("10.0.0.9:80", service), "10.0.0.9:80");
  EXPECT_EQ(RenameNode("10.0.0.5:5432", host), "db");
  EXPECT_EQ(RenameNode("10.1.2.3", service), "lan");
  EXPECT_EQ(RenameNode("10.1.2.3:8080", service), "lan:8080");
  EXPECT_EQ(RenameNode("[2001:db8::1]:53", host), "2001:db8::1");
  EXPECT_EQ(RenameNode("WS1", host), "WS1");
}

TEST(RenamingReaderTest, RenamesRecordsAndKeepsMetaAndErrors) {
  bbprof::testing::TempDir dir;
  const std::string path = dir.Write(
      "t.trace",
      "#meta source=test\n1 CALL 10.0.0.1 10.0.0.2:80 1\n2 RET 10.0.0.2:80 "
      "10.0.0.1 1\n"
      "3 CALL 10.0.0.1 10.0.0.2:81 2\n2 RET 10.0.0.2:81 10.0.0.1 2\n");
  auto inner = trace::OpenTraceReader(path);
  ASSERT_TRUE(inner.ok()) << inner.status().message();
  RenamingReader r(std::move(*inner), Namer(Granularity::kHost, NameMap()));
  EXPECT_EQ(r.meta(), std::vector<std::string>{"source=test"});
  trace::Record rec;
  std::vector<std::string> receivers;
  while (r.Next(rec)) receivers.emplace_back(r.nodes().Name(rec.receiver));
  // The two ports of 10.0.0.2 are one host; the out-of-order line stops
  // the read with the inner reader's error.
  EXPECT_EQ(receivers,
            (std::vector<std::string>{"10.0.0.2", "10.0.0.1", "10.0.0.2"}));
  EXPECT_EQ(r.nodes().size(), 2u);
  ASSERT_FALSE(r.status().ok());
  EXPECT_NE(r.status().message().find("t.trace:5"), std::string::npos)
      << r.status().message();
}

// Renamed by host, a server and its caller on one address would be one node
// calling itself: the server keeps its port, as the capture names it.
TEST(RenamingReaderTest, AServerCalledFromItsOwnAddressKeepsItsPort) {
  bbprof::testing::TempDir dir;
  const std::string path = dir.Write(
      "t.trace",
      "1 CALL 127.0.0.1 127.0.0.1:6379 1\n2 RET 127.0.0.1:6379 127.0.0.1 1\n"
      "3 CALL 10.0.0.9 127.0.0.1:6379 2\n4 RET 127.0.0.1:6379 10.0.0.9 2\n"
      "5 MSG 10.0.0.2:80 10.0.0.2:81 -\n");
  auto inner = trace::OpenTraceReader(path);
  ASSERT_TRUE(inner.ok()) << inner.status().message();
  RenamingReader r(std::move(*inner), Namer(Granularity::kHost, NameMap()));
  trace::Record rec;
  std::vector<std::string> edges;
  while (r.Next(rec)) {
    edges.push_back(std::string(r.nodes().Name(rec.sender)) + ">" +
                    std::string(r.nodes().Name(rec.receiver)));
  }
  ASSERT_TRUE(r.status().ok()) << r.status().message();
  EXPECT_EQ(edges, (std::vector<std::string>{
                       "127.0.0.1>127.0.0.1:6379", "127.0.0.1:6379>127.0.0.1",
                       "10.0.0.9>127.0.0.1", "127.0.0.1>10.0.0.9",
                       "10.0.0.2:80>10.0.0.2:81"}));
}

}  // namespace
}  // namespace bbprof::capture
