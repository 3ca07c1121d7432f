#include "capture/decoders/op_names.h"

#include <gtest/gtest.h>

#include <string>

#include "tests/capture/decoders/test_sink.h"
#include "trace/op.h"

namespace bbprof::capture {
namespace {

TEST(RouteTemplate, FoldsNumbersUuidsHashesAndIds) {
  EXPECT_EQ(RouteTemplate("/item/42"), "/item/{n}");
  EXPECT_EQ(RouteTemplate("/users/7/orders/2024-05-01"),
            "/users/{n}/orders/{n}");
  EXPECT_EQ(RouteTemplate("/v1.2.3/x"), "/v1.2.3/x");  // a letter: kept
  EXPECT_EQ(RouteTemplate("/pkg/1.2.3"), "/pkg/{n}");
  EXPECT_EQ(RouteTemplate("/o/123e4567-e89b-12d3-a456-426614174000/x"),
            "/o/{uuid}/x");
  EXPECT_EQ(RouteTemplate("/blob/9b74c9897bac770ffc029102a200c5de"),
            "/blob/{id}");
  EXPECT_EQ(RouteTemplate("/c/5f1d7e0a4b3c2d1e0f9a8b7c"),
            "/c/{id}");  // ObjectId
  EXPECT_EQ(RouteTemplate("/watch/dQw4w9WgXcQ"), "/watch/{id}");
  EXPECT_EQ(RouteTemplate("/items/item12345"), "/items/{id}");
  // Words, including ones made of hex letters or holding a version, stay.
  EXPECT_EQ(RouteTemplate("/api/v2beta1/facade/sha256sum/x86_64"),
            "/api/v2beta1/facade/sha256sum/x86_64");
  EXPECT_EQ(RouteTemplate("/"), "/");
  EXPECT_EQ(RouteTemplate("/a//b/"), "/a//b/");
}

TEST(RouteTemplate, DropsQueryAndFragmentAndAuthority) {
  EXPECT_EQ(RouteTemplate("/search?q=cats&page=2"), "/search");
  EXPECT_EQ(RouteTemplate("/doc/5#section-2"), "/doc/{n}");
  EXPECT_EQ(RouteTemplate("http://example.com:8080/item/3?x=1"), "/item/{n}");
  EXPECT_EQ(RouteTemplate("http://example.com"), "/");
  EXPECT_EQ(RouteTemplate("*"), "*");
  EXPECT_EQ(RouteTemplate("example.com:443"), "example.com:443");  // CONNECT
}

TEST(RouteTemplate, PercentEscapesAreDecodedBeforeFoldingAndReencodedInTheOp) {
  EXPECT_EQ(RouteTemplate("/item/%34%32"), "/item/{n}");  // "42"
  EXPECT_EQ(HttpOp("GET", "/my%20files/a%2Cb"), "http:GET:/my%20files/a%2Cb");
  EXPECT_EQ(HttpOp("GET", "/100%25/x"), "http:GET:/100%25/x");
  // A stray '%' stays a byte of the segment (and is escaped in the op).
  EXPECT_EQ(HttpOp("GET", "/a%zz"), "http:GET:/a%25zz");
  EXPECT_EQ(trace::CheckOpToken(HttpOp("GET", "/a b(c);d\t")), "");
}

TEST(RouteTemplate, LongTokensAndLongPathsAreBounded) {
  std::string jwt = "/t/" + std::string(40, 'a') + "/x";
  EXPECT_EQ(RouteTemplate(jwt), "/t/{id}/x");
  std::string deep;
  for (int i = 0; i < 200; ++i) deep += "/segment";
  std::string op = HttpOp("GET", deep);
  EXPECT_EQ(op.size(), trace::kMaxOpBytes);
  EXPECT_EQ(op.back(), '~');
  EXPECT_EQ(trace::CheckOpToken(op), "");
}

TEST(OpNames, HttpGrpcDns) {
  EXPECT_EQ(HttpOp("GET", "/item/17"), "http:GET:/item/{n}");
  EXPECT_EQ(GrpcOp("/helloworld.Greeter/SayHello"),
            "grpc:/helloworld.Greeter/SayHello");
  EXPECT_EQ(DnsOp(1), "dns:A");
  EXPECT_EQ(DnsOp(28), "dns:AAAA");
  EXPECT_EQ(DnsOp(12), "dns:PTR");
  EXPECT_EQ(DnsOp(65), "dns:HTTPS");
  EXPECT_EQ(DnsOp(4242), "dns:TYPE4242");
}

TEST(OpNames, RpcProgramsAndProceduresAsWiresharkNamesThem) {
  EXPECT_EQ(RpcOp(100003, 3, 1), "nfs3:GETATTR");
  EXPECT_EQ(RpcOp(100003, 3, 17), "nfs3:READDIRPLUS");
  EXPECT_EQ(RpcOp(100003, 3, 21), "nfs3:COMMIT");
  EXPECT_EQ(RpcOp(100003, 3, 22), "nfs3:PROC22");
  EXPECT_EQ(RpcOp(100003, 2, 17), "nfs2:STATFS");
  EXPECT_EQ(RpcOp(100003, 4, 1), "nfs4:COMPOUND");
  EXPECT_EQ(RpcOp(100005, 3, 1), "mount3:MNT");
  EXPECT_EQ(RpcOp(100000, 2, 3), "portmap2:GETPORT");
  EXPECT_EQ(RpcOp(100000, 4, 3), "portmap4:GETADDR");
  EXPECT_EQ(RpcOp(100021, 4, 2), "nlm4:LOCK");
  EXPECT_EQ(RpcOp(100021, 4, 17), "nlm4:PROC17");
  EXPECT_EQ(RpcOp(100024, 1, 2), "status1:MON");
  EXPECT_EQ(RpcOp(100232, 10, 1), "rpc:100232:10:1");
  EXPECT_EQ(RpcOp(100003, 5, 0), "rpc:100003:5:0");
}

TEST(OpNames, RedisMemcachedGeneric) {
  EXPECT_EQ(RedisOp("get"), "redis:GET");
  EXPECT_EQ(RedisOp("Client"), "redis:CLIENT");
  EXPECT_EQ(MemcachedOp("get"), "memcached:get");
  EXPECT_EQ(GenericOp("generic", AsBytes("HELO mail.example.com\r\n")),
            "generic:HELO");
  EXPECT_EQ(GenericOp("generic", AsBytes("QUIT")), "generic:QUIT");
  EXPECT_EQ(GenericOp("generic", AsBytes("QUIT\r\n")), "generic:QUIT");
  EXPECT_EQ(GenericOp("generic", AsBytes("abcdefghijklmnop x")),
            "generic:abcdefghijklmnop");
  EXPECT_EQ(GenericOp("generic", AsBytes("abcdefghijklmnopq x")),
            "");  // 17 letters
  EXPECT_EQ(GenericOp("generic", AsBytes("GET2 x")), "");
  EXPECT_EQ(GenericOp("generic", AsBytes("\x16\x03\x01")), "");  // TLS
  EXPECT_EQ(GenericOp("generic", AsBytes("")), "");
}

TEST(OpNames, SqlVerbAndTable) {
  EXPECT_EQ(SqlOp("pg", "SELECT id, name FROM users WHERE id = $1"),
            "pg:SELECT:users");
  EXPECT_EQ(SqlOp("pg", "  select * from Public.Users u"),
            "pg:SELECT:public.users");
  EXPECT_EQ(SqlOp("pg", "SELECT \"Orders\".x FROM \"Orders\""),
            "pg:SELECT:Orders");
  EXPECT_EQ(SqlOp("mysql", "insert into `orders` (a) values (1)"),
            "mysql:INSERT:orders");
  EXPECT_EQ(SqlOp("mysql", "REPLACE INTO t VALUES (1)"), "mysql:REPLACE:t");
  EXPECT_EQ(SqlOp("pg", "UPDATE ONLY accounts SET x = 1"),
            "pg:UPDATE:accounts");
  EXPECT_EQ(SqlOp("pg", "DELETE FROM sessions WHERE t < now()"),
            "pg:DELETE:sessions");
  EXPECT_EQ(SqlOp("pg", "/* app */ -- note\n SELECT 1"), "pg:SELECT");
  EXPECT_EQ(SqlOp("pg", "SELECT (SELECT max(a) FROM inner_t) FROM outer_t"),
            "pg:SELECT:outer_t");
  EXPECT_EQ(SqlOp("pg", "SELECT 'from x' AS s FROM real_t"),
            "pg:SELECT:real_t");
  EXPECT_EQ(SqlOp("pg", "SELECT * FROM (SELECT 1) AS sub"), "pg:SELECT");
  EXPECT_EQ(SqlOp("pg", "CREATE TEMP TABLE IF NOT EXISTS scratch (a int)"),
            "pg:CREATE:scratch");
  EXPECT_EQ(SqlOp("pg", "CREATE INDEX i ON t (a)"), "pg:CREATE");
  EXPECT_EQ(SqlOp("pg", "TRUNCATE TABLE logs"), "pg:TRUNCATE:logs");
  EXPECT_EQ(SqlOp("pg", "begin"), "pg:BEGIN");
  EXPECT_EQ(SqlOp("pg", "(SELECT a FROM b)"), "pg:SELECT:b");
  EXPECT_EQ(SqlOp("pg", ""), "");
  EXPECT_EQ(SqlOp("pg", "123"), "");
  EXPECT_EQ(trace::CheckOpToken(SqlOp("pg", "SELECT * FROM \"a b;c\"")), "");
}

}  // namespace
}  // namespace bbprof::capture
