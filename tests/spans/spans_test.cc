// Tests of spans/: the three span formats read into the same records, record
// by record, and every way a span can be left out is counted, never fatal.
#include "spans/spans.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "tests/util/temp_dir.h"

namespace bbprof::spans {
namespace {

using trace::Kind;

struct Imported {
  std::vector<Message> messages;
  Counters counters;
  Format format = Format::kAuto;
};

Imported Import(const std::string& text, Format format = Format::kAuto,
                const ImportOptions& options = {}) {
  Imported out;
  std::vector<Span> spans;
  Result<Format> f = ParseSpans(text, "t.json", format, &spans, &out.counters);
  EXPECT_TRUE(f.ok()) << f.status().message();
  if (f.ok()) out.format = *f;
  out.messages = BuildMessages(spans, options, &out.counters);
  return out;
}

std::string Testdata(const std::string& name) {
  return bbprof::testing::ReadFile(std::string(BBPROF_SOURCE_DIR) +
                                   "/tests/spans/testdata/" + name);
}

// One expected record: microseconds after 1700000000 s.
struct Want {
  int64_t us;
  Kind kind;
  const char* sender;
  const char* receiver;
  const char* callid;
  const char* op;
};

// The fixtures hold two requests (trace ids ...4736 and ...4737, 10 ms
// apart), each: an external client calls frontend (host clock +0), which
// calls api (clock +30 us), whose internal span "load-items" fans out two
// parallel queries to db (clock -20 us). Every CALL is on the server's
// clock, every RET on the client's; the internal span leaves no record.
void ExpectThreeTier(const Imported& got) {
  const char kT1[] = "4bf92f3577b34da6a3ce929d0e0e4736";
  const char kT2[] = "4bf92f3577b34da6a3ce929d0e0e4737";
  const Want want[] = {
      {0, Kind::kCall, "client", "frontend", "a1", "GET%20/home"},
      {180, Kind::kCall, "frontend", "api", "a2", "GET%20/api/items"},
      {280, Kind::kCall, "api", "db", "a5", "query%20items"},
      {290, Kind::kCall, "api", "db", "a6", "query%20prices"},
      {530, Kind::kReturn, "db", "api", "a5", "query%20items"},
      {730, Kind::kReturn, "db", "api", "a6", "query%20prices"},
      {900, Kind::kReturn, "api", "frontend", "a2", "GET%20/api/items"},
      {1000, Kind::kReturn, "frontend", "client", "a1", "GET%20/home"},
  };
  ASSERT_EQ(got.messages.size(), 16u);
  for (size_t i = 0; i < got.messages.size(); ++i) {
    const bool second = i >= 8;
    const Want& w = want[i % 8];
    const Message& m = got.messages[i];
    std::string callid =
        std::string("00000000000000") + (second ? "b" : "a") + (w.callid + 1);
    SCOPED_TRACE("record " + std::to_string(i));
    EXPECT_EQ(m.ts_ns,
              (1700000000'000000LL + w.us + (second ? 10000 : 0)) * 1000);
    EXPECT_EQ(m.kind, w.kind);
    EXPECT_EQ(m.sender, w.sender);
    EXPECT_EQ(m.receiver, w.receiver);
    EXPECT_EQ(m.callid, callid);
    EXPECT_EQ(m.pathid, second ? kT2 : kT1);
    EXPECT_EQ(m.op, w.op);
  }
  EXPECT_EQ(got.counters.at("spans"), 16u);
  EXPECT_EQ(got.counters.at("traces"), 2u);
  EXPECT_EQ(got.counters.at("rpcs"), 8u);
  EXPECT_EQ(got.counters.at("entry_points"), 2u);
  for (const auto& [name, n] : got.counters) {
    EXPECT_TRUE(name == "spans" || name == "traces" || name == "rpcs" ||
                name == "entry_points")
        << name << "=" << n;
  }
}

TEST(SpansTest, JaegerThreeTierRecordByRecord) {
  Imported got = Import(Testdata("three_tier.jaeger.json"));
  EXPECT_EQ(got.format, Format::kJaeger);
  ExpectThreeTier(got);
}

TEST(SpansTest, OtlpThreeTierRecordByRecord) {
  Imported got = Import(Testdata("three_tier.otlp.json"));
  EXPECT_EQ(got.format, Format::kOtlp);
  ExpectThreeTier(got);
}

// Zipkin's frontend->api RPC is one shared span (client and server halves
// under one id); the api's internal span names that id as its parent and
// must land on the server half, in its own service.
TEST(SpansTest, ZipkinThreeTierWithSharedSpanRecordByRecord) {
  Imported got = Import(Testdata("three_tier.zipkin.json"));
  EXPECT_EQ(got.format, Format::kZipkin);
  ExpectThreeTier(got);
}

TEST(SpansTest, FormatFlagOverridesDetectionAndNamesTheMismatch) {
  std::vector<Span> spans;
  Counters c;
  Result<Format> f = ParseSpans(Testdata("three_tier.zipkin.json"), "z.json",
                                Format::kJaeger, &spans, &c);
  ASSERT_FALSE(f.ok());
  EXPECT_EQ(f.status().message(),
            "z.json: value at byte 1: not Jaeger JSON (expected an object with "
            "a 'data' array "
            "of traces, or one trace with 'spans')");
  f = ParseSpans("{\"foo\": 1}", "x.json", Format::kAuto, &spans, &c);
  ASSERT_FALSE(f.ok());
  EXPECT_NE(f.status().message().find(
                "x.json: value at byte 1: not Jaeger, OTLP or Zipkin"),
            std::string::npos)
      << f.status().message();
}

TEST(SpansTest, MalformedJsonNamesTheByte) {
  std::vector<Span> spans;
  Counters c;
  Result<Format> f =
      ParseSpans("[{\"id\": \"1\",}]", "bad.json", Format::kAuto, &spans, &c);
  ASSERT_FALSE(f.ok());
  EXPECT_EQ(f.status().message().rfind("bad.json: JSON error at byte 13: ", 0),
            0u)
      << f.status().message();
  // In the second value of a JSON Lines file the byte counts from the file.
  f = ParseSpans("{\"resourceSpans\": []}\n{\"resourceSpans\": [}\n", "l.json",
                 Format::kAuto, &spans, &c);
  ASSERT_FALSE(f.ok());
  EXPECT_EQ(f.status().message().rfind("l.json: JSON error at byte 42: ", 0),
            0u)
      << f.status().message();
  // What the parser quotes from the input is shown without raw bytes.
  f = ParseSpans("\xff\xfe", "b.json", Format::kAuto, &spans, &c);
  ASSERT_FALSE(f.ok());
  EXPECT_NE(f.status().message().find("'\\xff'"), std::string::npos)
      << f.status().message();
  f = ParseSpans("  \n", "e.json", Format::kAuto, &spans, &c);
  ASSERT_FALSE(f.ok());
  EXPECT_EQ(f.status().message(), "e.json: empty file (expected span JSON)");
}

// A Zipkin span as one line: id, parent, kind, service, remote, start and
// duration in microseconds.
std::string Zipkin(const std::string& trace_id, const std::string& id,
                   const std::string& parent, const std::string& kind,
                   const std::string& service, const std::string& remote,
                   int64_t ts, int64_t duration) {
  std::string s = "{\"traceId\":\"" + trace_id + "\",\"id\":\"" + id +
                  "\",\"name\":\"op-" + id +
                  "\",\"timestamp\":" + std::to_string(ts) +
                  ",\"duration\":" + std::to_string(duration);
  if (!parent.empty()) s += ",\"parentId\":\"" + parent + "\"";
  if (!kind.empty()) s += ",\"kind\":\"" + kind + "\"";
  if (!service.empty())
    s += ",\"localEndpoint\":{\"serviceName\":\"" + service + "\"}";
  if (!remote.empty())
    s += ",\"remoteEndpoint\":{\"serviceName\":\"" + remote + "\"}";
  return s + "}";
}

std::string Array(const std::vector<std::string>& items) {
  std::string s = "[";
  for (const std::string& i : items) s += (s.size() > 1 ? "," : "") + i;
  return s + "]";
}

// A client span with no server span but a named remote service is a call
// seen from the client alone; a server span whose parent is in another
// service (no client span recorded) is a call from that service, seen from
// the server alone.
TEST(SpansTest, OneSidedRpcs) {
  Imported got = Import(Array({
      Zipkin("t", "1", "", "SERVER", "web", "", 1000, 100),
      Zipkin("t", "2", "1", "CLIENT", "web", "cache", 1010, 20),
      Zipkin("t", "3", "1", "", "web", "", 1040, 50),
      Zipkin("t", "4", "3", "SERVER", "auth", "", 1050, 30),
  }));
  ASSERT_EQ(got.messages.size(), 6u);
  const Message& c2 = got.messages[1];
  EXPECT_EQ(c2.ts_ns, 1010000);
  EXPECT_EQ(c2.sender, "web");
  EXPECT_EQ(c2.receiver, "cache");
  EXPECT_EQ(got.messages[2].ts_ns,
            1030000);  // its return, on the client's clock
  const Message& c4 = got.messages[3];
  EXPECT_EQ(c4.ts_ns, 1050000);
  EXPECT_EQ(c4.sender, "web");  // the internal span's service
  EXPECT_EQ(c4.receiver, "auth");
  EXPECT_EQ(got.messages[4].ts_ns, 1080000);
}

// Clocks are kept as recorded: a server clock far ahead puts the CALL after
// the RET the client saw; both are written as stamped, in time order.
TEST(SpansTest, SkewLargerThanTheCallKeepsBothClocks) {
  Imported got = Import(Array({
      Zipkin("t", "1", "", "CLIENT", "a", "", 1000, 100),
      Zipkin("t", "2", "1", "SERVER", "b", "", 1500, 50),
  }));
  ASSERT_EQ(got.messages.size(), 2u);
  EXPECT_EQ(got.messages[0].kind, Kind::kReturn);
  EXPECT_EQ(got.messages[0].ts_ns, 1100000);
  EXPECT_EQ(got.messages[1].kind, Kind::kCall);
  EXPECT_EQ(got.messages[1].ts_ns, 1500000);
  // No server parent: the client span's own process starts the request,
  // and no entry caller is invented for it.
  EXPECT_EQ(got.counters.count("entry_points"), 0u);
}

// A retried call (two server spans under one client span): the first is
// the client's RPC, the second a call of its own from the client's service.
// Service names that are not trace tokens are percent-encoded.
TEST(SpansTest, RetriesAndEntryCallerPerService) {
  ImportOptions options;
  options.entry_caller = "user";
  options.entry_caller_per_service = true;
  Imported got =
      Import(Array({
                 Zipkin("t", "1", "", "SERVER", "my web", "", 1000, 100),
                 Zipkin("t", "2", "1", "CLIENT", "my web", "", 1010, 80),
                 Zipkin("t", "4", "2", "SERVER", "db", "", 1050, 10),
                 Zipkin("t", "3", "2", "SERVER", "db", "", 1020, 10),
             }),
             Format::kAuto, options);
  ASSERT_EQ(got.messages.size(), 6u);
  EXPECT_EQ(got.messages[0].sender, "user:my%20web");
  EXPECT_EQ(got.messages[0].receiver, "my%20web");
  EXPECT_EQ(got.messages[1].callid,
            "2");  // the earliest server, the client's ids
  EXPECT_EQ(got.messages[1].ts_ns, 1020000);
  EXPECT_EQ(got.messages[1].op, "op-3");  // the server's name for the operation
  // The retry, on the server's clock alone; then the client's RET at 1090.
  EXPECT_EQ(got.messages[2].callid, "4");
  EXPECT_EQ(got.messages[2].sender, "my%20web");
  EXPECT_EQ(got.messages[3].callid, "4");
  EXPECT_EQ(got.messages[3].ts_ns, 1060000);
  EXPECT_EQ(got.messages[4].callid, "2");
  EXPECT_EQ(got.messages[4].ts_ns, 1090000);
}

// Every way a span can be wrong is counted under a name; what is left still
// imports. A span id reused by another trace gets the trace id in its
// callid so that callids stay unique.
TEST(SpansTest, BadSpansAreCountedNeverFatal) {
  Imported got = Import(
      "[" + Zipkin("", "1", "", "SERVER", "a", "", 1, 1) + "," +
      Zipkin("t", "", "", "SERVER", "a", "", 1, 1) + "," +
      Zipkin("t", "1", "", "SERVER", "", "", 1, 1) + "," +
      R"({"traceId":"t","id":"2","kind":"SERVER","localEndpoint":{"serviceName":"a"},"timestamp":-5,"duration":1},)" +
      R"({"traceId":"t","id":"3","kind":"SERVER","localEndpoint":{"serviceName":"a"},"timestamp":5},)" +
      R"({"traceId":"t","id":"4","kind":"SERVER","localEndpoint":{"serviceName":"a"},"timestamp":"x","duration":1},)" +
      "17," + Zipkin("t", "5", "", "WEIRD", "a", "", 1, 1) + "," +
      Zipkin("t", "6", "", "SERVER", "a", "", 10, 5) + "," +
      Zipkin("t", "6", "", "SERVER", "a", "", 10, 5) + "," +
      Zipkin("u", "6", "", "SERVER", "a", "", 20, 5) + "," +
      Zipkin("t", "7", "nope", "SERVER", "a", "", 30, 5) + "," +
      Zipkin("t", "8", "9", "SERVER", "a", "", 40, 5) + "," +
      Zipkin("t", "9", "8", "SERVER", "b", "", 41, 3) + "," +
      Zipkin("t", "10", "", "CLIENT", "a", "", 50, 5) + "," +
      Zipkin("t", "11", "", "PRODUCER", "a", "", 60, 5) + "]");
  const Counters want = {
      {"span_without_trace_id", 1},
      {"span_without_span_id", 1},
      {"span_without_service", 1},
      {"span_bad_start_time", 2},
      {"span_bad_duration", 1},
      {"span_not_an_object", 1},
      {"span_unknown_kind", 1},
      {"span_duplicate", 1},
      {"span_parent_not_found", 1},
      {"span_parent_cycle", 1},
      {"client_span_without_callee", 1},
      {"span_messaging_walked_through", 1},
      {"spans", 9},
      {"traces", 2},
      {"rpcs", 5},
      {"entry_points", 4},
  };
  EXPECT_EQ(got.counters, want);
  std::vector<std::string> callids;
  for (const Message& m : got.messages) {
    if (m.kind == Kind::kCall) callids.push_back(m.callid);
  }
  EXPECT_EQ(callids, (std::vector<std::string>{"6", "u.6", "7", "8", "9"}));
}

// OTLP as the collector's file exporter writes it: one request per line,
// kinds by name, times as numbers, the pre-0.15 instrumentationLibrarySpans.
TEST(SpansTest, OtlpJsonLinesAndEnumNames) {
  const std::string line1 =
      R"({"resourceSpans":[{"resource":{"attributes":[{"key":"service.name","value":{"stringValue":"web"}}]},)"
      R"("scopeSpans":[{"spans":[{"traceId":"ab","spanId":"01","parentSpanId":"","name":"root","kind":"SPAN_KIND_SERVER","startTimeUnixNano":"1000","endTimeUnixNano":"9000"},)"
      R"({"traceId":"ab","spanId":"02","parentSpanId":"01","name":"get","kind":"SPAN_KIND_CLIENT","startTimeUnixNano":2000,"endTimeUnixNano":8000,)"
      R"("attributes":[{"key":"peer.service","value":{"stringValue":"kv"}}]}]}]}]})";
  const std::string line2 =
      R"({"resourceSpans":[{"resource":{"attributes":[{"key":"service.name","value":{"stringValue":"kv"}}]},)"
      R"("instrumentationLibrarySpans":[{"spans":[{"traceId":"ab","spanId":"03","parentSpanId":"02","name":"GET","kind":2,"startTimeUnixNano":"3000","endTimeUnixNano":"7000"}]}]}]})";
  Imported got = Import(line1 + "\n" + line2 + "\n");
  EXPECT_EQ(got.format, Format::kOtlp);
  ASSERT_EQ(got.messages.size(), 4u);
  EXPECT_EQ(got.messages[1].ts_ns, 3000);  // the server half's start
  EXPECT_EQ(got.messages[1].receiver, "kv");
  EXPECT_EQ(got.messages[1].op, "GET");
  EXPECT_EQ(got.messages[2].ts_ns, 8000);
}

// Jaeger's query API embeds each span's process; references may point to
// another trace (a link, not a parent); FOLLOWS_FROM counts when there is
// no CHILD_OF.
TEST(SpansTest, JaegerEmbeddedProcessAndReferences) {
  const std::string doc = R"({"data":[{"traceID":"t1","spans":[
    {"traceID":"t1","spanID":"1","operationName":"in","startTime":100,"duration":50,
     "tags":[{"key":"span.kind","type":"string","value":"server"}],
     "references":[{"refType":"CHILD_OF","traceID":"other","spanID":"9"}],
     "process":{"serviceName":"front"}},
    {"traceID":"t1","spanID":"2","operationName":"work","startTime":110,"duration":20,
     "tags":[{"key":"span.kind","type":"string","value":"server"}],
     "references":[{"refType":"FOLLOWS_FROM","traceID":"t1","spanID":"1"}],
     "process":{"serviceName":"back"}}]}]})";
  Imported got = Import(doc);
  ASSERT_EQ(got.messages.size(), 4u);
  EXPECT_EQ(got.messages[0].sender, "client");
  EXPECT_EQ(got.messages[0].receiver, "front");
  EXPECT_EQ(got.messages[1].sender, "front");
  EXPECT_EQ(got.messages[1].receiver, "back");
  EXPECT_EQ(got.messages[1].ts_ns, 110000);
}

// Zipkin's /api/v2/traces answer: a list of traces, each a list of spans.
TEST(SpansTest, ZipkinListOfTraces) {
  Imported got = Import(
      "[" + Array({Zipkin("t", "1", "", "SERVER", "a", "", 1, 3)}) + "," +
      Array({Zipkin("u", "1", "", "SERVER", "a", "", 5, 3)}) + "]");
  EXPECT_EQ(got.format, Format::kZipkin);
  EXPECT_EQ(got.counters.at("rpcs"), 2u);
}

TEST(SpansTest, FormatNames) {
  Format f;
  for (const char* name : {"auto", "jaeger", "otlp", "zipkin"}) {
    ASSERT_TRUE(ParseFormat(name, &f)) << name;
    EXPECT_EQ(FormatName(f), name);
  }
  EXPECT_FALSE(ParseFormat("json", &f));
}

}  // namespace
}  // namespace bbprof::spans
