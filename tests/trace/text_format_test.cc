#include <gtest/gtest.h>
#include <zlib.h>

#include <vector>

#include "tests/util/temp_dir.h"
#include "trace/reader.h"
#include "trace/writer.h"

namespace bbprof::trace {
namespace {

using bbprof::testing::ReadFile;
using bbprof::testing::TempDir;

struct Line {
  TimeNs ts;
  Kind kind;
  std::string sender, receiver, callid, pathid;
};

// Reads a whole trace; on error returns the reader's message in *error.
std::vector<Line> ReadAll(const std::string& path, std::string* error,
                          ReaderOptions opts = {}) {
  std::vector<Line> out;
  auto r = OpenTraceReader(path, nullptr, opts);
  if (!r.ok()) {
    *error = r.status().message();
    return out;
  }
  Record rec;
  while ((*r)->Next(rec)) {
    out.push_back({rec.ts_ns, rec.kind, std::string((*r)->nodes().Name(rec.sender)),
                   std::string((*r)->nodes().Name(rec.receiver)),
                   std::string(rec.callid), std::string(rec.pathid)});
  }
  *error = (*r)->status().ok() ? "" : (*r)->status().message();
  return out;
}

TEST(TextFormatTest, ReadsThePapersExample) {
  TempDir dir;
  // Section 6.5 of the paper: spaces and tabs mixed, CALL_SENT/RET_SENT.
  std::string p = dir.Write("paper.trace",
                            "1047680084.482205\tCALL_SENT\tnodeA nodeB\tid37\n"
                            "1047680084.483575\tRET_SENT\tnodeB nodeA\tid37\n");
  std::string err;
  auto lines = ReadAll(p, &err);
  ASSERT_EQ(err, "");
  ASSERT_EQ(lines.size(), 2u);
  EXPECT_EQ(lines[0].ts, 1047680084482205000);
  EXPECT_EQ(lines[0].kind, Kind::kCall);
  EXPECT_EQ(lines[0].sender, "nodeA");
  EXPECT_EQ(lines[0].receiver, "nodeB");
  EXPECT_EQ(lines[0].callid, "id37");
  EXPECT_EQ(lines[1].kind, Kind::kReturn);
  EXPECT_EQ(lines[1].sender, "nodeB");
}

TEST(TextFormatTest, KeepsMetaCommentsBlankLinesAndPathids) {
  TempDir dir;
  std::string p = dir.Write("m.trace",
                            "#bbprof-trace 1\n"
                            "#meta source=capture iface=eth1\n"
                            "# a comment\n"
                            "\n"
                            "1.0\tMSG\ta\tb\t-\n"
                            "2.0\tCALL\tclient\tWS1\tc9\tp17\n");
  auto r = OpenTraceReader(p);
  ASSERT_TRUE(r.ok());
  ASSERT_EQ((*r)->meta().size(), 1u);
  EXPECT_EQ((*r)->meta()[0], "source=capture iface=eth1");
  std::string err;
  auto lines = ReadAll(p, &err);
  ASSERT_EQ(err, "");
  ASSERT_EQ(lines.size(), 2u);
  EXPECT_EQ(lines[0].callid, "");
  EXPECT_EQ(lines[0].kind, Kind::kMessage);
  EXPECT_EQ(lines[1].pathid, "p17");
}

TEST(TextFormatTest, WriterProducesCanonicalTextThatReadsBack) {
  TempDir dir;
  NodeTable nodes;
  auto w = OpenTraceWriter(dir.File("out.trace"), &nodes, TraceFormat::kText);
  ASSERT_TRUE(w.ok());
  ASSERT_TRUE((*w)->WriteMeta("source=test").ok());
  Record rec;
  rec.ts_ns = 1047680084482205000;
  rec.kind = Kind::kCall;
  rec.sender = nodes.Intern("nodeA");
  rec.receiver = nodes.Intern("nodeB");
  rec.callid = "id37";
  ASSERT_TRUE((*w)->Write(rec).ok());
  rec.kind = Kind::kMessage;
  rec.callid = {};
  rec.pathid = "7";
  ASSERT_TRUE((*w)->Write(rec).ok());
  ASSERT_TRUE((*w)->Close().ok());
  EXPECT_EQ(ReadFile(dir.File("out.trace")),
            "#bbprof-trace 1\n"
            "#meta source=test\n"
            "1047680084.482205000\tCALL\tnodeA\tnodeB\tid37\n"
            "1047680084.482205000\tMSG\tnodeA\tnodeB\t-\t7\n");
}

TEST(TextFormatTest, UnclosedWriterLeavesNothingBehind) {
  TempDir dir;
  NodeTable nodes;
  {
    auto w = OpenTraceWriter(dir.File("gone.trace"), &nodes);
    ASSERT_TRUE(w.ok());
  }
  EXPECT_FALSE(std::filesystem::exists(dir.File("gone.trace")));
  EXPECT_TRUE(std::filesystem::is_empty(dir.path()));
}

// Writes n records a -> b alternating CALL and RET, 1 us apart.
void WriteCallsAndReturns(const std::string& path, int n) {
  NodeTable nodes;
  auto w = OpenTraceWriter(path, &nodes);
  ASSERT_TRUE(w.ok());
  Record rec;
  rec.sender = nodes.Intern("a");
  rec.receiver = nodes.Intern("b");
  for (int i = 0; i < n; ++i) {
    rec.ts_ns = i * 1000;
    rec.kind = i % 2 ? Kind::kReturn : Kind::kCall;
    ASSERT_TRUE((*w)->Write(rec).ok());
  }
  ASSERT_TRUE((*w)->Close().ok());
}

TEST(TextFormatTest, CompressedFilesRoundTrip) {
  for (const char* name : {"c.trace.gz", "c.trace.zst"}) {
    TempDir dir;
    WriteCallsAndReturns(dir.File(name), 100000);
    std::string err;
    auto lines = ReadAll(dir.File(name), &err);
    EXPECT_EQ(err, "") << name;
    ASSERT_EQ(lines.size(), 100000u) << name;
    EXPECT_EQ(lines.back().ts, 99999 * 1000);
  }
}

// A reader names its input exactly once it has read it: the bytes of the
// file as read (compressed bytes for a compressed file) and their CRC-32,
// the zlib one, which `bbprof nest` records and `eval` checks.
TEST(TextFormatTest, ReaderKnowsTheSizeAndCrc32OfWhatItRead) {
  for (const char* name : {"c.trace", "c.trace.gz", "c.trace.zst"}) {
    TempDir dir;
    WriteCallsAndReturns(dir.File(name), 50000);
    auto r = OpenTraceReader(dir.File(name));
    Record rec;
    ASSERT_TRUE(r.ok());
    while ((*r)->Next(rec)) {
    }
    ASSERT_TRUE((*r)->status().ok());
    const std::string bytes = ReadFile(dir.File(name));
    EXPECT_EQ((*r)->raw_bytes_read(), bytes.size()) << name;
    ASSERT_TRUE((*r)->raw_crc32().has_value());
    EXPECT_EQ(*(*r)->raw_crc32(),
              crc32(0L, reinterpret_cast<const Bytef*>(bytes.data()),
                    static_cast<uInt>(bytes.size())))
        << name;
  }
}

struct BadCase {
  const char* contents;
  const char* message;  // after "FILE:"
};

class TextFormatErrorTest : public ::testing::TestWithParam<BadCase> {};

TEST_P(TextFormatErrorTest, NamesFileLineAndWhatIsWrong) {
  TempDir dir;
  std::string p = dir.Write("bad.trace", GetParam().contents);
  std::string err;
  ReadAll(p, &err);
  EXPECT_EQ(err, p + ":" + GetParam().message);
}

INSTANTIATE_TEST_SUITE_P(
    AllRules, TextFormatErrorTest,
    ::testing::Values(
        BadCase{"1.0\tCALL\ta\tb\n",
                "1: too few fields (expected 5 to 7: timestamp kind sender "
                "receiver callid [pathid [op]]), found 4"},
        BadCase{"1.0\tCALL\ta\tb\tc\td\te\tf\n",
                "1: too many fields (expected at most 7: timestamp kind "
                "sender receiver callid pathid op)"},
        BadCase{"1.0\tCALL\ta\tb\tc\t-\thttp:GET:/f(x)\n",
                "1: bad op 'http:GET:/f(x)': op contains whitespace, a "
                "control byte or one of '( ) , ;' (byte 0x28)"},
        BadCase{"#bbprof-trace 1\n1.0x\tCALL\ta\tb\tc\n",
                "2: bad timestamp '1.0x' (expected seconds since the epoch "
                "with 0 to 9 fraction digits, e.g. 1047680084.482205, from 0 "
                "to 4611686018.427387903 seconds since the epoch)"},
        BadCase{"9999999999.0\tCALL\ta\tb\tc\n",
                "1: bad timestamp '9999999999.0' (expected seconds since the "
                "epoch with 0 to 9 fraction digits, e.g. 1047680084.482205, "
                "from 0 to 4611686018.427387903 seconds since the epoch)"},
        BadCase{"1.0\tCALL\ta\tb\tc\x01"
                "d\n",
                "1: bad callid 'c\\x01d' contains whitespace or control byte "
                "0x01"},
        BadCase{"1.0\tCALL\ta\tb\tc\tp\x7f\n",
                "1: bad pathid 'p\\x7f' contains whitespace or control byte "
                "0x7f"},
        BadCase{"1.0\tCALL\ta\xff\tb\tc\n",
                "1: bad sender: node name 'a\\xff' is not valid UTF-8"},
        BadCase{"1.0\tCALL\ta\tb\xc3\tc\n",
                "1: bad receiver: node name 'b\\xc3' is not valid UTF-8"},
        BadCase{"1.0\tCALL\ta\tb\tc\xed\xa0\x80\n",
                "1: bad callid 'c\\xed\\xa0\\x80' is not valid UTF-8"},
        BadCase{"#bbprof-trace 1\r1.0\tCALL\ta\tb\tc\r",
                "1: CR line endings are not supported (expected LF or CRLF); "
                "convert with tr '\\r' '\\n' < IN > OUT"},
        BadCase{"1.0\tCALL\ta\tb\tc\r2.0\tRET\tb\ta\tc\r",
                "1: CR line endings are not supported (expected LF or CRLF); "
                "convert with tr '\\r' '\\n' < IN > OUT"},
        BadCase{"1.0\tCALLX\ta\tb\tc\n",
                "1: unknown kind 'CALLX' (expected CALL, RET or MSG)"},
        BadCase{"1.0\tCALL\ta(1\tb\tc\n",
                "1: bad sender: node name 'a(1' contains reserved character "
                "'('"},
        BadCase{"1.0\tCALL\ta\tb;\tc\n",
                "1: bad receiver: node name 'b;' contains reserved character "
                "';'"},
        BadCase{"2.0\tCALL\ta\tb\tc\n1.5\tRET\tb\ta\tc\n",
                "2: timestamp 1.500000000 is earlier than the previous "
                "message's 2.000000000 (a trace must be in time order; sort "
                "it with 'bbprof merge --sort')"},
        BadCase{"#bbprof-trace 2\n",
                "1: unsupported trace version '2' (this bbprof reads version "
                "1)"}));

TEST(TextFormatTest, OpFieldIsReadAndWrittenCanonically) {
  TempDir dir;
  // Field 7 with and without a pathid; a RET without its op; "-" for none.
  std::string p = dir.Write("ops.trace",
                            "1.0 CALL a b 7 - http:GET:/item/{n}\n"
                            "1.5 CALL b c 8 p1 redis:GET\n"
                            "1.6 RET c b 8 p1 -\n"
                            "2.0 RET b a 7\n");
  auto r = OpenTraceReader(p);
  ASSERT_TRUE(r.ok());
  auto w = OpenTraceWriter(dir.File("out.trace"), &(*r)->nodes(),
                           TraceFormat::kText);
  ASSERT_TRUE(w.ok());
  Record rec;
  std::vector<std::string> ops;
  while ((*r)->Next(rec)) {
    ops.emplace_back(rec.op);
    ASSERT_TRUE((*w)->Write(rec).ok());
  }
  ASSERT_TRUE((*r)->status().ok()) << (*r)->status().message();
  ASSERT_TRUE((*w)->Close().ok());
  EXPECT_EQ(ops, (std::vector<std::string>{"http:GET:/item/{n}", "redis:GET",
                                           "", ""}));
  EXPECT_EQ(ReadFile(dir.File("out.trace")),
            "#bbprof-trace 1\n"
            "1.000000000\tCALL\ta\tb\t7\t-\thttp:GET:/item/{n}\n"
            "1.500000000\tCALL\tb\tc\t8\tp1\tredis:GET\n"
            "1.600000000\tRET\tc\tb\t8\tp1\n"
            "2.000000000\tRET\tb\ta\t7\n");
}

TEST(TextFormatTest, OverlongNameIsRejected) {
  TempDir dir;
  std::string p =
      dir.Write("long.trace", "1.0\tCALL\t" + std::string(256, 'x') + "\tb\tc\n");
  std::string err;
  ReadAll(p, &err);
  EXPECT_EQ(err, p + ":1: bad sender: node name '" + std::string(40, 'x') +
                     "...' is longer than 255 bytes");
}

TEST(TextFormatTest, SkipBadLinesCountsThem) {
  TempDir dir;
  std::string p = dir.Write("skip.trace",
                            "1.0\tCALL\ta\tb\tc\n"
                            "garbage\n"
                            "2.0\tRET\tb\ta\tc\n");
  ReaderOptions opts;
  opts.skip_bad_lines = true;
  auto r = OpenTraceReader(p, nullptr, opts);
  ASSERT_TRUE(r.ok());
  Record rec;
  int n = 0;
  while ((*r)->Next(rec)) ++n;
  EXPECT_TRUE((*r)->status().ok());
  EXPECT_EQ(n, 2);
  EXPECT_EQ((*r)->bad_lines_skipped(), 1u);
  EXPECT_EQ((*r)->first_bad_line_error(),
            p + ":2: too few fields (expected 5 to 7: timestamp kind sender "
                "receiver callid [pathid [op]]), found 1");
}

TEST(TextFormatTest, MissingFileIsAClearError) {
  auto r = OpenTraceReader("/nonexistent/x.trace");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().message(),
            "/nonexistent/x.trace: cannot open: No such file or directory");
}

}  // namespace
}  // namespace bbprof::trace
