#include <gtest/gtest.h>

#include "capture/decoders/decoders.h"
#include "tests/capture/decoders/test_sink.h"

namespace bbprof::capture {
namespace {

// An RPC message body: a CALL (rpcvers 2, NFS program) or an accepted REPLY.
std::vector<std::byte> RpcMessage(uint32_t xid, bool reply, size_t extra = 16) {
  std::vector<std::byte> m;
  Put32(m, xid);
  Put32(m, reply ? 1 : 0);
  if (reply) {
    Put32(m, 0);  // MSG_ACCEPTED
    Put32(m, 0);  // AUTH_NONE verifier
    Put32(m, 0);
    Put32(m, 0);  // SUCCESS
  } else {
    Put32(m, 2);       // rpcvers
    Put32(m, 100003);  // NFS
    Put32(m, 3);
    Put32(m, 1);
    Put32(m, 1);  // AUTH_SYS, 20 bytes of credential
    Put32(m, 20);
    for (int i = 0; i < 5; ++i) Put32(m, 1000);
    Put32(m, 0);  // AUTH_NONE verifier
    Put32(m, 0);
  }
  for (size_t i = 0; i < extra; ++i) m.push_back(std::byte{0xAB});
  return m;
}

// Record marking: the message cut into fragments of `frag` bytes.
std::vector<std::byte> Record(const std::vector<std::byte>& msg,
                              size_t frag = 0) {
  if (frag == 0) frag = msg.size();
  std::vector<std::byte> r;
  for (size_t off = 0; off < msg.size(); off += frag) {
    size_t n = std::min(frag, msg.size() - off);
    bool last = off + n == msg.size();
    Put32(r, static_cast<uint32_t>(n) | (last ? 0x80000000u : 0));
    r.insert(r.end(), msg.begin() + static_cast<std::ptrdiff_t>(off),
             msg.begin() + static_cast<std::ptrdiff_t>(off + n));
  }
  return r;
}

std::unique_ptr<StreamDecoder> MakeRpc(EventSink& s) {
  return FindDecoder("rpc")->make_stream(s);
}

TEST(RpcStream, CallAndReply) {
  RecordingSink sink;
  auto d = MakeRpc(sink);
  d->OnData(Direction::kToServer, 10, Span(Record(RpcMessage(0x1234, false))));
  d->OnData(Direction::kToClient, 20, Span(Record(RpcMessage(0x1234, true))));
  EXPECT_EQ(sink.Summary(), "C4660@10 R4660@20");
  EXPECT_TRUE(sink.counts.empty());
}

TEST(RpcStream, SplitAtEveryByteOfSeveralRecordsAndFragments) {
  // Three records in one stream: one plain, one in 3 fragments, one plain.
  std::vector<std::byte> stream;
  Append(stream, Record(RpcMessage(1, false, 40)));
  Append(stream, Record(RpcMessage(2, false, 40), 20));
  Append(stream, Record(RpcMessage(3, false, 0)));
  for (size_t split = 0; split <= stream.size(); ++split) {
    RecordingSink sink;
    auto d = MakeRpc(sink);
    auto all = Span(stream);
    d->OnData(Direction::kToServer, 100, all.subspan(0, split));
    d->OnData(Direction::kToServer, 200, all.subspan(split));
    // Each call is stamped with the segment carrying its first byte.
    std::string want;
    size_t starts[3] = {0, Record(RpcMessage(1, false, 40)).size(),
                        Record(RpcMessage(1, false, 40)).size() +
                            Record(RpcMessage(2, false, 40), 20).size()};
    for (int i = 0; i < 3; ++i) {
      if (i) want += ' ';
      want += "C" + std::to_string(i + 1) + "@" +
              (starts[i] < split ? "100" : "200");
    }
    ASSERT_EQ(sink.Summary(), want) << "split " << split;
    ASSERT_TRUE(sink.counts.empty()) << "split " << split;
  }
}

TEST(RpcStream, ByteAtATime) {
  std::vector<std::byte> stream;
  for (uint32_t x = 1; x <= 5; ++x)
    Append(stream, Record(RpcMessage(x, true, x * 3), 7));
  RecordingSink sink;
  auto d = MakeRpc(sink);
  for (size_t i = 0; i < stream.size(); ++i) {
    d->OnData(Direction::kToClient, static_cast<trace::TimeNs>(i),
              Span(stream).subspan(i, 1));
  }
  EXPECT_EQ(sink.Kinds(trace::Kind::kReturn), 5u);
  EXPECT_TRUE(sink.counts.empty());
}

TEST(RpcStream, BadRecordMarkResynchronises) {
  std::vector<std::byte> stream = Bytes("garbage that is not a record mark!!");
  Append(stream, Record(RpcMessage(7, false)));
  Append(stream, Record(RpcMessage(8, false)));
  RecordingSink sink;
  auto d = MakeRpc(sink);
  d->OnData(Direction::kToServer, 1, Span(stream));
  EXPECT_EQ(sink.Summary(), "C7@1 C8@1");
  EXPECT_EQ(sink.count("rpc_bad_record_mark"), 1u);
  EXPECT_EQ(sink.count("rpc_resync"), 1u);
}

TEST(RpcStream, GapInsideFragmentStaysInSync) {
  auto rec = Record(RpcMessage(9, false, 100));
  RecordingSink sink;
  auto d = MakeRpc(sink);
  d->OnData(Direction::kToServer, 1, Span(rec).subspan(0, 30));
  d->OnGap(Direction::kToServer, 50);
  d->OnData(Direction::kToServer, 2, Span(rec).subspan(80));
  d->OnData(Direction::kToServer, 3, Span(Record(RpcMessage(10, false))));
  EXPECT_EQ(sink.Summary(), "C9@1 C10@3");
  EXPECT_TRUE(sink.counts.empty());
}

TEST(RpcStream, GapAcrossRecordsResynchronises) {
  auto r1 = Record(RpcMessage(1, false, 100));
  RecordingSink sink;
  auto d = MakeRpc(sink);
  d->OnData(Direction::kToServer, 1, Span(r1).subspan(0, 30));
  d->OnGap(Direction::kToServer, 200);  // beyond the record's end
  d->OnData(Direction::kToServer, 2, Bytes("\x01\x02\x03 tail of something"));
  d->OnData(Direction::kToServer, 3, Span(Record(RpcMessage(2, false))));
  EXPECT_EQ(sink.Summary(), "C1@1 C2@3");
}

TEST(RpcStream, RejectsWrongRpcVersion) {
  auto msg = RpcMessage(5, false);
  msg[11] = std::byte{3};  // rpcvers 3
  RecordingSink sink;
  auto d = MakeRpc(sink);
  d->OnData(Direction::kToServer, 1, Span(Record(msg)));
  EXPECT_EQ(sink.events.size(), 0u);
  EXPECT_EQ(sink.count("rpc_bad_rpc_version"), 1u);
}

TEST(RpcDatagram, CallReplyAndGarbage) {
  RecordingSink sink;
  auto d = FindDecoder("rpc")->make_datagram(sink);
  d->OnDatagram(Direction::kToServer, 1, Span(RpcMessage(42, false)));
  d->OnDatagram(Direction::kToClient, 2, Span(RpcMessage(42, true)));
  d->OnDatagram(Direction::kToClient, 3, Bytes("short"));
  auto bad = RpcMessage(43, false);
  bad[7] = std::byte{5};
  d->OnDatagram(Direction::kToServer, 4, Span(bad));
  EXPECT_EQ(sink.Summary(), "C42@1 R42@2");
  EXPECT_EQ(sink.count("rpc_truncated"), 1u);
  EXPECT_EQ(sink.count("rpc_bad_msg_type"), 1u);
}

TEST(RpcProbe, AcceptsCallsRejectsOthers) {
  const DecoderInfo* rpc = FindDecoder("rpc");
  EXPECT_GE(rpc->probe_stream(Span(Record(RpcMessage(1, false)))), 90);
  EXPECT_GE(rpc->probe_datagram(Span(RpcMessage(1, false))), 90);
  EXPECT_EQ(rpc->probe_stream(Bytes("GET / HTTP/1.1\r\nHost: x\r\n\r\n")), 0);
  EXPECT_EQ(rpc->probe_stream(Bytes("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n")), 0);
  EXPECT_EQ(rpc->probe_datagram(Bytes(std::string_view(
                "\x12\x34\x01\x00\x00\x01\x00\x00\x00\x00\x00\x00", 12))),
            0);
}

// The call's op is its program and procedure (NFSv3 GETATTR here), read
// from the header even when fragments cut it; the reply carries none (the
// core gives it its call's).
TEST(RpcStream, CallsNameTheirProcedureAcrossFragments) {
  for (size_t frag : {size_t{0}, size_t{5}, size_t{13}, size_t{23}}) {
    RecordingSink sink;
    auto d = MakeRpc(sink);
    auto rec = Record(RpcMessage(7, false), frag);
    for (size_t i = 0; i < rec.size(); ++i) {  // a byte at a time
      d->OnData(Direction::kToServer, 10, Span(rec).subspan(i, 1));
    }
    d->OnData(Direction::kToClient, 20, Span(Record(RpcMessage(7, true))));
    EXPECT_EQ(sink.Summary(), "C7@10 R7@20") << frag;
    EXPECT_EQ(sink.CallOps(), "nfs3:GETATTR") << frag;
    EXPECT_EQ(sink.ops[1], "") << frag;
  }
}

TEST(RpcDatagram, CallsNameTheirProcedureOrProgramNumbers) {
  RecordingSink sink;
  auto d = FindDecoder("rpc")->make_datagram(sink);
  auto call = RpcMessage(9, false);
  call[15] = std::byte{0xA5};  // program 100005 -> mount
  d->OnDatagram(Direction::kToServer, 1, Span(call));
  call[14] = std::byte{0x7F};  // an unknown program
  d->OnDatagram(Direction::kToServer, 2, Span(call));
  // A call cut before its procedure is a call with no op.
  d->OnDatagram(Direction::kToServer, 3, Span(call).first(20));
  EXPECT_EQ(sink.CallOps(), "mount3:MNT rpc:98213:3:1 -");
}

}  // namespace
}  // namespace bbprof::capture
