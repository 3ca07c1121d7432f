#include <gtest/gtest.h>

#include <string>

#include "capture/decoders/decoders.h"
#include "tests/capture/decoders/test_sink.h"

namespace bbprof::capture {
namespace {

constexpr Direction kC = Direction::kToServer;
constexpr Direction kS = Direction::kToClient;

// A typed message: type, length (counting itself), body.
std::string Msg(char type, std::string_view body) {
  std::vector<std::byte> v;
  v.push_back(static_cast<std::byte>(type));
  Put32(v, static_cast<uint32_t>(body.size() + 4));
  Append(v, AsBytes(body));
  return std::string(reinterpret_cast<const char*>(v.data()), v.size());
}

std::string Untyped(uint32_t code, std::string_view body) {
  std::vector<std::byte> v;
  Put32(v, static_cast<uint32_t>(body.size() + 8));
  Put32(v, code);
  Append(v, AsBytes(body));
  return std::string(reinterpret_cast<const char*>(v.data()), v.size());
}

const std::string kZ = Msg('Z', "I");

std::string Cstr(std::string_view s) { return std::string(s) + '\0'; }

TEST(Postgres, StartupSimpleAndExtendedQueriesSplitEverywhere) {
  const std::string client =
      Untyped(80877103, "") +  // SSLRequest
      Untyped(196608,
              Cstr("user") + Cstr("app") + Cstr("")) +  // StartupMessage
      Msg('p', Cstr("secret")) +                        // password
      Msg('Q', Cstr("SELECT * FROM users WHERE id = 1")) +
      // Extended: Parse (named), Bind, Describe, Execute, Sync: one call.
      Msg('P', Cstr("s1") + Cstr("UPDATE accounts SET n = $1") +
                   std::string(2, '\0')) +
      Msg('B', Cstr("") + Cstr("s1") + std::string(6, '\0')) +
      Msg('D', "P" + Cstr("")) + Msg('E', Cstr("") + std::string(4, '\0')) +
      Msg('S', "") +
      // The prepared statement again: Bind/Execute/Sync only.
      Msg('B', Cstr("") + Cstr("s1") + std::string(6, '\0')) +
      Msg('E', Cstr("") + std::string(4, '\0')) + Msg('S', "") + Msg('X', "");
  const std::string server =
      std::string("N") +  // no TLS
      Msg('R', std::string(4, '\0')) + Msg('S', Cstr("a") + Cstr("b")) +
      Msg('K', std::string(8, '\0')) + kZ +  // startup done
      Msg('T', std::string(2, '\0')) + Msg('D', std::string(2, '\0')) +
      Msg('C', Cstr("SELECT 1")) + kZ +  // the query
      Msg('1', "") + Msg('2', "") + Msg('n', "") + Msg('C', Cstr("UPDATE 1")) +
      kZ + Msg('N', "notice") +  // async: no return
      Msg('2', "") + Msg('C', Cstr("UPDATE 1")) + kZ;
  const size_t q = client.find('Q');
  for (size_t split = 0; split <= client.size(); ++split) {
    RecordingSink sink;
    auto d = FindDecoder("pg")->make_stream(sink);
    d->OnData(kC, 1, AsBytes(std::string_view(client).substr(0, split)));
    d->OnData(kC, 2, AsBytes(std::string_view(client).substr(split)));
    d->OnData(kS, 3, AsBytes(server));
    std::string first = q < split ? "1" : "2";
    ASSERT_EQ(sink.CallOps(),
              "pg:SELECT:users pg:UPDATE:accounts pg:UPDATE:accounts")
        << split;
    ASSERT_EQ(sink.Summary().substr(0, 5), "C0@" + first + " ") << split;
    ASSERT_EQ(sink.Kinds(trace::Kind::kReturn), 3u) << split;
    ASSERT_TRUE(sink.counts.empty()) << split;
  }
}

TEST(Postgres, ReturnIsTheFirstResponseMessageAndErrorsAnswerToo) {
  RecordingSink sink;
  auto d = FindDecoder("pg")->make_stream(sink);
  // A capture that began after the startup: typed messages at once.
  d->OnData(kC, 1, AsBytes(Msg('Q', Cstr("delete from t"))));
  d->OnData(kS, 2, AsBytes(Msg('E', "SERROR")));
  d->OnData(kS, 3, AsBytes(kZ));
  d->OnData(kC, 4, AsBytes(Msg('Q', Cstr("BEGIN"))));
  d->OnData(kS, 5, AsBytes(Msg('C', Cstr("BEGIN")) + kZ));
  EXPECT_EQ(sink.Summary(), "C0@1 R0@2 C1@4 R1@5");
  EXPECT_EQ(sink.CallOps(), "pg:DELETE:t pg:BEGIN");
}

TEST(Postgres, TlsStopsDecodingGarbageAndHolesFallBackToTheGenericRule) {
  RecordingSink sink;
  auto d = FindDecoder("pg")->make_stream(sink);
  d->OnData(kC, 1, AsBytes(Untyped(80877103, "")));
  d->OnData(kS, 2, AsBytes("S"));
  d->OnData(kC, 3, AsBytes("\x16\x03\x01 tls bytes"));
  EXPECT_EQ(sink.events.size(), 0u);
  EXPECT_EQ(sink.count("pg_encrypted"), 1u);
  // Bytes that are not PostgreSQL (another protocol on the port): counted,
  // and the generic turn-taking rule takes the connection over.
  RecordingSink sink2;
  auto d2 = FindDecoder("pg")->make_stream(sink2);
  d2->OnData(kC, 1, AsBytes(Msg('Q', Cstr("SELECT 1"))));
  d2->OnData(kS, 2, AsBytes(Msg('T', "") + "rrrr not a message"));
  d2->OnData(kC, 3, AsBytes("PING\r\n"));
  d2->OnData(kS, 4, AsBytes("PONG\r\n"));
  EXPECT_EQ(sink2.count("pg_bad_backend_message"), 1u);
  EXPECT_EQ(sink2.Summary(), "C0@1 R0@2 M@2 C2147483649@3 R2147483649@4");
  EXPECT_EQ(sink2.CallOps(), "pg:SELECT generic:PING");
  // A hole outside a body: the same.
  RecordingSink sink3;
  auto d3 = FindDecoder("pg")->make_stream(sink3);
  d3->OnData(kC, 1, AsBytes(Msg('Q', Cstr("SELECT 1"))));
  d3->OnGap(kS, 10);
  d3->OnData(kC, 2, AsBytes(Msg('Q', Cstr("SELECT 2"))));
  d3->OnData(kS, 3, AsBytes("anything"));
  EXPECT_EQ(sink3.count("pg_gap"), 1u);
  EXPECT_EQ(sink3.Summary(), "C0@1 C2147483649@2 R2147483649@3");
}

TEST(PostgresProbe, StartupOrSimpleQuery) {
  auto probe = FindDecoder("pg")->probe_stream;
  EXPECT_EQ(probe(AsBytes(Untyped(80877103, ""))), 95);
  EXPECT_EQ(
      probe(AsBytes(Untyped(196608, Cstr("user") + Cstr("x") + Cstr("")))), 95);
  EXPECT_EQ(probe(AsBytes(Msg('Q', Cstr("select 1")))), 60);
  EXPECT_EQ(probe(AsBytes("GET / HTTP/1.1\r\n")), 0);
}

// MySQL: 3-byte little-endian length, sequence id, payload.
std::string Packet(uint8_t seq, std::string_view payload) {
  std::string p;
  p.push_back(static_cast<char>(payload.size() & 0xff));
  p.push_back(static_cast<char>((payload.size() >> 8) & 0xff));
  p.push_back(static_cast<char>(payload.size() >> 16));
  p.push_back(static_cast<char>(seq));
  return p + std::string(payload);
}

TEST(Mysql, HandshakeThenCommandsPairInOrder) {
  RecordingSink sink;
  auto d = FindDecoder("mysql")->make_stream(sink);
  d->OnData(kS, 1,
            AsBytes(Packet(0,
                           "\x0a"
                           "8.0.36\0greeting")));
  std::string response(32, '\0');
  response[0] = '\x0d';  // capabilities without CLIENT_SSL
  response += "user";
  d->OnData(kC, 2, AsBytes(Packet(1, response)));
  d->OnData(kS, 3,
            AsBytes(Packet(2, std::string("\x00\x00\x00\x02\x00", 5))));  // OK
  const std::string q = Packet(0, "\x03SELECT * FROM `orders` WHERE id=1");
  for (size_t split = 0; split <= q.size(); ++split) {
    RecordingSink s;
    auto m = FindDecoder("mysql")->make_stream(s);
    m->OnData(kS, 1,
              AsBytes(Packet(0,
                             "\x0a"
                             "8.0.36")));
    m->OnData(kC, 2, AsBytes(Packet(1, response)));
    m->OnData(kS, 3, AsBytes(Packet(2, std::string("\x00\x00\x00", 3))));
    m->OnData(kC, 4, AsBytes(std::string_view(q).substr(0, split)));
    m->OnData(kC, 5, AsBytes(std::string_view(q).substr(split)));
    m->OnData(
        kS, 6,
        AsBytes(Packet(1, "\x01") + Packet(2, "coldef") + Packet(3, "\xfe")));
    ASSERT_EQ(s.Summary(),
              std::string("M@1 C0@") + (split > 0 ? "4" : "5") + " R0@6")
        << split;
    ASSERT_EQ(s.CallOps(), "mysql:SELECT:orders") << split;
  }
  d->OnData(kC, 4,
            AsBytes(Packet(0, "\x0e") + Packet(0, "\x19\x01\x00\x00\x00") +
                    Packet(0, "\x16INSERT INTO t VALUES (?)")));
  d->OnData(kS, 5,
            AsBytes(Packet(1, std::string("\x00\x00\x00", 3)) +
                    Packet(1, "\x00prep")));
  d->OnData(kC, 6, AsBytes(Packet(0, "\x01")));  // COM_QUIT: no response
  EXPECT_EQ(sink.Summary(), "M@1 C0@4 M@4 C1@4 R0@5 R1@5 M@6");
  EXPECT_EQ(sink.CallOps(), "mysql:PING mysql:STMT_PREPARE");
}

TEST(Mysql, TlsRequestStopsDecoding) {
  RecordingSink sink;
  auto d = FindDecoder("mysql")->make_stream(sink);
  d->OnData(kS, 1,
            AsBytes(Packet(0,
                           "\x0a"
                           "8.0")));
  std::string ssl(32, '\0');
  ssl[1] = '\x08';  // CLIENT_SSL (0x800)
  d->OnData(kC, 2, AsBytes(Packet(1, ssl)));
  d->OnData(kC, 3, AsBytes(Packet(0, "\x03SELECT 1")));  // would be TLS
  EXPECT_EQ(sink.Summary(), "M@1");
  EXPECT_EQ(sink.count("mysql_tls"), 1u);
}

TEST(MysqlProbe, QueryCommand) {
  auto probe = FindDecoder("mysql")->probe_stream;
  EXPECT_EQ(probe(AsBytes(Packet(0, "\x03select 1"))), 60);
  EXPECT_EQ(probe(AsBytes(Packet(1, "\x03select 1"))), 0);
  EXPECT_EQ(probe(AsBytes("GET / HTTP/1.1\r\n")), 0);
}

}  // namespace
}  // namespace bbprof::capture
