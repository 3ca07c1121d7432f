// End-to-end tests of `bbprof nest --requests` (every inferred request, in
// the formats of nesting/requests/request_export.h) and of `bbprof eval` scoring the
// result and requests it is handed (results/eval/result_eval.h), through the
// binary.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <tuple>
#include <vector>

#include "results/eval/evaluation.h"
#include "tests/util/run_cli.h"
#include "tests/util/temp_dir.h"

namespace {

using bbprof::testing::ReadFile;
using bbprof::testing::RunCli;
using bbprof::testing::TempDir;
using json = nlohmann::json;

// Two requests of one pattern, WS(AUTH, DB); the second arrives at WS
// before the first has returned (so the two overlap on WS), but each of
// WS's calls has one candidate parent, so the trees are known.
const char kTrace[] =
    "1.000000 CALL client WS 1 p1 http:GET:/a\n"
    "1.001000 CALL WS AUTH 2 p1 -\n"
    "1.002000 RET AUTH WS 2 p1 -\n"
    "1.003000 CALL WS DB 3 p1 pg:SELECT:t\n"
    "1.004000 RET DB WS 3 p1 -\n"
    "1.004500 CALL client WS 4 p2 http:GET:/a\n"
    "1.005000 RET WS client 1 p1 -\n"
    "1.006000 CALL WS AUTH 5 p2 -\n"
    "1.007000 RET AUTH WS 5 p2 -\n"
    "1.008000 CALL WS DB 6 p2 pg:SELECT:t\n"
    "1.009000 RET DB WS 6 p2 -\n"
    "1.010000 RET WS client 4 p2 -\n";

std::string Export(TempDir& dir, const std::string& name,
                   const std::string& flags = "") {
  std::string t = dir.Write("a.trace", kTrace), out;
  EXPECT_EQ(
      RunCli("nest " + t + " -q --json " + dir.File(name + ".result.json") +
                 " --requests " + dir.File(name) + " " + flags,
             &out),
      0)
      << out;
  return dir.File(name);
}

bool IsHex(const json& v, size_t digits) {
  return v.is_string() &&
         std::regex_match(
             v.get<std::string>(),
             std::regex("[0-9a-f]{" + std::to_string(digits) + "}"));
}

std::string TagValue(const json& tags, const std::string& key) {
  for (const json& t : tags) {
    if (t["key"] == key)
      return t["value"].is_string() ? t["value"].get<std::string>()
                                    : t["value"].dump();
  }
  return "";
}

// What the Jaeger UI needs of an uploaded JSON file, as its loader reads it
// (jaeger-ui packages/jaeger-ui/src/model/transform-trace-data.tsx and
// selectors/trace): {"data":[trace...]}; a trace with a traceID; spans with
// a non-zero startTime (others are dropped), unique spanIDs and a
// processID found in processes; the parent is references[0] (CHILD_OF or
// FOLLOWS_FROM), a span of the same trace, else the span hangs off the
// trace's root. We also ask for one root per trace, so every parent link
// is explicit, and children inside their parent's time. Returns the number
// of traces.
size_t ExpectJaegerUiLoads(const json& doc) {
  EXPECT_TRUE(doc["data"].is_array());
  std::set<std::string> trace_ids;
  for (const json& tr : doc["data"]) {
    EXPECT_TRUE(IsHex(tr["traceID"], 32)) << tr["traceID"];
    EXPECT_TRUE(trace_ids.insert(tr["traceID"]).second) << "duplicate trace id";
    EXPECT_TRUE(tr["processes"].is_object());
    std::map<std::string, const json*> by_id;
    for (const json& s : tr["spans"]) {
      EXPECT_TRUE(IsHex(s["spanID"], 16));
      EXPECT_EQ(s["traceID"], tr["traceID"]);
      EXPECT_TRUE(by_id.emplace(s["spanID"], &s).second) << "duplicate span id";
      EXPECT_TRUE(s["startTime"].is_number_integer() &&
                  s["startTime"].get<int64_t>() > 0);
      EXPECT_TRUE(s["duration"].is_number_integer() &&
                  s["duration"].get<int64_t>() >= 0);
      EXPECT_TRUE(tr["processes"].contains(s["processID"].get<std::string>()));
      EXPECT_TRUE(s["operationName"].is_string());
      EXPECT_TRUE(s["logs"].is_array());
      EXPECT_EQ(TagValue(s["tags"], "span.kind"), "server");
    }
    int roots = 0;
    for (const auto& [id, s] : by_id) {
      if ((*s)["references"].empty()) {
        ++roots;
        EXPECT_NE(TagValue((*s)["tags"], "bbprof.pattern.rank"), "");
        continue;
      }
      const json& ref = (*s)["references"][0];
      EXPECT_EQ(ref["refType"], "CHILD_OF");
      EXPECT_EQ(ref["traceID"], tr["traceID"]);
      auto parent = by_id.find(ref["spanID"]);
      if (parent == by_id.end()) {
        ADD_FAILURE() << "parent not in the trace";
        continue;
      }
      // The caller of a call is the service of its parent span.
      const json& p = *parent->second;
      EXPECT_EQ(
          tr["processes"][p["processID"].get<std::string>()]["serviceName"],
          TagValue((*s)["tags"], "peer.service"));
      EXPECT_GE((*s)["startTime"].get<int64_t>(),
                p["startTime"].get<int64_t>());
    }
    EXPECT_EQ(roots, 1);
  }
  return doc["data"].size();
}

TEST(RequestExportTest, JaegerFileIsWhatTheJaegerUiLoads) {
  TempDir dir;
  json doc = json::parse(ReadFile(Export(dir, "r.jaeger.json")));
  ASSERT_EQ(ExpectJaegerUiLoads(doc), 2u);
  for (const json& tr : doc["data"]) {
    ASSERT_EQ(tr["spans"].size(), 3u);
    for (const json& s : tr["spans"]) {
      const std::string service =
          tr["processes"][s["processID"].get<std::string>()]["serviceName"];
      if (s["references"].empty()) {
        EXPECT_EQ(service, "WS");
        EXPECT_EQ(s["operationName"], "http:GET:/a");
        EXPECT_EQ(TagValue(s["tags"], "bbprof.pattern.rank"), "1");
      } else {
        // The right parent links: AUTH and DB were called by WS.
        EXPECT_TRUE(service == "AUTH" || service == "DB") << service;
        EXPECT_EQ(TagValue(s["tags"], "peer.service"), "WS");
      }
    }
  }
}

// A trace of samples/CONF.conf made with the given maketrace flags.
std::string Maketrace(TempDir& dir, const std::string& conf,
                      const std::string& flags) {
  const std::string t = dir.File(conf + ".bbt");
  std::string out;
  EXPECT_EQ(RunCli("maketrace " + std::string(BBPROF_SOURCE_DIR) + "/samples/" +
                       conf + ".conf -q " + flags + " -o " + t,
                   &out),
            0)
      << out;
  return t;
}

// nest TRACE --requests DIR/NAME, then eval of the result (which finds the
// requests through the result); returns the evaluation JSON.
json NestAndEvalRequests(TempDir& dir, const std::string& trace,
                         const std::string& name) {
  std::string out;
  EXPECT_EQ(RunCli("nest " + trace + " -q --json " + dir.File("r.json") +
                       " --requests " + dir.File(name),
                   &out),
            0)
      << out;
  EXPECT_EQ(RunCli("eval " + dir.File("r.json") + " --truth " + trace +
                       " -q --json " + dir.File("e.json"),
                   &out),
            0)
      << out;
  return json::parse(ReadFile(dir.File("e.json")));
}

// The demo (scripts/demo.sh: multi-tier with 200 ms added at WS2, seed 1,
// shortened here): its Jaeger export loads, and its parent links are the
// engine's, as eval reads them back: the same figures as from the OTLP
// export, and nearly every request right.
TEST(RequestExportTest, TheDemosJaegerExportLoadsWithTheRightParents) {
  TempDir dir;
  const std::string t =
      Maketrace(dir, "multitier-added-delay", "--seed 1 --messages 20000");
  json eval[2] = {NestAndEvalRequests(dir, t, "demo.jaeger.json"),
                  NestAndEvalRequests(dir, t, "demo.otlp.json")};
  json doc = json::parse(ReadFile(dir.File("demo.jaeger.json")));
  EXPECT_EQ(ExpectJaegerUiLoads(doc),
            eval[0]["requests"]["exported"].get<size_t>());
  EXPECT_EQ(eval[0]["instances"], eval[1]["instances"]);
  EXPECT_EQ(eval[0]["requests"]["unknown_calls"], 0);
  EXPECT_GT(eval[0]["request_accuracy"].get<double>(), 0.95);
}

// OTLP/JSON encoding rules: lowerCamelCase names, ids in hex, 64-bit
// integers as strings, enums as integers; one TracesData per line.
TEST(RequestExportTest, OtlpLinesFollowTheOtlpJsonEncoding) {
  TempDir dir;
  std::istringstream lines(ReadFile(Export(dir, "r.otlp.json")));
  std::string line;
  int n = 0;
  while (std::getline(lines, line)) {
    ++n;
    json doc = json::parse(line);
    std::map<std::string, std::string> service_of_span, parent_of_span;
    for (const json& rs : doc["resourceSpans"]) {
      const json& attr = rs["resource"]["attributes"][0];
      ASSERT_EQ(attr["key"], "service.name");
      const std::string service = attr["value"]["stringValue"];
      for (const json& ss : rs["scopeSpans"]) {
        EXPECT_EQ(ss["scope"]["name"], "bbprof");
        for (const json& s : ss["spans"]) {
          ASSERT_TRUE(IsHex(s["traceId"], 32));
          ASSERT_TRUE(IsHex(s["spanId"], 16));
          EXPECT_EQ(s["kind"], 2);
          ASSERT_TRUE(s["startTimeUnixNano"].is_string());
          ASSERT_TRUE(s["endTimeUnixNano"].is_string());
          EXPECT_LE(std::stoll(s["startTimeUnixNano"].get<std::string>()),
                    std::stoll(s["endTimeUnixNano"].get<std::string>()));
          service_of_span[s["spanId"]] = service;
          if (s.contains("parentSpanId")) {
            ASSERT_TRUE(IsHex(s["parentSpanId"], 16));
            parent_of_span[s["spanId"]] = s["parentSpanId"];
          }
        }
      }
    }
    ASSERT_EQ(service_of_span.size(), 3u);
    ASSERT_EQ(parent_of_span.size(), 2u);
    for (const auto& [span, parent] : parent_of_span) {
      EXPECT_EQ(service_of_span[parent], "WS");
    }
  }
  EXPECT_EQ(n, 2);
}

// The same file through the official OTLP protobuf definitions (protobufjs,
// from npm; scripts/install-deps.sh installs them under build/npm).
TEST(RequestExportTest, OtlpLinesParseWithTheOfficialProtobufDefinitions) {
  const std::string modules =
      std::string(BBPROF_SOURCE_DIR) + "/build/npm/node_modules";
  // scripts/install-deps.sh installs both for the test run: their absence
  // is a broken set-up, not a reason to pass unchecked.
  ASSERT_EQ(std::system("node --version >/dev/null 2>&1"), 0)
      << "node is not installed (run scripts/install-deps.sh)";
  ASSERT_TRUE(std::filesystem::exists(
      modules + "/@opentelemetry/otlp-proto-exporter-base"))
      << "@opentelemetry/otlp-proto-exporter-base is not installed under "
      << modules << " (run scripts/install-deps.sh)";
  TempDir dir;
  const std::string sample =
      std::string(BBPROF_SOURCE_DIR) + "/samples/multitier-small.trace";
  std::string out;
  for (const std::string& trace : {dir.Write("a.trace", kTrace), sample}) {
    const std::string file = dir.File("x.otlp.json");
    ASSERT_EQ(RunCli("nest " + trace + " -q --json " + dir.File("r.json") +
                         " --requests " + file,
                     &out),
              0)
        << out;
    const std::string cmd = "node " + std::string(BBPROF_SOURCE_DIR) +
                            "/tests/nesting/otlp_check.js " + modules + " " +
                            file + " 2>&1";
    FILE* f = popen(cmd.c_str(), "r");
    ASSERT_NE(f, nullptr);
    char buf[4096];
    std::string got;
    size_t k;
    while ((k = fread(buf, 1, sizeof buf, f)) > 0) got.append(buf, k);
    EXPECT_EQ(pclose(f), 0) << got;
    EXPECT_EQ(got.rfind("ok ", 0), 0u) << got;
  }
}

// Chrome / Perfetto trace events (Google's Trace Event Format): complete
// events with ts/dur in microseconds, a process per node named by a
// metadata event, overlapping calls of a node on different threads, and a
// flow arrow from each caller's slice to its callee's.
TEST(RequestExportTest, ChromeTraceHasLanesAndFlows) {
  TempDir dir;
  json doc = json::parse(ReadFile(Export(dir, "r.perfetto.json")));
  ASSERT_TRUE(doc["traceEvents"].is_array());
  std::map<int, std::string> process;
  std::map<std::pair<int, int>, std::vector<std::pair<double, double>>> lanes;
  std::map<std::string, json> flow_start, flow_end;
  int complete = 0;
  for (const json& e : doc["traceEvents"]) {
    const std::string ph = e["ph"];
    if (ph == "M" && e["name"] == "process_name")
      process[e["pid"]] = e["args"]["name"];
    if (ph == "X") {
      ++complete;
      ASSERT_TRUE(e["ts"].is_number());
      ASSERT_TRUE(e["dur"].is_number());
      lanes[{e["pid"], e["tid"]}].emplace_back(
          e["ts"], e["ts"].get<double>() + e["dur"].get<double>());
    }
    if (ph == "s") flow_start[e["id"]] = e;
    if (ph == "f") {
      EXPECT_EQ(e["bp"], "e");
      flow_end[e["id"]] = e;
    }
  }
  EXPECT_EQ(complete, 6);
  std::set<std::string> names;
  for (const auto& [pid, name] : process) names.insert(name);
  EXPECT_EQ(names, (std::set<std::string>{"WS", "AUTH", "DB"}));
  int ws_lanes = 0;
  for (auto& [lane, iv] : lanes) {
    if (process[lane.first] == "WS") ++ws_lanes;
    std::sort(iv.begin(), iv.end());
    for (size_t i = 1; i < iv.size(); ++i) {
      EXPECT_LE(iv[i - 1].second, iv[i].first)
          << "overlapping calls share a lane";
    }
  }
  EXPECT_EQ(ws_lanes, 2) << "the two overlapping WS calls need two lanes";
  ASSERT_EQ(flow_start.size(), 4u);
  for (const auto& [id, s] : flow_start) {
    ASSERT_TRUE(flow_end.count(id));
    EXPECT_EQ(process[s["pid"]], "WS");  // arrows leave the caller
    EXPECT_NE(process[flow_end[id]["pid"]], "WS");
    // inside a WS slice on the lane it names
    bool inside = false;
    for (const auto& [a, b] : lanes[{s["pid"], s["tid"]}]) {
      inside |= a <= s["ts"].get<double>() && s["ts"].get<double>() <= b;
    }
    EXPECT_TRUE(inside);
  }
  // Nanoseconds survive as microsecond decimals: the AUTH call of the
  // first request starts 1 ms after the origin.
  EXPECT_NE(ReadFile(dir.File("r.perfetto.json")).find("\"ts\":1000.000"),
            std::string::npos);
}

// One row per request: CSV per RFC 4180 (CRLF, quoted fields with commas),
// TSV unquoted; the node that adds the most time is WS (5 ms minus 2 ms in
// its children).
TEST(RequestExportTest, CsvAndTsvRows) {
  TempDir dir;
  const std::string csv = ReadFile(Export(dir, "r.csv"));
  std::vector<std::string> rows;
  size_t pos = 0, crlf;
  while ((crlf = csv.find("\r\n", pos)) != std::string::npos) {
    rows.push_back(csv.substr(pos, crlf - pos));
    pos = crlf + 2;
  }
  EXPECT_EQ(pos, csv.size()) << "every line ends in CRLF";
  ASSERT_EQ(rows.size(), 3u);
  EXPECT_EQ(rows[0],
            "trace_id,start,pattern_rank,pattern_signature,caller,root_node,"
            "root_op,latency_s,"
            "calls,most_time_node,most_time_op,most_time_own_s");
  json result = json::parse(ReadFile(dir.File("r.csv.result.json")));
  const std::string sig = result["patterns"][0]["signature"];
  std::smatch m;
  ASSERT_TRUE(
      std::regex_match(rows[1], m,
                       std::regex("([0-9a-f]{32}),([^,]*),1,\"(.*)\",([^,]*),"
                                  "WS,http:GET:/a,0.005000000,3,WS,"
                                  "http:GET:/a,0.003000000")))
      << rows[1];
  EXPECT_EQ(m[2], "1970-01-01T00:00:01.000000000Z");
  EXPECT_EQ(m[3], sig);
  EXPECT_NE(rows[2].find(",1970-01-01T00:00:01.004500000Z,"), std::string::npos)
      << rows[2];

  const std::string tsv = ReadFile(Export(dir, "r.tsv"));
  EXPECT_EQ(tsv.find('"'), std::string::npos);
  EXPECT_EQ(tsv.find('\r'), std::string::npos);
  EXPECT_NE(tsv.find("\t" + sig + "\t"), std::string::npos) << tsv;
}

TEST(RequestExportTest, TwoRunsWriteIdenticalFiles) {
  TempDir dir;
  for (const char* name :
       {"a.jaeger.json", "a.otlp.json", "a.chrome.json", "a.csv"}) {
    const std::string first = ReadFile(Export(dir, name));
    EXPECT_EQ(ReadFile(Export(dir, name)), first) << name;
  }
}

TEST(RequestExportTest, FormatFlagAndErrors) {
  TempDir dir;
  std::string t = dir.Write("a.trace", kTrace), out;
  // --requests-format overrides the name; compressed names keep their format.
  ASSERT_EQ(
      RunCli("nest " + t + " -q --json " + dir.File("r.json") + " --requests " +
                 dir.File("x.out") + " --requests-format otlp",
             &out),
      0)
      << out;
  EXPECT_NE(ReadFile(dir.File("x.out")).find("\"resourceSpans\""),
            std::string::npos);
  EXPECT_EQ(
      RunCli("nest " + t + " -q --requests " + dir.File("x.csv.gz"), &out), 0)
      << out;
  EXPECT_EQ(RunCli("nest " + t + " -q --requests " + dir.File("x.txt"), &out),
            2);
  EXPECT_NE(out.find("--requests-format"), std::string::npos) << out;
  EXPECT_EQ(RunCli("nest " + t + " -q --requests " + dir.File("x.txt") +
                       " --requests-format yaml",
                   &out),
            2);
  EXPECT_EQ(RunCli("nest " + t + " -q --requests-format jaeger", &out), 2);
  EXPECT_EQ(RunCli("nest " + t + " --requests - --requests-format csv --json -",
                   &out),
            2);
  // --requests - replaces the report on standard output.
  ASSERT_EQ(
      RunCli("nest " + t + " -q --requests - --requests-format csv", &out), 0)
      << out;
  EXPECT_EQ(out.rfind("trace_id,start,", 0), 0u) << out;
  EXPECT_EQ(out.find("most time added"), std::string::npos) << out;
  EXPECT_EQ(
      RunCli("nest " + t + " -q --requests " + dir.File("no/such/dir/x.csv"),
             &out),
      1);
  EXPECT_FALSE(std::filesystem::exists(dir.File("no")));
}

// ---- eval: scores what it is given.

std::string Sample() {
  return std::string(BBPROF_SOURCE_DIR) + "/samples/multitier-small.trace";
}

TEST(ResultEvalCliTest, AnEmptiedPatternsArrayNoLongerScoresPerfect) {
  TempDir dir;
  std::string out;
  ASSERT_EQ(
      RunCli("nest " + Sample() + " -q --json " + dir.File("r.json"), &out), 0)
      << out;
  json r = json::parse(ReadFile(dir.File("r.json")));
  ASSERT_GT(r["patterns"].size(), 0u);
  const size_t n = r["patterns"].size();
  ASSERT_EQ(RunCli("eval " + dir.File("r.json") + " --truth " + Sample() +
                       " -q --json " + dir.File("full.json"),
                   &out),
            0)
      << out;
  json full = json::parse(ReadFile(dir.File("full.json")));
  EXPECT_EQ(full["patterns"]["false_negatives"], 0);
  r["patterns"] = json::array();
  dir.Write("empty.json", r.dump());
  ASSERT_EQ(RunCli("eval " + dir.File("empty.json") + " --truth " + Sample() +
                       " -q --json " + dir.File("e.json"),
                   &out),
            0)
      << out;
  json e = json::parse(ReadFile(dir.File("e.json")));
  EXPECT_EQ(e["patterns"]["inferred"], 0);
  EXPECT_EQ(e["patterns"]["false_negatives"], n);
  EXPECT_EQ(e["top_n"]["curve"][0]["false_negatives"], 1);
  // Without requests, instances and messages are not scored, not invented.
  EXPECT_FALSE(e.contains("instances"));
}

TEST(ResultEvalCliTest, AResultScoredAgainstAnotherTraceIsRefused) {
  TempDir dir;
  std::string out;
  ASSERT_EQ(
      RunCli("nest " + Sample() + " -q --json " + dir.File("r.json"), &out), 0)
      << out;
  // Same size, one digit of the last pathid different: only the checksum
  // tells.
  std::string text = ReadFile(Sample());
  const size_t digit = text.find_last_of("123456789");
  text[digit] = text[digit] == '9' ? '8' : static_cast<char>(text[digit] + 1);
  const std::string other = dir.Write("other.trace", text);
  EXPECT_EQ(RunCli("eval " + dir.File("r.json") + " --truth " + other, &out),
            1);
  EXPECT_NE(out.find("not the input of"), std::string::npos) << out;
  EXPECT_NE(out.find("CRC-32"), std::string::npos) << out;
  // A different size is refused before any work.
  const std::string shorter = dir.Write("short.trace", std::string(kTrace));
  EXPECT_EQ(RunCli("eval " + dir.File("r.json") + " --truth " + shorter, &out),
            1);
  EXPECT_NE(out.find("not the input of"), std::string::npos) << out;
  // A result that does not record its input cannot be checked.
  json r = json::parse(ReadFile(dir.File("r.json")));
  r["input"].erase("crc32");
  dir.Write("old.json", r.dump());
  EXPECT_EQ(
      RunCli("eval " + dir.File("old.json") + " --truth " + Sample(), &out), 1);
  EXPECT_NE(out.find("input.crc32"), std::string::npos) << out;
}

// Found by the eval fuzz target (fuzz/regressions/eval/): huge numbers in
// the recorded params were converted to int and int64 without a check,
// undefined behaviour that UBSan stopped on and release builds ran with.
TEST(ResultEvalCliTest, OutOfRangeParamsAreRefusedNamingTheField) {
  TempDir dir;
  std::string out;
  ASSERT_EQ(
      RunCli("nest " + Sample() + " -q --json " + dir.File("r.json"), &out), 0)
      << out;
  const json r = json::parse(ReadFile(dir.File("r.json")));
  for (const auto& [key, value, what] :
       {std::tuple{"refine_passes", json(1e300), "integer from 0 to 100"},
        std::tuple{"timeline_passes", json(-1), "integer from 0 to 100"},
        std::tuple{"timeline_passes", json(2.5), "integer from 0 to 100"},
        std::tuple{"skew_window_s", json(1e300), "non-negative number"},
        std::tuple{"skew_window_s", json(-0.5), "non-negative number"}}) {
    json bad = r;
    bad["params"][key] = value;
    dir.Write("bad.json", bad.dump());
    EXPECT_EQ(
        RunCli("eval " + dir.File("bad.json") + " --truth " + Sample(), &out),
        1)
        << key << " " << value;
    EXPECT_NE(out.find(std::string("bad.json: bad \"params\": \"") + key),
              std::string::npos)
        << out;
    EXPECT_NE(out.find(what), std::string::npos) << out;
  }
}

// eval of the exported requests gives the figures of the re-run evaluation
// (results/eval/evaluation.h, which compares the engine's own two runs call by
// call), on a maketrace sample with overlapping requests.
TEST(ResultEvalCliTest, ExportedRequestsGiveTheRerunFigures) {
  TempDir dir;
  const std::string t =
      Maketrace(dir, "children-parallel", "--messages 40000 --seed 3");
  std::string out;
  auto rerun = bbprof::nesting::Evaluate(t, bbprof::nesting::Params{}, {});
  ASSERT_TRUE(rerun.ok()) << rerun.status().message();
  json figures[2];
  int k = 0;
  for (const char* name : {"x.otlp.json", "x.jaeger.json"}) {
    // The result records the requests file: eval finds it by itself.
    figures[k] = NestAndEvalRequests(dir, t, name);
    const json& e = figures[k++];
    ASSERT_TRUE(e.contains("instances")) << e.dump();
    EXPECT_EQ(e["instances"]["true"], rerun->true_instances);
    EXPECT_NEAR(e["instances"]["correct"].get<double>(),
                static_cast<double>(rerun->correct_instances),
                0.005 * static_cast<double>(rerun->true_instances));
    EXPECT_NEAR(e["messages"]["error_rate"].get<double>(),
                rerun->message_error_rate, 0.005);
    EXPECT_EQ(e["requests"]["unknown_calls"], 0);
    EXPECT_GT(e["request_accuracy"].get<double>(), 0.5);
    EXPECT_LE(e["request_accuracy"].get<double>(), 1.0);
    // maketrace gives every instance its own pathid.
    EXPECT_EQ(e["requests"]["true"], rerun->true_instances);
    EXPECT_EQ(e["requests"]["correct"], e["instances"]["correct"]);
  }
  EXPECT_EQ(figures[0]["instances"], figures[1]["instances"]);
  EXPECT_EQ(figures[0]["request_accuracy"], figures[1]["request_accuracy"]);
  // --no-requests scores the patterns only.
  ASSERT_EQ(RunCli("eval " + dir.File("r.json") + " --truth " + t +
                       " --no-requests -q --json " + dir.File("p.json"),
                   &out),
            0)
      << out;
  EXPECT_FALSE(json::parse(ReadFile(dir.File("p.json"))).contains("instances"));
}

TEST(ResultEvalCliTest, ExitCodes) {
  TempDir dir;
  std::string out;
  ASSERT_EQ(RunCli("nest " + Sample() + " -q --json " + dir.File("r.json") +
                       " --requests " + dir.File("x.csv"),
                   &out),
            0)
      << out;
  // A CSV keeps no trees: it cannot be scored.
  EXPECT_EQ(RunCli("eval " + dir.File("r.json") + " --truth " + Sample(), &out),
            1);
  EXPECT_NE(out.find("x.csv"), std::string::npos) << out;
  EXPECT_EQ(RunCli("eval " + dir.File("r.json") + " --truth " + Sample() +
                       " --no-requests -q",
                   &out),
            0)
      << out;
  EXPECT_EQ(RunCli("eval " + dir.File("r.json"), &out), 2);
  EXPECT_EQ(RunCli("eval " + dir.File("r.json") + " --truth " + Sample() +
                       " --requests a.otlp.json --no-requests",
                   &out),
            2);
  EXPECT_EQ(RunCli("eval " + dir.File("r.json") + " --truth " + Sample() +
                       " --requests " + dir.File("missing.otlp.json"),
                   &out),
            1);
  dir.Write("bad.otlp.json", "{\"resourceSpans\": 3}\n");
  EXPECT_EQ(RunCli("eval " + dir.File("r.json") + " --truth " + Sample() +
                       " --requests " + dir.File("bad.otlp.json"),
                   &out),
            1);
  EXPECT_NE(out.find("bad.otlp.json:1"), std::string::npos) << out;
}

}  // namespace
