// Operation names through `bbprof capture` (trace field 7): on the shared
// NFS captures, every procedure with the name, call count and mean latency
// (RET time - CALL time per callid) that Wireshark's RPC service response
// time statistics (`tshark -z rpc,srt`) give; and the cap on distinct ops.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "capture/transport.h"
#include "tests/capture/packet_builder.h"
#include "tests/util/run_cli.h"
#include "tests/util/temp_dir.h"

namespace bbprof::capture {
namespace {

using testing::Addr;
using testing::PacketBuilder;
using testing::PcapWriter;
using testing::ReadFile;
using testing::RunCli;
using testing::TempDir;

std::string Shell(const std::string& cmd, int* status) {
  std::string out;
  FILE* f = popen(cmd.c_str(), "r");
  if (f == nullptr) {
    *status = -1;
    return out;
  }
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, f)) > 0) out.append(buf, n);
  *status = pclose(f);
  return out;
}

bool HaveTshark() {
  int status = 0;
  Shell("command -v tshark >/dev/null 2>&1", &status);
  return status == 0;
}

struct Srt {
  int calls = 0;
  double mean_seconds = 0;
};

// `tshark -q -z rpc,srt,100003,3`: "Index Procedure Calls Min Max Avg Sum".
std::map<std::string, Srt> TsharkSrt(const std::string& pcap) {
  int status = 0;
  std::string out = Shell(
      "tshark -n -r " + pcap + " -q -z rpc,srt,100003,3 2>/dev/null", &status);
  std::map<std::string, Srt> srt;
  std::istringstream lines(out);
  for (std::string line; std::getline(lines, line);) {
    std::istringstream w(line);
    std::string index, name, calls, min, max, avg, sum, extra;
    if (!(w >> index >> name >> calls >> min >> max >> avg >> sum) ||
        (w >> extra) ||
        index.find_first_not_of("0123456789") != std::string::npos) {
      continue;
    }
    srt["nfs3:" + name] = {std::stoi(calls), std::stod(avg)};
  }
  return srt;
}

int64_t ParseNs(const std::string& t) {
  size_t dot = t.find('.');
  return std::stoll(t.substr(0, dot)) * 1'000'000'000 +
         std::stoll(t.substr(dot + 1));
}

// Per op: calls, and mean latency over the calls that have a return.
std::map<std::string, Srt> TraceSrt(const std::string& trace_text) {
  std::map<std::string, std::pair<int64_t, std::string>> open;  // callid
  std::map<std::string, Srt> srt;
  std::map<std::string, std::vector<int64_t>> latencies;
  std::istringstream lines(trace_text);
  for (std::string line; std::getline(lines, line);) {
    if (line.empty() || line[0] == '#') continue;
    std::vector<std::string> f;
    std::istringstream w(line);
    for (std::string field; std::getline(w, field, '\t');) f.push_back(field);
    if (f.size() < 7) continue;
    if (f[1] == "CALL") {
      open[f[4]] = {ParseNs(f[0]), f[6]};
      ++srt[f[6]].calls;
    } else if (f[1] == "RET" && open.contains(f[4])) {
      auto [t0, op] = open[f[4]];
      EXPECT_EQ(f[6], op) << "a RET carries its CALL's op: " << line;
      latencies[op].push_back(ParseNs(f[0]) - t0);
      open.erase(f[4]);
    }
  }
  for (auto& [op, l] : latencies) {
    double sum = 0;
    for (int64_t x : l) sum += static_cast<double>(x);
    srt[op].mean_seconds = sum / static_cast<double>(l.size()) / 1e9;
  }
  return srt;
}

// "Done when": the NFS captures show their procedures with the names, counts
// and latencies of tshark's SRT statistics.
TEST(CaptureOpsCliTest, NfsProceduresAgreeWithTsharkSrtStatistics) {
  // scripts/install-deps.sh installs tshark for the test run: its absence
  // is a broken set-up, not a reason to pass untested.
  ASSERT_TRUE(HaveTshark())
      << "tshark is not installed (run scripts/install-deps.sh)";
  TempDir dir;
  for (const char* name :
       {"nfs_base.pcap", "nfs_write.pcap", "nfs3_procedure.pcap"}) {
    const std::string pcap = std::string(BBPROF_SHARED_DIR) + "/pcaps/" + name;
    std::map<std::string, Srt> want = TsharkSrt(pcap);
    ASSERT_GE(want.size(), 10u) << name << ": tshark gave no SRT table";
    std::string out;
    ASSERT_EQ(
        RunCli("capture -q -r " + pcap + " -o " + dir.File("n.trace"), &out), 0)
        << out;
    std::map<std::string, Srt> got = TraceSrt(ReadFile(dir.File("n.trace")));
    std::map<std::string, Srt> got_nfs3;
    for (const auto& [op, s] : got) {
      if (op.starts_with("nfs3:")) got_nfs3[op] = s;
    }
    ASSERT_EQ(got_nfs3.size(), want.size()) << name;
    for (const auto& [op, w] : want) {
      ASSERT_TRUE(got_nfs3.contains(op)) << name << ": " << op;
      const Srt& g = got_nfs3[op];
      EXPECT_EQ(g.calls, w.calls) << name << ": " << op;
      // tshark prints seconds to the microsecond: a few percent, or that.
      EXPECT_LE(std::abs(g.mean_seconds - w.mean_seconds),
                0.03 * w.mean_seconds + 1.5e-6)
          << name << ": " << op << " bbprof " << g.mean_seconds << " tshark "
          << w.mean_seconds;
    }
  }
}

// HTTP exchanges on one connection, request i asking for routes[i].
void WriteRoutes(PcapWriter& w, const std::vector<std::string>& routes) {
  constexpr int64_t kT0 = 1'700'000'000'000'000'000;
  constexpr int64_t kMs = 1'000'000;
  Addr c{"10.0.0.1", 41000}, s{"10.0.0.2", 80};
  uint32_t cs = 1, ss = 1;
  for (size_t i = 0; i < routes.size(); ++i) {
    std::string q = "GET " + routes[i] + " HTTP/1.1\r\nHost: h\r\n\r\n";
    std::string a = "HTTP/1.1 204 No Content\r\n\r\n";
    int64_t t = kT0 + static_cast<int64_t>(i) * 10 * kMs;
    w.Add(t, PacketBuilder::Ethernet(PacketBuilder::Tcp(c, s, cs, kTcpAck, q),
                                     false));
    w.Add(t + kMs, PacketBuilder::Ethernet(
                       PacketBuilder::Tcp(s, c, ss, kTcpAck, a), false));
    cs += static_cast<uint32_t>(q.size());
    ss += static_cast<uint32_t>(a.size());
  }
}

TEST(CaptureOpsCliTest, DistinctOpsPerServerAreCappedAndCounted) {
  TempDir dir;
  {
    PcapWriter w(dir.File("r.pcap"));
    ASSERT_TRUE(w.ok());
    // Routes the templates cannot fold (fresh words): five distinct ops.
    WriteRoutes(w, {"/a", "/b", "/a", "/c", "/d", "/e", "/b"});
  }
  std::string out;
  ASSERT_EQ(RunCli("capture -q --max-ops 2 -r " + dir.File("r.pcap") + " -o " +
                       dir.File("r.trace"),
                   &out),
            0)
      << out;
  std::map<std::string, Srt> ops = TraceSrt(ReadFile(dir.File("r.trace")));
  EXPECT_EQ(ops["http:GET:/a"].calls, 2);
  EXPECT_EQ(ops["http:GET:/b"].calls, 2);
  EXPECT_EQ(ops["http:GET:{other}"].calls, 3);
  EXPECT_EQ(ops.size(), 3u);
  EXPECT_NE(ReadFile(dir.File("r.trace")).find(" ops_capped=3"),
            std::string::npos);
  // Without the cap (the default is 1000), every route keeps its name.
  ASSERT_EQ(RunCli("capture -q -r " + dir.File("r.pcap") + " -o " +
                       dir.File("all.trace"),
                   &out),
            0);
  EXPECT_EQ(TraceSrt(ReadFile(dir.File("all.trace"))).size(), 5u);
  EXPECT_EQ(ReadFile(dir.File("all.trace")).find("ops_capped"),
            std::string::npos);
  // A bad value is a usage error.
  EXPECT_EQ(
      RunCli("capture --max-ops -3 -r " + dir.File("r.pcap") + " -o -", &out),
      2)
      << out;
  EXPECT_NE(out.find("--max-ops"), std::string::npos) << out;
}

// The analysis commands reading a pcap directly see the ops too.
TEST(CaptureOpsCliTest, ConvertOfACaptureFileKeepsTheOps) {
  TempDir dir;
  {
    PcapWriter w(dir.File("r.pcap"));
    ASSERT_TRUE(w.ok());
    WriteRoutes(w, {"/item/1", "/item/2"});
  }
  std::string out;
  ASSERT_EQ(
      RunCli("convert " + dir.File("r.pcap") + " " + dir.File("c.trace"), &out),
      0)
      << out;
  std::map<std::string, Srt> ops = TraceSrt(ReadFile(dir.File("c.trace")));
  EXPECT_EQ(ops["http:GET:/item/{n}"].calls, 2);
}

// Each decoder's ops on the shared real captures (../shared/pcaps/SOURCES.md).
TEST(CaptureOpsCliTest, RealCapturesShowEachProtocolsOperations) {
  struct Case {
    const char* file;
    std::vector<std::pair<std::string, int>> calls;  // op, calls
  };
  const std::vector<Case> cases = {
      // 84 simple queries (tshark: 84 "Simple query"), one call each.
      {"postgresql_greenhouse_app.pcap",
       {{"pg:BEGIN", 26},
        {"pg:ROLLBACK", 22},
        {"pg:SELECT:plant", 16},
        {"pg:INSERT:user", 1}}},
      {"dns_tcp_multi.pcap", {{"dns:A", 1}, {"dns:AAAA", 1}}},
      {"http_1000_requests_one_dropped_response.pcap.gz",
       {{"http:GET:/", 1000}}},
      {"http_connect_proxy.pcap",
       {{"http:CONNECT:apache.org:443", 1}, {"dns:A", 1}}},
      // gRPC over h2c, captured without the connection preface.
      {"grpc_unary.pcap", {{"grpc:/agent.Synchronizer/Sync", 1}}},
      {"grpc_segmented.pcap", {{"grpc:/agent.Synchronizer/Push", 1}}},
      {"redis_resp_benchmark.pcap",
       {{"redis:PING", 2}, {"redis:LRANGE", 4}, {"redis:SET", 1}}},
      {"memcached_userdata.pcap",
       {{"memcached:gets", 112}, {"memcached:set", 1}}},
      {"rpc_portmap_sadmind.pcap",
       {{"portmap2:GETPORT", 13}, {"rpc:100232:10:0", 3}}},
  };
  TempDir dir;
  for (const Case& c : cases) {
    const std::string pcap =
        std::string(BBPROF_SHARED_DIR) + "/pcaps/" + c.file;
    std::string out;
    ASSERT_EQ(
        RunCli("capture -q -r " + pcap + " -o " + dir.File("x.trace"), &out), 0)
        << out;
    std::map<std::string, Srt> ops = TraceSrt(ReadFile(dir.File("x.trace")));
    for (const auto& [op, n] : c.calls) {
      EXPECT_EQ(ops[op].calls, n) << c.file << ": " << op;
    }
  }
}

// Two real captures made on one machine (SOURCES.md): the clients and the
// server share an address (127.0.0.1, ::1). Named by address alone, every
// call was the host calling itself and nest found no pattern at all; with
// the default flags the server is named by its port and each operation is
// a pattern of its own. Totals below a second are written in their unit
// (they were "0.000 s").
TEST(CaptureOpsCliTest, OneMachineCapturesGivePatternsWithDefaultFlags) {
  TempDir dir;
  struct Case {
    std::string file, signature, total;
  };
  const std::vector<Case> cases = {
      {"redis_resp_benchmark.pcap", "clients->127.0.0.1:6379[redis:LRANGE]",
       "count 4, total latency 290.0 us, mean latency 72.5 us"},
      {"http_1000_requests_one_dropped_response.pcap.gz",
       "clients->[::1]:80[http:GET:/]",
       "count 999, total latency 37.826 ms, mean latency 37.9 us"},
  };
  for (const auto& [file, signature, total] : cases) {
    const std::string pcap = std::string(BBPROF_SHARED_DIR) + "/pcaps/" + file;
    const std::string trace = dir.File("one.trace");
    std::string out;
    ASSERT_EQ(RunCli("capture -q -r " + pcap + " -o " + trace, &out), 0) << out;
    ASSERT_EQ(RunCli("nest -q " + trace, &out), 0) << out;
    EXPECT_NE(out.find(signature), std::string::npos) << file << "\n" << out;
    EXPECT_NE(out.find(total), std::string::npos) << file << "\n" << out;
    EXPECT_EQ(out.find("no path patterns found"), std::string::npos) << file;
  }
}

}  // namespace
}  // namespace bbprof::capture
