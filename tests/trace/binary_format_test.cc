// The binary form: exact round trip with the text form, and a named error for
// every kind of damage (truncation at any byte, checksum mismatch, bad magic,
// bad version, decreasing timestamps).
#include "trace/binary/binary_format.h"

#include <gtest/gtest.h>
#include <libdeflate.h>
#include <sys/stat.h>

#include <cstdio>
#include <random>
#include <string>
#include <vector>

#include "tests/trace/synthetic_trace.h"
#include "tests/util/temp_dir.h"
#include "trace/reader.h"
#include "trace/timestamp.h"
#include "trace/writer.h"

namespace bbprof::trace {
namespace {

using bbprof::testing::ReadFile;
using bbprof::testing::TempDir;

// Copies IN to OUT in `format` (meta lines where they stood), as convert does.
Status Copy(const std::string& in, const std::string& out, TraceFormat format,
            ReaderOptions opts = {}) {
  auto r = OpenTraceReader(in, nullptr, opts);
  if (!r.ok()) return r.status();
  auto w = OpenTraceWriter(out, &(*r)->nodes(), format);
  if (!w.ok()) return w.status();
  size_t meta_done = 0;
  Record rec;
  while ((*r)->Next(rec)) {
    for (; meta_done < (*r)->meta().size(); ++meta_done) {
      BBPROF_RETURN_IF_ERROR((*w)->WriteMeta((*r)->meta()[meta_done]));
    }
    BBPROF_RETURN_IF_ERROR((*w)->Write(rec));
  }
  BBPROF_RETURN_IF_ERROR((*r)->status());
  for (; meta_done < (*r)->meta().size(); ++meta_done) {
    BBPROF_RETURN_IF_ERROR((*w)->WriteMeta((*r)->meta()[meta_done]));
  }
  return (*w)->Close();
}

uint32_t LoadLe32(const std::string& s, size_t at) {
  uint32_t v = 0;
  for (int i = 3; i >= 0; --i) {
    v = v << 8 | static_cast<uint8_t>(s[at + static_cast<size_t>(i)]);
  }
  return v;
}
void StoreLe32(std::string* s, size_t at, uint32_t v) {
  for (size_t i = 0; i < 4; ++i) (*s)[at + i] = static_cast<char>(v >> (8 * i));
}
uint32_t Crc32(const std::string& s) {
  return libdeflate_crc32(0, s.data(), s.size());
}

// Reads every record; returns the error message ("" if none) and the count.
std::string ReadAllError(const std::string& path, uint64_t* count = nullptr,
                         ReaderOptions opts = {}) {
  auto r = OpenTraceReader(path, nullptr, opts);
  if (!r.ok()) return r.status().message();
  Record rec;
  uint64_t n = 0;
  while ((*r)->Next(rec)) ++n;
  if (count != nullptr) *count = n;
  return (*r)->status().ok() ? "" : (*r)->status().message();
}

// A random canonical text trace exercising every encoding: numeric and raw
// callids/pathids, "0", leading zeros, 20-digit numbers beyond 2^64, huge
// deltas, repeated timestamps, meta lines between records.
std::string RandomCanonicalTrace(uint64_t seed, int n) {
  std::mt19937_64 rng(seed);
  std::mt19937_64 op_rng(seed + 1);
  std::string s =
      "#bbprof-trace 1\n#meta source=random seed=" + std::to_string(seed) +
      "\n";
  const char* names[] = {"a", "b", "10.1.2.3:80", "WS1", "db-7", "x.y.z"};
  std::string longname(255, 'n');
  auto token = [&]() -> std::string {
    switch (rng() % 9) {
      case 0:
        return "-";
      case 1:
        return "0";
      case 2:
        return std::to_string(rng() % 1000);
      case 3:
        return std::to_string(rng());
      case 4:
        return "0" + std::to_string(rng() % 100);  // leading zero: raw
      case 5:
        return "99999999999999999999";  // > 2^64: raw
      case 6:
        return "18446744073709551615";  // 2^64-1: numeric
      case 7:
        return "id" + std::to_string(rng() % 50);
      default:
        return "tcp:10.0.0.1:5#" + std::to_string(rng() % 7);
    }
  };
  TimeNs t = 1047680084000000000;
  for (int i = 0; i < n; ++i) {
    if (rng() % 500 == 0) s += "#meta note=" + std::to_string(i) + "\n";
    switch (rng() % 4) {
      case 0:
        break;  // same timestamp
      case 1:
        t += static_cast<TimeNs>(rng() % 1000);
        break;
      case 2:
        t += static_cast<TimeNs>(rng() % 1000000000);
        break;
      default:
        t += static_cast<TimeNs>(rng() % 100000000000ull);
        break;
    }
    const char* kinds[] = {"CALL", "RET", "MSG"};
    int si = static_cast<int>(rng() % 7), ri = static_cast<int>(rng() % 7);
    std::string sender = si == 6 ? longname : names[si];
    std::string receiver = ri == 6 ? longname : names[ri];
    std::string pathid = token();
    // Operation names (field 7), from a separate generator so the other
    // fields are those of traces written before ops existed.
    const char* ops[] = {
        "http:GET:/item/{n}", "nfs3:GETATTR",    "dns:A",
        "redis:GET",          "pg:SELECT:users", "http:GET:/a%20b"};
    uint64_t op_pick = op_rng() % 9;
    std::string op = op_pick < 6 ? ops[op_pick] : "-";
    // The callid is drawn before the kind, in two statements: inside one
    // expression the order is unspecified (gcc and clang differ), and the
    // version-1 fixtures were written with gcc's order.
    std::string callid = token();
    const char* kind = kinds[rng() % 3];
    s += FormatTimestamp(t) + "\t" + kind + "\t" + sender + "\t" + receiver +
         "\t" + callid;
    if (pathid != "-" || op != "-") s += "\t" + pathid;
    if (op != "-") s += "\t" + op;
    s += "\n";
  }
  s += "#meta trailing=yes\n";
  return s;
}

TEST(BinaryFormatTest, SampleRoundTripsByteForByte) {
  TempDir dir;
  std::string sample =
      std::string(BBPROF_SOURCE_DIR) + "/samples/paper_example.trace";
  ASSERT_TRUE(Copy(sample, dir.File("s.bbt"), TraceFormat::kBinary).ok());
  ASSERT_TRUE(
      Copy(dir.File("s.bbt"), dir.File("back.trace"), TraceFormat::kText).ok());
  EXPECT_EQ(ReadFile(dir.File("back.trace")), ReadFile(sample));
  EXPECT_EQ(ReadFile(dir.File("s.bbt")).substr(0, 8), kBinaryMagic);
}

TEST(BinaryFormatTest, RandomTraceRoundTripsByteForByteAcrossManyBlocks) {
  TempDir dir;
  std::string text = RandomCanonicalTrace(7, 60000);
  std::string in = dir.Write("r.trace", text);
  for (const char* name : {"r.bbt", "r.bbt.gz", "r.bbt.zst"}) {
    ASSERT_TRUE(Copy(in, dir.File(name), TraceFormat::kBinary).ok()) << name;
    ASSERT_TRUE(
        Copy(dir.File(name), dir.File("back.trace"), TraceFormat::kText).ok());
    EXPECT_TRUE(ReadFile(dir.File("back.trace")) == text) << name;
  }
  // Several blocks, so per-block delta resets are exercised.
  EXPECT_GT(ReadFile(dir.File("r.bbt")).size(), 4 * kBinaryBlockTarget);
}

TEST(BinaryFormatTest, OperationsRoundTripAndTracesWithoutThemAreUnchanged) {
  TempDir dir;
  std::string with_ops =
      dir.Write("ops.trace",
                "#bbprof-trace 1\n"
                "1.000000000\tCALL\tc\ts\t1\t-\thttp:GET:/item/{n}\n"
                "1.000000100\tCALL\ts\tdb\t2\tp9\tpg:SELECT:users\n"
                "1.000000200\tRET\tdb\ts\t2\tp9\tpg:SELECT:users\n"
                "1.000000300\tRET\ts\tc\t1\n");
  ASSERT_TRUE(Copy(with_ops, dir.File("ops.bbt"), TraceFormat::kBinary).ok());
  auto r = OpenTraceReader(dir.File("ops.bbt"));
  ASSERT_TRUE(r.ok()) << r.status().message();
  Record rec;
  std::vector<std::string> seen;
  while ((*r)->Next(rec)) seen.emplace_back(rec.op);
  ASSERT_TRUE((*r)->status().ok()) << (*r)->status().message();
  EXPECT_EQ(seen,
            (std::vector<std::string>{"http:GET:/item/{n}", "pg:SELECT:users",
                                      "pg:SELECT:users", ""}));
  ASSERT_TRUE(
      Copy(dir.File("ops.bbt"), dir.File("back.trace"), TraceFormat::kText)
          .ok());
  EXPECT_EQ(ReadFile(dir.File("back.trace")), ReadFile(with_ops));

  // A trace without ops is written exactly as before ops existed: no op
  // definitions, bit 6 never set (older readers read it).
  std::string sample =
      std::string(BBPROF_SOURCE_DIR) + "/samples/paper_example.trace";
  ASSERT_TRUE(Copy(sample, dir.File("plain.bbt"), TraceFormat::kBinary).ok());
  std::string plain = ReadFile(dir.File("plain.bbt"));
  std::string with = ReadFile(dir.File("ops.bbt"));
  EXPECT_EQ(plain.find(static_cast<char>(kOpOperationDef)), std::string::npos);
  EXPECT_NE(with.find(static_cast<char>(kOpOperationDef)), std::string::npos);
}

TEST(BinaryFormatTest, UndefinedOperationIdIsCorruption) {
  TempDir dir;
  std::string in = dir.Write("one.trace", "1.0\tCALL\ta\tb\t1\t-\tdns:A\n");
  ASSERT_TRUE(Copy(in, dir.File("one.bbt"), TraceFormat::kBinary).ok());
  std::string bytes = ReadFile(dir.File("one.bbt"));
  // Point the message at operation id 1, which was never defined, and fix
  // the block's checksum so that only the reference is wrong.
  size_t payload = kBinaryFileHeaderBytes + kBinaryBlockHeaderBytes;
  std::string block =
      bytes.substr(payload, LoadLe32(bytes, kBinaryFileHeaderBytes));
  ASSERT_EQ(block.back(), '\0');  // the op id is the message's last byte
  block.back() = '\1';
  bytes.replace(payload, block.size(), block);
  StoreLe32(&bytes, kBinaryFileHeaderBytes + 8, Crc32(block));
  dir.Write("bad.bbt", bytes);
  EXPECT_NE(ReadAllError(dir.File("bad.bbt")).find("undefined operation id 1"),
            std::string::npos)
      << ReadAllError(dir.File("bad.bbt"));
}

TEST(BinaryFormatTest, HeaderMetaIsKnownOnceOpen) {
  TempDir dir;
  std::string in =
      dir.Write("m.trace", "#meta source=x\n#meta b=2\n1.5\tMSG\ta\tb\t-\n");
  ASSERT_TRUE(Copy(in, dir.File("m.bbt"), TraceFormat::kBinary).ok());
  auto r = OpenTraceReader(dir.File("m.bbt"));
  ASSERT_TRUE(r.ok());
  EXPECT_EQ((*r)->meta(), (std::vector<std::string>{"source=x", "b=2"}));
}

// Bytes a message of a synthetic multi-tier trace whose callids and pathids
// are its numbers after `callid_prefix` and `pathid_prefix` (numeric ids
// when both are empty); checks that it reads back whole.
double SyntheticBytesPerMessage(const std::string& callid_prefix,
                                const std::string& pathid_prefix) {
  TempDir dir;
  NodeTable nodes;
  bbprof::testing::SyntheticTrace gen(3);
  std::vector<NodeId> ids;
  for (const auto& n : gen.names()) ids.push_back(nodes.Intern(n));
  auto w = OpenTraceWriter(dir.File("t.bbt"), &nodes);
  EXPECT_TRUE(w.ok());
  if (!w.ok()) return 0;
  constexpr int kMessages = 200000;
  std::string cbuf, pbuf;
  for (int i = 0; i < kMessages; ++i) {
    auto m = gen.Next();
    cbuf = callid_prefix + std::to_string(m.callid);
    pbuf = pathid_prefix + std::to_string(m.pathid);
    Record rec{m.ts_ns, ids[m.sender], ids[m.receiver], m.kind, cbuf, pbuf};
    EXPECT_TRUE((*w)->Write(rec).ok());
  }
  EXPECT_TRUE((*w)->Close().ok());
  uint64_t n = 0;
  EXPECT_EQ(ReadAllError(dir.File("t.bbt"), &n), "");
  EXPECT_EQ(n, static_cast<uint64_t>(kMessages));
  return static_cast<double>(ReadFile(dir.File("t.bbt")).size()) / kMessages;
}

TEST(BinaryFormatTest, MultiTierTraceTakesAtMost16BytesPerMessage) {
  EXPECT_LE(SyntheticBytesPerMessage("", ""), 16.0);
}

// Offsets of each block header in a binary file, ending with the end marker.
std::vector<size_t> BlockOffsets(const std::string& bytes) {
  std::vector<size_t> out;
  size_t off = kBinaryFileHeaderBytes;
  for (;;) {
    out.push_back(off);
    uint32_t len = static_cast<uint8_t>(bytes[off]) |
                   static_cast<uint8_t>(bytes[off + 1]) << 8 |
                   static_cast<uint8_t>(bytes[off + 2]) << 16 |
                   static_cast<uint32_t>(static_cast<uint8_t>(bytes[off + 3]))
                       << 24;
    if (len == 0) return out;
    off += kBinaryBlockHeaderBytes + len;
  }
}

class BinaryDamageTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string in = dir_.Write("r.trace", RandomCanonicalTrace(11, 20000));
    ASSERT_TRUE(Copy(in, dir_.File("good.bbt"), TraceFormat::kBinary).ok());
    good_ = ReadFile(dir_.File("good.bbt"));
    blocks_ = BlockOffsets(good_);
    ASSERT_GE(blocks_.size(), 3u);
    // The end marker, then the block index and its footer.
    ASSERT_LT(blocks_.back() + kBinaryBlockHeaderBytes + kBinaryFooterBytes,
              good_.size());
    index_at_ = blocks_.back() + kBinaryBlockHeaderBytes;
  }
  TempDir dir_;
  std::string good_;
  std::vector<size_t> blocks_;
  size_t index_at_ = 0;
};

TEST_F(BinaryDamageTest, TruncationAtAnyCutNamesTheBlock) {
  std::vector<size_t> cuts = {1, 5, 8, 11};
  for (size_t b : blocks_) {
    for (size_t d : {0, 1, 11, 12, 13, 500}) {
      if (b + d < good_.size()) cuts.push_back(b + d);
    }
  }
  cuts.push_back(good_.size() - 1);
  for (size_t cut : cuts) {
    std::string p = dir_.Write("cut.bbt", good_.substr(0, cut));
    std::string expected;
    if (cut < kBinaryFileHeaderBytes) {
      expected = p + ": truncated binary trace (file header, byte offset " +
                 std::to_string(cut) + ")";
    } else if (cut >= index_at_) {
      expected = p + ": truncated binary trace (block index at byte offset " +
                 std::to_string(index_at_) + ")";
    } else {
      size_t k = 0;
      while (k + 1 < blocks_.size() && blocks_[k + 1] <= cut) ++k;
      expected = p + ": truncated binary trace (block " + std::to_string(k) +
                 " at byte offset " + std::to_string(blocks_[k]) + ")";
    }
    EXPECT_EQ(ReadAllError(p), expected) << "cut at " << cut;
  }
}

TEST_F(BinaryDamageTest, FlippedPayloadByteIsAChecksumMismatch) {
  for (size_t k = 0; k + 1 < blocks_.size(); ++k) {
    for (size_t d : {size_t{12}, size_t{100}, size_t{3}}) {
      std::string bad = good_;
      size_t at = blocks_[k] + (d == 3 ? 8 : d);  // d == 3: the CRC field
      bad[at] = static_cast<char>(bad[at] ^ 0x40);
      std::string p = dir_.Write("flip.bbt", bad);
      EXPECT_EQ(ReadAllError(p), p +
                                     ": corrupt binary trace: checksum "
                                     "mismatch in block " +
                                     std::to_string(k))
          << "block " << k << " +" << d;
    }
  }
}

TEST_F(BinaryDamageTest, OversizedBlockLengthIsNamed) {
  std::string bad = good_;
  bad[blocks_[1] + 3] = 0x7f;
  std::string p = dir_.Write("big.bbt", bad);
  EXPECT_EQ(
      ReadAllError(p),
      p + ": corrupt binary trace: block 1 claims " +
          std::to_string(0x7f000000u |
                         (static_cast<uint8_t>(bad[blocks_[1]]) |
                          static_cast<uint8_t>(bad[blocks_[1] + 1]) << 8 |
                          static_cast<uint8_t>(bad[blocks_[1] + 2]) << 16)) +
          " bytes (at most 1048576)");
}

// A hand-made binary trace: one block of `payload` with a valid checksum, as
// a forger (or a buggy writer) could make it (in version 2 without an index:
// the tests stop at the record they forge).
std::string ForgedTrace(const std::vector<uint8_t>& payload, uint32_t messages,
                        uint32_t version = 1) {
  std::string out(kBinaryMagic);
  auto u32 = [&out](uint32_t v) {
    for (int i = 0; i < 4; ++i) out.push_back(static_cast<char>(v >> (8 * i)));
  };
  u32(version);
  u32(static_cast<uint32_t>(payload.size()));
  u32(messages);
  u32(libdeflate_crc32(0, payload.data(), payload.size()));
  out.append(payload.begin(), payload.end());
  u32(0);
  u32(0);
  u32(0);
  return out;
}

void PutVarint(std::vector<uint8_t>& b, uint64_t v) {
  while (v >= 0x80) {
    b.push_back(static_cast<uint8_t>(v) | 0x80);
    v >>= 7;
  }
  b.push_back(static_cast<uint8_t>(v));
}

uint64_t ZigZag(int64_t v) {
  return (static_cast<uint64_t>(v) << 1) ^ static_cast<uint64_t>(v >> 63);
}

// Node definitions 0 = `a`, 1 = "b".
std::vector<uint8_t> TwoNodes(std::string_view a = "a") {
  std::vector<uint8_t> b = {kOpNodeDef, 0, static_cast<uint8_t>(a.size())};
  b.insert(b.end(), a.begin(), a.end());
  b.insert(b.end(), {kOpNodeDef, 1, 1, 'b'});
  return b;
}

// A CALL from node 0 to node 1 whose timestamp is `delta` after the last,
// without a callid, or with a raw one.
void PutCall(std::vector<uint8_t>& b, int64_t delta,
             std::string_view raw_callid = {}) {
  b.push_back(raw_callid.empty() ? 0 : static_cast<uint8_t>(kIdRaw << 2));
  PutVarint(b, ZigZag(delta));
  b.insert(b.end(), {0, 1});
  if (!raw_callid.empty()) {
    PutVarint(b, raw_callid.size());
    b.insert(b.end(), raw_callid.begin(), raw_callid.end());
  }
}

TEST_F(BinaryDamageTest, DataAfterTheFooter) {
  // The footer must end the file: what follows it hides it.
  std::string p = dir_.Write("extra.bbt", good_ + "x");
  EXPECT_EQ(ReadAllError(p),
            p + ": truncated binary trace (block index at byte offset " +
                std::to_string(index_at_) + ")");
  // In version 1, nothing may follow the end marker.
  std::vector<uint8_t> b = TwoNodes();
  PutCall(b, 1);
  std::string v1 = ForgedTrace(b, 1);
  p = dir_.Write("extra1.bbt", v1 + "x");
  EXPECT_EQ(ReadAllError(p),
            p +
                ": corrupt binary trace: data after the end marker at byte "
                "offset " +
                std::to_string(v1.size()));
}

TEST(BinaryFormatTest, ForgedTimestampDeltasOutOfRangeAreNamedNotUndefined) {
  TempDir dir;
  std::vector<uint8_t> b = TwoNodes();
  PutCall(b, kMaxTimeNs);  // the last valid instant
  PutCall(b, INT64_MAX);   // would overflow int64
  std::string p = dir.Write("over.bbt", ForgedTrace(b, 2));
  EXPECT_EQ(ReadAllError(p),
            p + ": message 2: corrupt binary trace: timestamp delta "
                "9223372036854775807 ns after 4611686018.427387903 leaves the "
                "valid range (0 to 4611686018.427387903 seconds since the "
                "epoch)");

  b = TwoNodes();
  PutCall(b, 1);
  PutCall(b, kMaxTimeNs);  // in int64, beyond the range
  p = dir.Write("beyond.bbt", ForgedTrace(b, 2));
  EXPECT_EQ(ReadAllError(p),
            p + ": message 2: corrupt binary trace: timestamp delta " +
                std::to_string(kMaxTimeNs) +
                " ns after 0.000000001 leaves the valid range (0 to "
                "4611686018.427387903 seconds since the epoch)");

  // Negative timestamps, which the text reader refuses, are refused here too.
  b = TwoNodes();
  PutCall(b, -5);
  p = dir.Write("neg.bbt", ForgedTrace(b, 1));
  EXPECT_EQ(ReadAllError(p),
            p + ": message 1: corrupt binary trace: timestamp delta -5 ns "
                "after 0.000000000 leaves the valid range (0 to "
                "4611686018.427387903 seconds since the epoch)");
}

// One token rule for both forms: what the text reader refuses (control
// bytes, invalid UTF-8), the binary reader refuses too, escaped.
TEST(BinaryFormatTest, ForgedTokensFollowTheTextFormsRule) {
  TempDir dir;
  std::vector<uint8_t> b = TwoNodes();
  PutCall(b, 1, "c\x01");
  std::string p = dir.Write("ctl.bbt", ForgedTrace(b, 1));
  EXPECT_EQ(ReadAllError(p),
            p + ": message 1: corrupt binary trace: bad callid 'c\\x01' "
                "contains whitespace or control byte 0x01");

  b = TwoNodes("n\xff");
  PutCall(b, 1);
  p = dir.Write("utf.bbt", ForgedTrace(b, 1));
  EXPECT_EQ(ReadAllError(p), p + ": corrupt binary trace: block 0: node name "
                                 "'n\\xff' is not valid UTF-8");
}

TEST(BinaryFormatTest, BadMagicAndVersion) {
  TempDir dir;
  std::string p = dir.Write("m.bbt", std::string("\x89"
                                                 "BBX\r\n\x1a\n\1\0\0\0",
                                                 12));
  EXPECT_EQ(ReadAllError(p),
            p + ": not a bbprof binary trace (bad magic bytes)");
  std::string v = dir.Write(
      "v.bbt", std::string(kBinaryMagic) + std::string("\3\0\0\0", 4));
  EXPECT_EQ(ReadAllError(v), v + ": unsupported binary trace version 3 (this "
                                 "bbprof reads versions 1 and 2)");
}

TEST(BinaryFormatTest, DecreasingTimestampIsAnErrorUnlessAllowed) {
  TempDir dir;
  std::string in = dir.Write("u.trace",
                             "2.0\tCALL\ta\tb\t1\n"
                             "1.5\tRET\tb\ta\t1\n");
  ReaderOptions unsorted;
  unsorted.allow_unsorted = true;
  ASSERT_TRUE(Copy(in, dir.File("u.bbt"), TraceFormat::kBinary, unsorted).ok());
  EXPECT_EQ(ReadAllError(dir.File("u.bbt")),
            dir.File("u.bbt") +
                ": message 2: timestamp 1.500000000 is earlier than the "
                "previous message's 2.000000000 (a trace must be in time "
                "order; sort it with 'bbprof merge --sort')");
  uint64_t n = 0;
  EXPECT_EQ(ReadAllError(dir.File("u.bbt"), &n, unsorted), "");
  EXPECT_EQ(n, 2u);
  // And the unsorted order survives a round trip exactly.
  ASSERT_TRUE(Copy(dir.File("u.bbt"), dir.File("u2.trace"), TraceFormat::kText,
                   unsorted)
                  .ok());
  EXPECT_EQ(ReadFile(dir.File("u2.trace")),
            "#bbprof-trace 1\n2.000000000\tCALL\ta\tb\t1\n"
            "1.500000000\tRET\tb\ta\t1\n");
}

// One range rule (trace/timestamp.h) for every writer: a timestamp the
// readers would refuse is refused when written, in either form.
TEST(BinaryFormatTest, WritersRefuseTimestampsOutOfRange) {
  TempDir dir;
  NodeTable nodes;
  for (const char* name : {"n.bbt", "n.trace"}) {
    auto w = OpenTraceWriter(dir.File(name), &nodes);
    ASSERT_TRUE(w.ok());
    Record rec{3, nodes.Intern("a"), nodes.Intern("b"), Kind::kCall, "7", ""};
    ASSERT_TRUE((*w)->Write(rec).ok());
    rec.ts_ns = -5000000001;
    EXPECT_EQ((*w)->Write(rec).message(),
              "record 2: timestamp -5.000000001 is out of range (0 to "
              "4611686018.427387903 seconds since the epoch)")
        << name;
    rec.ts_ns = kMaxTimeNs + 1;
    EXPECT_EQ((*w)->Write(rec).message(),
              "record 2: timestamp 4611686018.427387904 is out of range (0 to "
              "4611686018.427387903 seconds since the epoch)")
        << name;
    rec.ts_ns = kMaxTimeNs;
    EXPECT_TRUE((*w)->Write(rec).ok()) << name;
  }
}

// The writers apply the readers' token rule: what one form refuses, no
// writer produces; messages escape control bytes.
TEST(BinaryFormatTest, WritersRejectTokensTheReadersRefuse) {
  TempDir dir;
  NodeTable nodes;
  for (const char* name : {"x.bbt", "x.trace"}) {
    auto w = OpenTraceWriter(dir.File(name), &nodes);
    ASSERT_TRUE(w.ok());
    Record rec{1, nodes.Intern("a"), nodes.Intern("b"), Kind::kCall, "a b", ""};
    EXPECT_EQ((*w)->Write(rec).message(),
              "record 1: bad callid 'a b' contains whitespace or control byte "
              "0x20")
        << name;
    rec.callid = "c\x01";
    EXPECT_EQ((*w)->Write(rec).message(),
              "record 1: bad callid 'c\\x01' contains whitespace or control "
              "byte 0x01")
        << name;
    rec.callid = "7";
    rec.pathid = "p\xff";
    EXPECT_EQ((*w)->Write(rec).message(),
              "record 1: bad pathid 'p\\xff' is not valid UTF-8")
        << name;
    rec.pathid = "-";
    EXPECT_EQ((*w)->Write(rec).message(),
              "record 1: bad pathid '-' (that spelling means unknown)")
        << name;
  }
}

TEST(BinaryFormatTest, CanonicalUnsigned) {
  uint64_t v;
  EXPECT_TRUE(ParseCanonicalUnsigned("0", &v));
  EXPECT_EQ(v, 0u);
  EXPECT_TRUE(ParseCanonicalUnsigned("18446744073709551615", &v));
  EXPECT_EQ(v, UINT64_MAX);
  EXPECT_FALSE(ParseCanonicalUnsigned("18446744073709551616", &v));
  EXPECT_FALSE(ParseCanonicalUnsigned("007", &v));
  EXPECT_FALSE(ParseCanonicalUnsigned("+7", &v));
  EXPECT_FALSE(ParseCanonicalUnsigned("", &v));
  EXPECT_FALSE(ParseCanonicalUnsigned("7a", &v));
}

// ReaderOptions::numeric_ids: numeric ids come as numbers with empty text,
// other ids as text, and writers take either form, so a copy through
// numbers is byte-identical to one through text, in both forms.
TEST(BinaryFormatTest, NumericIdsComeAsNumbersAndCopyExactly) {
  TempDir dir;
  const std::string text =
      "#bbprof-trace 1\n"
      "1.000000000\tCALL\ta\tb\t42\t7\n"
      "1.000000001\tCALL\ta\tb\tabc\t18446744073709551615\n"
      "1.000000002\tRET\tb\ta\t-\n"
      "1.000000003\tRET\tb\ta\t042\n";
  std::string in = dir.Write("in.trace", text);
  ASSERT_TRUE(Copy(in, dir.File("in.bbt"), TraceFormat::kBinary).ok());
  ReaderOptions numeric;
  numeric.numeric_ids = true;
  auto r = OpenTraceReader(dir.File("in.bbt"), nullptr, numeric);
  ASSERT_TRUE(r.ok());
  Record rec;
  ASSERT_TRUE((*r)->Next(rec));
  EXPECT_TRUE(rec.callid_is_number);
  EXPECT_EQ(rec.callid_number, 42u);
  EXPECT_TRUE(rec.callid.empty());
  EXPECT_TRUE(rec.pathid_is_number);
  EXPECT_EQ(rec.pathid_number, 7u);
  ASSERT_TRUE((*r)->Next(rec));
  EXPECT_FALSE(rec.callid_is_number);
  EXPECT_EQ(rec.callid, "abc");
  EXPECT_TRUE(rec.pathid_is_number);
  EXPECT_EQ(rec.pathid_number, 18446744073709551615u);
  ASSERT_TRUE((*r)->Next(rec));
  EXPECT_FALSE(rec.callid_is_number);
  EXPECT_FALSE(rec.pathid_is_number);
  EXPECT_TRUE(rec.callid.empty());
  ASSERT_TRUE((*r)->Next(rec));
  EXPECT_FALSE(rec.callid_is_number);  // not canonical: stays text
  EXPECT_EQ(rec.callid, "042");
  EXPECT_FALSE((*r)->Next(rec));
  EXPECT_TRUE((*r)->status().ok());
  // Through numbers into text and into binary: the same bytes as through text.
  ASSERT_TRUE(
      Copy(dir.File("in.bbt"), dir.File("n.trace"), TraceFormat::kText, numeric)
          .ok());
  EXPECT_EQ(ReadFile(dir.File("n.trace")), text);
  ASSERT_TRUE(
      Copy(dir.File("in.bbt"), dir.File("n.bbt"), TraceFormat::kBinary, numeric)
          .ok());
  EXPECT_EQ(ReadFile(dir.File("n.bbt")), ReadFile(dir.File("in.bbt")));
}

// ---- Version 2: patterned text ids -----------------------------------------

// A random callid or pathid of the kinds patterned ids must carry exactly:
// counters under a prefix with and without zero padding, widths that change
// on one prefix, digit runs longer than 19, all-digit ids with leading zeros,
// "-" and non-ASCII prefixes, ids without digits (repeated and not), prefixes
// at and beyond the longest a pattern takes, and absent ids.
std::string RandomTextId(std::mt19937_64& rng) {
  auto digits = [&rng](size_t n) {
    std::string d;
    for (size_t i = 0; i < n; ++i) d += static_cast<char>('0' + rng() % 10);
    return d;
  };
  switch (rng() % 16) {
    case 0:
      return "-";
    case 1:
      return "c" + std::to_string(rng() % 1000);
    case 2:
      return "p" + std::to_string(rng() % 100000);
    case 3: {  // zero-padded to a random width
      std::string n = std::to_string(rng() % 1000);
      return "req-" + std::string(rng() % 5, '0') + n;
    }
    case 4:
      return "r" + digits(1 + rng() % 25);  // any run, leading zeros too
    case 5:
      return digits(2 + rng() % 24);  // digits only: numeric or not
    case 6:
      return "-" + digits(1 + rng() % 3);
    case 7:
      return "\xc3\xa9t\xc3\xa9" + std::to_string(rng() % 50);  // "été"
    case 8:
      return rng() % 2 ? "alpha" : "\xe6\x97\xa5\xe6\x9c\xac";  // bare
    case 9:
      return "tcp:10.0.0." + std::to_string(rng() % 4) + ":80#" +
             std::to_string(rng() % 30);
    case 10: {  // hex, as trace ids of recorded spans
      std::string h;
      for (int i = 0; i < 32; ++i) h += "0123456789abcdef"[rng() % 16];
      return h;
    }
    case 11:
      return std::to_string(rng());  // canonical: numeric
    case 12:
      return "x" + std::to_string(rng()) + std::to_string(rng());
    case 13:  // rarely, the longest prefix a pattern takes, and one more
      if (rng() % 16 != 0) return "L" + digits(3);
      return std::string(kMaxPatternPrefixBytes + rng() % 2, 'L') +
             digits(1 + rng() % 3);
    case 14:
      return "0";
    default:
      return "00" + digits(rng() % 3);
  }
}

// A text trace whose callids and pathids are RandomTextId()s.
std::string RandomTextIdTrace(uint64_t seed, int n) {
  std::mt19937_64 rng(seed);
  std::string s = "#bbprof-trace 1\n";
  TimeNs t = 1700000000000000000;
  std::string pathid = "p1";
  for (int i = 0; i < n; ++i) {
    t += static_cast<TimeNs>(rng() % 3 == 0 ? 0 : rng() % 2000000);
    std::string callid = RandomTextId(rng);
    // A request's messages share a pathid: mostly repeat the last one.
    if (rng() % 4 == 0) pathid = RandomTextId(rng);
    s += FormatTimestamp(t) + "\t" + (rng() % 2 ? "CALL" : "RET") + "\tn" +
         std::to_string(rng() % 5) + "\tn" + std::to_string(rng() % 5) + "\t" +
         callid;
    if (pathid != "-") s += "\t" + pathid;
    s += "\n";
  }
  return s;
}

TEST(BinaryFormatTest, RandomTextIdsRoundTripExactly) {
  TempDir dir;
  for (uint64_t seed : {1, 2, 3}) {
    std::string text = RandomTextIdTrace(seed, 20000);
    std::string in = dir.Write("t.trace", text);
    for (const char* name : {"t.bbt", "t.bbt.zst"}) {
      ASSERT_TRUE(Copy(in, dir.File(name), TraceFormat::kBinary).ok());
      ASSERT_TRUE(
          Copy(dir.File(name), dir.File("back.trace"), TraceFormat::kText)
              .ok());
      EXPECT_TRUE(ReadFile(dir.File("back.trace")) == text)
          << "seed " << seed << " " << name;
    }
    // Several blocks: the prefix tables start afresh in each.
    EXPECT_GT(ReadFile(dir.File("t.bbt")).size(), 3 * kBinaryBlockTarget);
    // Through numbers (numeric ids as numbers, the rest as text) too.
    ReaderOptions numeric;
    numeric.numeric_ids = true;
    ASSERT_TRUE(Copy(dir.File("t.bbt"), dir.File("n.trace"), TraceFormat::kText,
                     numeric)
                    .ok());
    EXPECT_TRUE(ReadFile(dir.File("n.trace")) == text) << "seed " << seed;
  }
}

TEST(BinaryFormatTest, PatternedIdsSpellEveryWidthExactly) {
  TempDir dir;
  std::string text = "#bbprof-trace 1\n";
  const char* ids[] = {"c9",
                       "c10",
                       "c010",
                       "c0010",
                       "c1000",
                       "c0",
                       "c00",
                       "c",
                       "c",
                       "c7",
                       "007",
                       "00",
                       "-1",
                       "-01",
                       "x",
                       "x5",
                       "x",
                       "0000000000000000000001",
                       "9999999999999999999999",
                       "18446744073709551616",
                       "c18446744073709551615",
                       "c9999999999999999999"};
  TimeNs t = 1;
  for (const char* id : ids) {
    text += FormatTimestamp(t++) + "\tCALL\ta\tb\t" + id + "\t" + id + "\n";
  }
  std::string in = dir.Write("w.trace", text);
  ASSERT_TRUE(Copy(in, dir.File("w.bbt"), TraceFormat::kBinary).ok());
  ASSERT_TRUE(
      Copy(dir.File("w.bbt"), dir.File("back.trace"), TraceFormat::kText).ok());
  EXPECT_EQ(ReadFile(dir.File("back.trace")), text);
}

// The issue's figure: the multi-tier trace with textual ids (`c415`,
// `p828`) in at most 16 bytes a message, close to the numeric ids' 10.
TEST(BinaryFormatTest, TextualIdsTakeAtMost16BytesPerMessage) {
  const double numeric = SyntheticBytesPerMessage("", "");
  const double textual = SyntheticBytesPerMessage("c", "p");
  EXPECT_LE(textual, 16.0);
  EXPECT_LE(textual, numeric + 3) << numeric;
}

// Files written by the version-1 writer (before patterned ids and the
// index) read exactly as before: tests/trace/testdata/*.v1.bbt were written
// by bbprof convert at commit c3d5a38 from samples/paper_example.trace and
// from RandomCanonicalTrace(23, 5000).
TEST(BinaryFormatTest, VersionOneFilesStillReadExactly) {
  TempDir dir;
  const std::string data =
      std::string(BBPROF_SOURCE_DIR) + "/tests/trace/testdata/";
  ASSERT_EQ(ReadFile(data + "paper_example.v1.bbt").substr(8, 4),
            std::string("\1\0\0\0", 4));
  ASSERT_TRUE(Copy(data + "paper_example.v1.bbt", dir.File("p.trace"),
                   TraceFormat::kText)
                  .ok());
  EXPECT_EQ(ReadFile(dir.File("p.trace")),
            ReadFile(std::string(BBPROF_SOURCE_DIR) +
                     "/samples/paper_example.trace"));
  ASSERT_TRUE(
      Copy(data + "random.v1.bbt", dir.File("r.trace"), TraceFormat::kText)
          .ok());
  EXPECT_TRUE(ReadFile(dir.File("r.trace")) == RandomCanonicalTrace(23, 5000));
  // A version-1 file has no index to seek with, and says so.
  auto r = OpenBinaryBlockRange(data + "random.v1.bbt", 0, 1);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().message(),
            data +
                "random.v1.bbt: binary trace version 1 has no block index "
                "(rewrite it with 'bbprof convert')");
}

// Forged patterned ids: every inconsistency is a named error.
TEST(BinaryFormatTest, ForgedPatternsAreNamedErrors) {
  TempDir dir;
  struct Case {
    std::vector<uint8_t> id;  // the callid's bytes after the node ids
    std::string error;
  };
  const std::vector<Case> cases = {
      {{2 << 1}, "block 0: callid refers to an undefined prefix"},
      {{1, 2, 'c', 21, 0}, "block 0: bad digit width of callid"},
      {{1, 2, 'c', 2, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80,
        0x02},
       "block 0: bad patterned callid"},
      {{1, 2, 'c', 2, 0xc8, 0x01},
       "block 0: callid has more digits than its width"},
      {{0, 0, 10}, "block 0: non-canonical numeric callid"},
      {{1, 0, 20}, "block 0: bad bare callid"},
      {{1, 2, '-', 20}, "block 0: bad bare callid"},
      {{0, 4, 'a', ' ', 2},
       "message 1: corrupt binary trace: bad prefix of callid 'a ' contains "
       "whitespace or control byte 0x20"},
      {{0, 0x7f}, "block 0: callid prefix runs past the end of the block"},
  };
  for (const Case& c : cases) {
    std::vector<uint8_t> b = TwoNodes();
    b.push_back(static_cast<uint8_t>(kIdPattern << 2));
    PutVarint(b, ZigZag(1));
    b.insert(b.end(), {0, 1});
    b.insert(b.end(), c.id.begin(), c.id.end());
    std::string p = dir.Write("f.bbt", ForgedTrace(b, 1, 2));
    std::string err = ReadAllError(p);
    EXPECT_NE(err.find(c.error), std::string::npos) << err;
    EXPECT_EQ(err.rfind(p + ": ", 0), 0u) << err;
  }
  // A raw id of packed hex digits, empty or longer than its block.
  for (auto [id, error] :
       {std::pair<std::vector<uint8_t>, std::string>{{1}, "bad hex callid"},
        {{0x41, 0xab}, "bad hex callid"}}) {
    std::vector<uint8_t> b = TwoNodes();
    b.push_back(static_cast<uint8_t>(kIdRaw << 2));
    PutVarint(b, ZigZag(1));
    b.insert(b.end(), {0, 1});
    b.insert(b.end(), id.begin(), id.end());
    std::string p = dir.Write("h.bbt", ForgedTrace(b, 1, 2));
    EXPECT_NE(ReadAllError(p).find(error), std::string::npos)
        << ReadAllError(p);
  }
  // In version 1, encoding 3 was never written.
  std::vector<uint8_t> b = TwoNodes();
  b.push_back(static_cast<uint8_t>(kIdPattern << 2));
  PutVarint(b, ZigZag(1));
  b.insert(b.end(), {0, 1, 0, 1, 'c', 5});
  std::string p = dir.Write("v1.bbt", ForgedTrace(b, 1, 1));
  EXPECT_NE(ReadAllError(p).find("block 0: bad encoding of callid"),
            std::string::npos)
      << ReadAllError(p);
}

// ---- Version 2: the block index ---------------------------------------------

// Every record (as its text line) and meta line a reader hands out.
struct Contents {
  std::vector<std::string> lines;
  std::vector<std::string> meta;
  std::string error;
};

std::string Line(TraceReader& r, const Record& rec) {
  return FormatTimestamp(rec.ts_ns) + " " + std::string(KindName(rec.kind)) +
         " " + std::string(r.nodes().Name(rec.sender)) + " " +
         std::string(r.nodes().Name(rec.receiver)) + " " +
         std::string(rec.callid) + " " + std::string(rec.pathid) + " " +
         std::string(rec.op);
}

Contents ReadContents(Result<std::unique_ptr<TraceReader>> r) {
  Contents c;
  if (!r.ok()) {
    c.error = r.status().message();
    return c;
  }
  Record rec;
  while ((*r)->Next(rec)) c.lines.push_back(Line(**r, rec));
  c.meta = (*r)->meta();
  c.error = (*r)->status().message();
  return c;
}

class BinaryIndexTest : public ::testing::Test {
 protected:
  void SetUp() override {
    // Meta lines between records, ops, raw and patterned ids, and runs of
    // equal timestamps long enough to straddle block boundaries.
    std::string text = RandomCanonicalTrace(5, 40000);
    std::string in = dir_.Write("r.trace", text);
    path_ = dir_.File("r.bbt");
    ASSERT_TRUE(Copy(in, path_, TraceFormat::kBinary).ok());
    whole_ = ReadContents(OpenTraceReader(path_));
    ASSERT_EQ(whole_.error, "");
    Result<std::vector<BinaryBlockInfo>> index = ReadBinaryBlockIndex(path_);
    ASSERT_TRUE(index.ok()) << index.status().message();
    blocks_ = *index;
    ASSERT_GE(blocks_.size(), 8u);
  }
  TempDir dir_;
  std::string path_;
  Contents whole_;
  std::vector<BinaryBlockInfo> blocks_;
};

TEST_F(BinaryIndexTest, IndexDescribesTheBlocks) {
  uint64_t messages = 0;
  EXPECT_EQ(blocks_[0].offset, kBinaryFileHeaderBytes);
  for (const BinaryBlockInfo& b : blocks_) {
    messages += b.messages;
    EXPECT_LE(b.min_ts, b.max_ts);
  }
  EXPECT_EQ(messages, whole_.lines.size());
}

TEST_F(BinaryIndexTest, BlockRangesConcatenateToTheWholeTrace) {
  const uint64_t n = blocks_.size();
  for (uint64_t split : {uint64_t{0}, uint64_t{1}, n / 2, n - 1, n}) {
    Contents a = ReadContents(OpenBinaryBlockRange(path_, 0, split));
    Contents b = ReadContents(OpenBinaryBlockRange(path_, split, n));
    ASSERT_EQ(a.error, "");
    ASSERT_EQ(b.error, "");
    a.lines.insert(a.lines.end(), b.lines.begin(), b.lines.end());
    a.meta.insert(a.meta.end(), b.meta.begin(), b.meta.end());
    EXPECT_TRUE(a.lines == whole_.lines) << "split " << split;
    EXPECT_EQ(a.meta, whole_.meta) << "split " << split;
  }
  // Block by block, sharing one node table (as the ranks of a run would
  // each have their own: both work).
  Contents all;
  auto nodes = std::make_shared<NodeTable>();
  for (uint64_t i = 0; i < n; ++i) {
    Contents c = ReadContents(OpenBinaryBlockRange(path_, i, i + 1, nodes));
    ASSERT_EQ(c.error, "");
    EXPECT_EQ(c.lines.size(), blocks_[i].messages);
    all.lines.insert(all.lines.end(), c.lines.begin(), c.lines.end());
  }
  EXPECT_TRUE(all.lines == whole_.lines);
  EXPECT_EQ(ReadContents(OpenBinaryBlockRange(path_, 3, 3)).lines.size(), 0u);
  EXPECT_EQ(ReadContents(OpenBinaryBlockRange(path_, 2, n + 1)).error,
            path_ + ": block range [2, " + std::to_string(n + 1) +
                ") is not within its " + std::to_string(n) + " blocks");
}

// An index opened once serves every range (as the stream driver's segments
// use it), and keeps reading the file it was read from: a trace replaced at
// its path meanwhile is not mixed in.
TEST_F(BinaryIndexTest, AnOpenedIndexServesEveryRangeOfItsOwnFile) {
  Result<std::unique_ptr<const BinaryTraceIndex>> index =
      OpenBinaryIndex(path_);
  ASSERT_TRUE(index.ok()) << index.status().message();
  EXPECT_EQ((*index)->path(), path_);
  ASSERT_EQ((*index)->blocks().size(), blocks_.size());
  for (size_t i = 0; i < blocks_.size(); ++i) {
    EXPECT_EQ((*index)->blocks()[i].offset, blocks_[i].offset);
    EXPECT_EQ((*index)->blocks()[i].messages, blocks_[i].messages);
  }
  // Another trace now at the path: the index's file is still read.
  std::string other = dir_.Write("o.trace", RandomCanonicalTrace(6, 500));
  ASSERT_TRUE(Copy(other, dir_.File("o.bbt"), TraceFormat::kBinary).ok());
  ASSERT_EQ(std::rename(dir_.File("o.bbt").c_str(), path_.c_str()), 0);
  const uint64_t n = blocks_.size();
  for (uint64_t split : {uint64_t{0}, n / 3, n}) {
    Contents a = ReadContents(OpenBinaryBlockRange(**index, 0, split));
    Contents b = ReadContents(OpenBinaryBlockRange(**index, split, n));
    ASSERT_EQ(a.error, "") << "split " << split;
    ASSERT_EQ(b.error, "") << "split " << split;
    a.lines.insert(a.lines.end(), b.lines.begin(), b.lines.end());
    a.meta.insert(a.meta.end(), b.meta.begin(), b.meta.end());
    EXPECT_TRUE(a.lines == whole_.lines) << "split " << split;
    EXPECT_EQ(a.meta, whole_.meta) << "split " << split;
  }
  EXPECT_EQ(ReadContents(OpenBinaryBlockRange(**index, 4, 3)).error,
            path_ + ": block range [4, 3) is not within its " +
                std::to_string(n) + " blocks");
  // The path itself now names the other trace.
  Contents replaced = ReadContents(OpenTraceReader(path_));
  EXPECT_EQ(replaced.error, "");
  EXPECT_NE(replaced.lines.size(), whole_.lines.size());
}

// A node table with a limit (--max-nodes) folds the names past it into one
// node; the index and the blocks' definitions are still checked against the
// names as the file defines them, whole or by range. (Checked against the
// folded names, they were taken for a corrupt index.)
TEST_F(BinaryIndexTest, NodeLimitFoldsNamesWithoutFailingTheIndexChecks) {
  auto limited = [] {
    auto nodes = std::make_shared<NodeTable>();
    nodes->SetLimit(2);
    return nodes;
  };
  size_t names = 0;
  {
    auto r = OpenTraceReader(path_);
    ASSERT_TRUE(r.ok());
    Record rec;
    while ((*r)->Next(rec)) {
    }
    names = (*r)->nodes().size();
  }
  ASSERT_GT(names, 3u);
  auto nodes = limited();
  Contents whole = ReadContents(OpenTraceReader(path_, nodes));
  EXPECT_EQ(whole.error, "");
  EXPECT_EQ(whole.lines.size(), whole_.lines.size());
  EXPECT_EQ(whole.meta, whole_.meta);
  EXPECT_EQ(nodes->folded(), names - 2);
  const uint64_t n = blocks_.size();
  for (uint64_t split : {uint64_t{1}, n / 2}) {
    auto range_nodes = limited();
    Contents a = ReadContents(OpenBinaryBlockRange(path_, 0, split, range_nodes));
    Contents b = ReadContents(OpenBinaryBlockRange(path_, split, n, limited()));
    EXPECT_EQ(a.error, "") << "split " << split;
    EXPECT_EQ(b.error, "") << "split " << split;
    EXPECT_EQ(a.lines.size() + b.lines.size(), whole_.lines.size());
    EXPECT_EQ(range_nodes->folded(), names - 2);
  }
}

TEST_F(BinaryIndexTest, TimeRangeReturnsExactlyTheRecordsInIt) {
  std::vector<TimeNs> ts;
  {
    auto r = OpenTraceReader(path_);
    ASSERT_TRUE(r.ok());
    Record rec;
    while ((*r)->Next(rec)) ts.push_back(rec.ts_ns);
  }
  std::mt19937_64 rng(9);
  std::vector<std::pair<TimeNs, TimeNs>> ranges = {
      {0, ts.front()},              // before everything: empty
      {ts.back() + 1, kMaxTimeNs},  // after everything: empty
      {0, kMaxTimeNs},              // everything
      {ts[100], ts[100]},           // empty interval
      {ts[100], ts[100] + 1},       // one timestamp, maybe several records
  };
  // Boundaries at block edges, where equal timestamps may straddle blocks.
  for (size_t i = 1; i < blocks_.size(); i += 3) {
    ranges.push_back({blocks_[i].min_ts, blocks_[i].min_ts + 1});
    ranges.push_back({blocks_[i - 1].max_ts, blocks_[i].max_ts});
  }
  for (int i = 0; i < 30; ++i) {
    TimeNs a = ts[rng() % ts.size()], b = ts[rng() % ts.size()];
    ranges.push_back(
        {std::min(a, b), std::max(a, b) + static_cast<TimeNs>(rng() % 2)});
  }
  for (auto [from, to] : ranges) {
    std::vector<std::string> want;
    for (size_t i = 0; i < ts.size(); ++i) {
      if (ts[i] >= from && ts[i] < to) want.push_back(whole_.lines[i]);
    }
    Contents got = ReadContents(OpenBinaryTimeRange(path_, from, to));
    ASSERT_EQ(got.error, "");
    EXPECT_TRUE(got.lines == want)
        << "[" << from << ", " << to << "): " << got.lines.size() << " vs "
        << want.size();
  }
}

TEST_F(BinaryIndexTest, UnsortedTraceTimeRangeStillExact) {
  TempDir dir;
  std::string text = "#bbprof-trace 1\n";
  std::mt19937_64 rng(4);
  std::vector<TimeNs> ts;
  for (int i = 0; i < 30000; ++i) {
    ts.push_back(1000000 + static_cast<TimeNs>(rng() % 1000000000));
    text += FormatTimestamp(ts.back()) + "\tMSG\ta\tb\tc" + std::to_string(i) +
            "\n";
  }
  ReaderOptions unsorted;
  unsorted.allow_unsorted = true;
  std::string in = dir.Write("u.trace", text);
  ASSERT_TRUE(Copy(in, dir.File("u.bbt"), TraceFormat::kBinary, unsorted).ok());
  const TimeNs from = 300000000, to = 310000000;
  uint64_t want = 0;
  for (TimeNs t : ts) want += t >= from && t < to;
  Contents got = ReadContents(
      OpenBinaryTimeRange(dir.File("u.bbt"), from, to, nullptr, unsorted));
  ASSERT_EQ(got.error, "");
  EXPECT_EQ(got.lines.size(), want);
}

TEST_F(BinaryIndexTest, RangeReadsNeedAnUncompressedVersionTwoFile) {
  ASSERT_TRUE(Copy(path_, dir_.File("z.bbt.zst"), TraceFormat::kBinary).ok());
  EXPECT_EQ(
      ReadContents(OpenBinaryBlockRange(dir_.File("z.bbt.zst"), 0, 1)).error,
      dir_.File("z.bbt.zst") +
          ": a compressed trace cannot be read by block range "
          "(decompress it first)");
  EXPECT_EQ(
      ReadContents(OpenBinaryTimeRange(dir_.File("r.trace"), 0, 1)).error,
      dir_.File("r.trace") + ": not a bbprof binary trace (bad magic bytes)");
}

// BinaryMessagesHint, the in-memory driver's sizing hint: the messages of
// an uncompressed binary file, 0 for what is not one, and a FIFO is not
// opened (opening it would block with no writer, and reading it would take
// the data of whoever reads it for real).
TEST_F(BinaryIndexTest, MessagesHintCountsBinaryFilesOnly) {
  EXPECT_EQ(BinaryMessagesHint(path_), whole_.lines.size());
  EXPECT_EQ(BinaryMessagesHint(dir_.File("r.trace")), 0u);
  ASSERT_TRUE(Copy(path_, dir_.File("z.bbt.zst"), TraceFormat::kBinary).ok());
  EXPECT_EQ(BinaryMessagesHint(dir_.File("z.bbt.zst")), 0u);
  EXPECT_EQ(BinaryMessagesHint(dir_.File("missing.bbt")), 0u);
  EXPECT_EQ(BinaryMessagesHint("-"), 0u);
  const std::string fifo = dir_.File("pipe.bbt");
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  EXPECT_EQ(BinaryMessagesHint(fifo), 0u);  // returns: never opened
}

// A damaged index or footer: the whole-file reader and the range readers
// name the file and the byte offset; no byte flipped or cut anywhere after
// the blocks crashes either of them or goes unnoticed.
TEST_F(BinaryIndexTest, DamagedIndexIsNamedNeverACrash) {
  const std::string good = ReadFile(path_);
  const size_t index_at = BlockOffsets(good).back() + kBinaryBlockHeaderBytes;
  const size_t footer_at = good.size() - kBinaryFooterBytes;
  std::vector<size_t> spots;
  for (size_t at = index_at; at < good.size(); at += 7) spots.push_back(at);
  for (size_t at = footer_at; at < good.size(); ++at) spots.push_back(at);
  for (size_t at : spots) {
    std::string bad = good;
    bad[at] = static_cast<char>(bad[at] ^ 0x21);
    std::string p = dir_.Write("bad.bbt", bad);
    std::string whole = ReadAllError(p);
    EXPECT_EQ(whole.rfind(p + ": ", 0), 0u) << at << ": " << whole;
    EXPECT_NE(whole.find("binary trace"), std::string::npos) << whole;
    for (std::string err :
         {ReadContents(OpenBinaryBlockRange(p, 0, 2)).error,
          ReadContents(OpenBinaryTimeRange(p, 0, kMaxTimeNs)).error}) {
      EXPECT_EQ(err.rfind(p + ": ", 0), 0u) << at << ": " << err;
      EXPECT_NE(err.find("byte offset"), std::string::npos) << err;
    }
  }
  for (size_t cut : {good.size() - 1, footer_at, index_at + 5}) {
    std::string p = dir_.Write("cut.bbt", good.substr(0, cut));
    EXPECT_EQ(ReadAllError(p), p +
                                   ": truncated binary trace (block index at "
                                   "byte offset " +
                                   std::to_string(index_at) + ")");
    EXPECT_EQ(ReadContents(OpenBinaryBlockRange(p, 0, 1)).error.rfind(p, 0),
              0u);
  }
}

// An index that is well-formed and checksummed but lies about a block (as a
// buggy writer could make it): the range reader checks each block it reads
// against its entry.
TEST_F(BinaryIndexTest, ForgedIndexEntryDisagreeingWithItsBlock) {
  std::string bytes = ReadFile(path_);
  const size_t footer_at = bytes.size() - kBinaryFooterBytes;
  const size_t index_at = LoadLe32(bytes, footer_at);
  const size_t length = LoadLe32(bytes, footer_at + 16);
  // Block 2's message count, one more; then the index checksum again.
  const size_t entry = index_at + 2 * kBinaryIndexEntryBytes;
  StoreLe32(&bytes, entry + 8, LoadLe32(bytes, entry + 8) + 1);
  StoreLe32(&bytes, footer_at + 24, Crc32(bytes.substr(index_at, length)));
  std::string p = dir_.Write("lie.bbt", bytes);
  EXPECT_EQ(ReadContents(OpenBinaryBlockRange(p, 1, 4)).error,
            p +
                ": corrupt binary trace: block 2: does not match its block "
                "index entry (" +
                std::to_string(blocks_[2].messages) + " messages from " +
                FormatTimestamp(blocks_[2].min_ts) + " to " +
                FormatTimestamp(blocks_[2].max_ts) + ")");
  EXPECT_EQ(ReadAllError(p),
            p + ": corrupt binary trace: block index at byte offset " +
                std::to_string(index_at) +
                ": it does not describe the blocks before it");
  // An offset moved by one: the block before it no longer fits.
  bytes = ReadFile(path_);
  StoreLe32(&bytes, entry, LoadLe32(bytes, entry) + 1);
  StoreLe32(&bytes, footer_at + 24, Crc32(bytes.substr(index_at, length)));
  p = dir_.Write("off.bbt", bytes);
  const uint64_t len =
      blocks_[2].offset - blocks_[1].offset - kBinaryBlockHeaderBytes;
  EXPECT_EQ(ReadContents(OpenBinaryBlockRange(p, 1, 2)).error,
            p + ": corrupt binary trace: block 1 at byte offset " +
                std::to_string(blocks_[1].offset) + " claims " +
                std::to_string(len) +
                " bytes, but its block index entry leaves " +
                std::to_string(len + 1));
}

// Damage under a valid checksum (what a fuzzer forges): random bytes of a
// block changed and its checksum made to match again. Every reader either
// reads on or stops with an error naming the file; none crashes (the
// sanitizer build runs this too).
TEST(BinaryFormatTest, ForgedBlockBytesNeverCrashAReader) {
  TempDir dir;
  std::string in = dir.Write("t.trace", RandomTextIdTrace(8, 6000));
  ASSERT_TRUE(Copy(in, dir.File("t.bbt"), TraceFormat::kBinary).ok());
  const std::string good = ReadFile(dir.File("t.bbt"));
  const std::vector<size_t> blocks = BlockOffsets(good);
  ASSERT_GE(blocks.size(), 3u);
  std::mt19937_64 rng(12);
  for (int i = 0; i < 200; ++i) {
    std::string bad = good;
    const size_t k = rng() % (blocks.size() - 1);
    const size_t len = LoadLe32(bad, blocks[k]);
    const size_t payload = blocks[k] + kBinaryBlockHeaderBytes;
    for (uint64_t n = 1 + rng() % 3; n > 0; --n) {
      bad[payload + rng() % len] = static_cast<char>(rng());
    }
    StoreLe32(&bad, blocks[k] + 8, Crc32(bad.substr(payload, len)));
    std::string p = dir.Write("f.bbt", bad);
    for (std::string err :
         {ReadAllError(p),
          ReadContents(OpenBinaryBlockRange(p, k, k + 1)).error,
          ReadContents(OpenBinaryTimeRange(p, 0, kMaxTimeNs)).error}) {
      if (!err.empty()) {
        EXPECT_EQ(err.rfind(p + ": ", 0), 0u) << err;
      }
    }
  }
}

// A trace without records still has an index: a block of meta lines, or
// none at all, and range reads of it are empty.
TEST(BinaryFormatTest, TracesWithoutRecordsHaveAnIndexToo) {
  TempDir dir;
  for (std::string text : {std::string("#bbprof-trace 1\n"),
                           std::string("#bbprof-trace 1\n#meta a=b\n")}) {
    std::string in = dir.Write("e.trace", text);
    ASSERT_TRUE(Copy(in, dir.File("e.bbt"), TraceFormat::kBinary).ok());
    ASSERT_TRUE(
        Copy(dir.File("e.bbt"), dir.File("back.trace"), TraceFormat::kText)
            .ok());
    EXPECT_EQ(ReadFile(dir.File("back.trace")), text);
    Result<std::vector<BinaryBlockInfo>> index =
        ReadBinaryBlockIndex(dir.File("e.bbt"));
    ASSERT_TRUE(index.ok()) << index.status().message();
    const size_t blocks = text.find("#meta") == std::string::npos ? 0 : 1;
    ASSERT_EQ(index->size(), blocks);
    Contents all =
        ReadContents(OpenBinaryBlockRange(dir.File("e.bbt"), 0, blocks));
    EXPECT_EQ(all.error, "");
    EXPECT_EQ(all.meta.size(), blocks);
    Contents none =
        ReadContents(OpenBinaryTimeRange(dir.File("e.bbt"), 0, kMaxTimeNs));
    EXPECT_EQ(none.error, "");
    EXPECT_TRUE(none.lines.empty());
  }
}

// A record the writer refuses (here for its op) leaves no trace in the
// prefix table: the records after it still read back exactly.
TEST(BinaryFormatTest, RefusedRecordLeavesThePrefixTableAlone) {
  TempDir dir;
  NodeTable nodes;
  auto w = OpenTraceWriter(dir.File("r.bbt"), &nodes);
  ASSERT_TRUE(w.ok());
  Record rec{1, nodes.Intern("a"), nodes.Intern("b"), Kind::kCall, "q7", "z1"};
  rec.op = "bad op";
  EXPECT_FALSE((*w)->Write(rec).ok());
  rec.op = {};
  ASSERT_TRUE((*w)->Write(rec).ok());
  rec.callid = "q8";
  ASSERT_TRUE((*w)->Write(rec).ok());
  ASSERT_TRUE((*w)->Close().ok());
  ASSERT_TRUE(
      Copy(dir.File("r.bbt"), dir.File("r.trace"), TraceFormat::kText).ok());
  EXPECT_EQ(ReadFile(dir.File("r.trace")),
            "#bbprof-trace 1\n0.000000001\tCALL\ta\tb\tq7\tz1\n"
            "0.000000001\tCALL\ta\tb\tq8\tz1\n");
}

}  // namespace
}  // namespace bbprof::trace
