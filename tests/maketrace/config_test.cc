#include "maketrace/config.h"

#include <gtest/gtest.h>

namespace bbprof::maketrace {
namespace {

std::string ErrorOf(const std::string& text) {
  Result<Config> c = ParseConfig(text, "t.conf");
  return c.ok() ? "" : c.status().message();
}

TEST(ConfigTest, ParsesEveryKeyword) {
  Result<Config> c = ParseConfig(
      "# comment\n"
      "start 1047680084.5\n"
      "duration 10min\n"
      "callids reuse=16\n"
      "loss 1%\n"
      "sniffer rate=600/s queue=64\n"
      "noise oneway=2/s nodes=A|B timeout=0.1% duplicate=0.002 after=1s±10%\n"
      "network delay=300us+-50us min=40us\n"
      "\n"
      "tracelet web instances=20 think=1s..3s   # trailing comment\n"
      "  client -> WS1|WS2 delay=0 proc=2ms±0.5ms weight=3\n"
      "    -> AUTH delay=1ms±200us proc=5ms parallel\n"
      "    WS1|WS2 -> AP delay=1.5ms proc=10ms±3ms\n"
      "      -> DB proc=20ms\n"
      "  client -> WS1\n"
      "tracelet mail style=message rate=30/min\n"
      "  a -> b\n"
      "    -> c delay=10s±1s\n",
      "dir/x.conf");
  ASSERT_TRUE(c.ok()) << c.status().message();
  EXPECT_EQ(c->name, "x.conf");
  EXPECT_EQ(c->start_ns, 1047680084500000000);
  EXPECT_DOUBLE_EQ(c->duration_ns, 600e9);
  EXPECT_EQ(c->callids, CallidMode::kReuse);
  EXPECT_EQ(c->callid_reuse, 16u);
  EXPECT_DOUBLE_EQ(c->loss_probability, 0.01);
  EXPECT_DOUBLE_EQ(c->sniffer_rate_per_s, 600);
  EXPECT_EQ(c->sniffer_queue, 64u);
  EXPECT_DOUBLE_EQ(c->oneway_rate_per_s, 2);
  EXPECT_EQ(c->oneway_nodes, (std::vector<std::string>{"A", "B"}));
  EXPECT_DOUBLE_EQ(c->timeout_probability, 0.001);
  EXPECT_DOUBLE_EQ(c->duplicate_probability, 0.002);
  EXPECT_DOUBLE_EQ(c->duplicate_after.mean_ns, 1e9);
  EXPECT_DOUBLE_EQ(c->duplicate_after.sd_ns, 1e8);
  EXPECT_DOUBLE_EQ(c->network.mean_ns, 300e3);
  EXPECT_DOUBLE_EQ(c->network.sd_ns, 50e3);
  EXPECT_DOUBLE_EQ(c->network_min_ns, 40e3);
  ASSERT_EQ(c->tracelets.size(), 2u);
  const Tracelet& web = c->tracelets[0];
  EXPECT_EQ(web.instances, 20u);
  EXPECT_DOUBLE_EQ(web.think_min_ns, 1e9);
  EXPECT_DOUBLE_EQ(web.think_max_ns, 3e9);
  ASSERT_EQ(web.roots.size(), 2u);
  const Step& r = web.roots[0];
  EXPECT_EQ(r.caller_pool, (std::vector<std::string>{"client"}));
  EXPECT_EQ(r.callee_pool, (std::vector<std::string>{"WS1", "WS2"}));
  EXPECT_DOUBLE_EQ(r.weight, 3);
  EXPECT_DOUBLE_EQ(r.proc.mean_ns, 2e6);
  EXPECT_DOUBLE_EQ(r.proc.sd_ns, 0.5e6);
  ASSERT_EQ(r.children.size(), 2u);
  EXPECT_TRUE(r.children[0].parallel);
  EXPECT_DOUBLE_EQ(r.children[0].delay.sd_ns, 200e3);
  EXPECT_FALSE(r.children[1].parallel);
  ASSERT_EQ(r.children[1].children.size(), 1u);
  EXPECT_EQ(r.children[1].children[0].callee_text, "DB");
  EXPECT_DOUBLE_EQ(r.children[1].children[0].proc.mean_ns, 20e6);
  const Tracelet& mail = c->tracelets[1];
  EXPECT_EQ(mail.style, TraceletStyle::kMessage);
  EXPECT_DOUBLE_EQ(mail.rate_per_s, 0.5);
  EXPECT_DOUBLE_EQ(mail.roots[0].children[0].delay.mean_ns, 10e9);
}

TEST(ConfigTest, ErrorsNameTheLineAndWhatWasExpected) {
  const std::string head = "duration 1s\ntracelet t\n";
  EXPECT_EQ(ErrorOf("duration 1s\nbogus 3\n"),
            "t.conf:2: unknown keyword 'bogus' (expected tracelet, duration, "
            "messages, start, callids, loss, sniffer, noise or network)");
  EXPECT_EQ(ErrorOf("duration 10\n"),
            "t.conf:1: duration: expected a duration with a unit (ns, us, ms, "
            "s, min, h) like 10ms, not '10'");
  EXPECT_EQ(ErrorOf(head + "  a -> b proc=-3ms\n"),
            "t.conf:3: proc=: expected a non-negative duration like 10ms, "
            "200us or 1.5s, not '-3ms'");
  EXPECT_EQ(ErrorOf(head + "  a -> b\n      -> c\n     -> d\n"),
            "t.conf:5: indentation does not line up with any enclosing line");
  EXPECT_EQ(ErrorOf(head + "  a -> b\n    x -> c\n"),
            "t.conf:4: caller 'x' does not match the enclosing step's callee "
            "'b' (write '-> c' or 'b -> c')");
  EXPECT_EQ(ErrorOf(head + "\ta -> b\n"),
            "t.conf:3: tab in indentation (indent with spaces)");
  EXPECT_EQ(ErrorOf(head + "  a b\n"),
            "t.conf:3: expected 'CALLER -> CALLEE [delay=D±SD] [proc=D±SD] "
            "[parallel] [after-return] [op=OP] [weight=W]', not 'a b'");
  EXPECT_EQ(ErrorOf(head + "  a -> b fast\n"),
            "t.conf:3: unknown step setting 'fast' (expected delay=D±SD, "
            "proc=D±SD, parallel, after-return, op=OP, or weight=W)");
  EXPECT_EQ(ErrorOf(head + "tracelet u\n  a -> b\n"),
            "t.conf:2: tracelet 't' has no steps (expected indented lines "
            "'CALLER -> CALLEE ...' under it)");
  EXPECT_EQ(ErrorOf("tracelet t\n  a -> b\n"),
            "t.conf: no length (expected 'duration D' or 'messages N', or "
            "--duration/--messages)");
  EXPECT_EQ(ErrorOf("duration 1s\n"),
            "t.conf: no tracelet (expected at least one 'tracelet NAME' "
            "block)");
  EXPECT_EQ(ErrorOf("duration 1s\n  a -> b\n"),
            "t.conf:2: indented line outside a tracelet (expected a "
            "'tracelet NAME' line before it)");
  EXPECT_EQ(ErrorOf("duration 1s\ntracelet t style=message\n  a -> b "
                    "proc=1ms\n"),
            "t.conf:3: proc= is for rpc tracelets (messages have no return); "
            "use delay= on the next hop");
  EXPECT_EQ(ErrorOf("duration 1s\ntracelet t rate=5/s instances=3\n  a -> b\n"),
            "t.conf:2: tracelet: rate= (open arrivals) cannot be combined "
            "with instances= or think= (closed-loop clients)");
  EXPECT_EQ(ErrorOf(head + "  a -> b(1)\n"),
            "t.conf:3: node name 'b(1)' contains reserved character '(' in "
            "'b(1)' (expected node names separated by '|')");
  EXPECT_EQ(ErrorOf("sniffer rate=600/s\n"),
            "t.conf:1: sniffer: expected both rate=R/s and queue=N");
  EXPECT_EQ(ErrorOf("loss 120%\n"),
            "t.conf:1: loss: expected a loss probability like 0.01 or 1%, not "
            "'120%'");
  EXPECT_EQ(ErrorOf(head + "  a -> b delay=300h\n"),
            "t.conf:3: delay=: '300h' is too long for a delay (at most 1e15 "
            "ns, about 11 days)");
  EXPECT_EQ(ErrorOf("duration 10000000h\n"),
            "t.conf:1: duration: '10000000h' is too long (at most 1e17 ns, "
            "about 3 years)");
  EXPECT_EQ(ErrorOf("tracelet t think=3s..1s\n"),
            "t.conf:1: tracelet: think=MIN..MAX needs MIN <= MAX");
}

TEST(ConfigTest, LengthMayComeFromTheCommandLine) {
  EXPECT_TRUE(ParseConfig("tracelet t\n  a -> b\n", "t.conf", false).ok());
}

TEST(ConfigTest, DurationUnits) {
  double ns = -1;
  EXPECT_EQ(ParseDuration("200us", &ns), "");
  EXPECT_DOUBLE_EQ(ns, 200e3);
  EXPECT_EQ(ParseDuration("1.5s", &ns), "");
  EXPECT_DOUBLE_EQ(ns, 1.5e9);
  EXPECT_EQ(ParseDuration("2h", &ns), "");
  EXPECT_DOUBLE_EQ(ns, 7200e9);
  EXPECT_EQ(ParseDuration("7ns", &ns), "");
  EXPECT_DOUBLE_EQ(ns, 7);
  EXPECT_EQ(ParseDuration("0", &ns), "");
  EXPECT_DOUBLE_EQ(ns, 0);
  EXPECT_NE(ParseDuration("5", &ns), "");
  EXPECT_NE(ParseDuration("ms", &ns), "");
  EXPECT_NE(ParseDuration("3parsecs", &ns), "");
}

TEST(ConfigTest, OperationsAndClients) {
  Result<Config> c = ParseConfig(
      "duration 1s\n"
      "tracelet t clients=50\n"
      "  client -> web op=http:GET:/item/{n}\n"
      "    -> db op=pg:SELECT:items\n"
      "    -> cache\n",
      "t.conf");
  ASSERT_TRUE(c.ok()) << c.status().message();
  EXPECT_EQ(c->tracelets[0].clients, 50u);
  const Step& root = c->tracelets[0].roots[0];
  EXPECT_EQ(root.op, "http:GET:/item/{n}");
  EXPECT_EQ(root.children[0].op, "pg:SELECT:items");
  EXPECT_EQ(root.children[1].op, "");
  EXPECT_EQ(ErrorOf("duration 1s\ntracelet t\n  a -> b op=x(y)\n"),
            "t.conf:3: op=: op contains whitespace, a control byte or one of "
            "'( ) , ;' (byte 0x28) in 'x(y)'");
  EXPECT_EQ(ErrorOf("duration 1s\ntracelet t\n  a -> b op=-\n"),
            "t.conf:3: op=: '-' is the absent op, not an op in '-'");
  EXPECT_EQ(
      ErrorOf("duration 1s\ntracelet t style=message\n  a -> b op=x\n"),
      "t.conf:3: op= is for rpc tracelets (an operation names what a call "
      "asks for)");
  EXPECT_EQ(
      ErrorOf("duration 1s\ntracelet t clients=0\n  a -> b\n"),
      "t.conf:2: tracelet: clients= expects a count from 1 to 65534, not '0'");
  EXPECT_EQ(ErrorOf("duration 1s\ntracelet t clients=70000\n  a -> b\n"),
            "t.conf:2: tracelet: clients= expects a count from 1 to 65534, not "
            "'70000'");
}

}  // namespace
}  // namespace bbprof::maketrace
