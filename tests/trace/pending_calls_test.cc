// The bounded table of calls waiting for their return: FIFO per
// key, eviction of the oldest past the limit, counted; nodes reused so
// memory follows the calls pending at once. Also the node-name limit of
// NodeTable, and both through ComputeStats.
#include "trace/pending_calls.h"

#include <gtest/gtest.h>

#include <deque>
#include <map>
#include <random>
#include <set>
#include <string>

#include "tests/util/temp_dir.h"
#include "trace/node_table.h"
#include "trace/reader.h"
#include "trace/stats.h"

namespace bbprof::trace {
namespace {

using bbprof::testing::TempDir;

std::string Key(NodeId a, NodeId b, std::string_view callid) {
  Record r;
  r.callid = callid;
  return std::string(PendingCallKey(a, b, r).view());
}

TEST(PendingCallsTest, RepeatedKeysAreFirstInFirstOut) {
  PendingCalls<int> p(0);
  int out = -1;
  EXPECT_FALSE(p.Add(Key(1, 2, "-"), 10, &out));
  EXPECT_FALSE(p.Add(Key(1, 2, "-"), 11, &out));
  EXPECT_FALSE(p.Add(Key(2, 1, "-"), 12, &out));  // the other direction
  ASSERT_TRUE(p.Take(Key(1, 2, "-"), &out));
  EXPECT_EQ(out, 10);
  ASSERT_TRUE(p.Take(Key(1, 2, "-"), &out));
  EXPECT_EQ(out, 11);
  EXPECT_FALSE(p.Take(Key(1, 2, "-"), &out));
  EXPECT_EQ(p.size(), 1u);
}

TEST(PendingCallsTest, NumericAndTextCallidsAreDifferentKeys) {
  Record r;
  r.callid_is_number = true;
  r.callid_number = 0x3d3d;  // the bytes of "==" would collide if untagged
  const std::string numeric(PendingCallKey(1, 2, r).view());
  EXPECT_NE(numeric, Key(1, 2, "=="));
}

// A numeric callid keeps only its significant bytes: keys stay short enough
// for the key table's entries to hold them in themselves (no allocation per
// pending call) and still tell every number, and every text, apart.
TEST(PendingCallsTest, NumericKeysAreShortAndDistinct) {
  std::set<std::string> keys;
  for (uint64_t v : {uint64_t{0}, uint64_t{1}, uint64_t{255}, uint64_t{256},
                     uint64_t{0x3d}, uint64_t{0x3d3d}, (uint64_t{1} << 48) - 1,
                     uint64_t{1} << 48, ~uint64_t{0}}) {
    Record r;
    r.callid_is_number = true;
    r.callid_number = v;
    const std::string k(PendingCallKey(1, 2, r).view());
    if (v < (uint64_t{1} << 48)) {
      EXPECT_LE(k.size(), 15u) << v;
    }
    EXPECT_TRUE(keys.insert(k).second) << v;
  }
  for (std::string_view text : {"", "=", "0", "1", "==", "\x01"}) {
    EXPECT_TRUE(keys.insert(Key(1, 2, text)).second) << text;
  }
  // The same callid between other nodes, or the other way round, differs.
  EXPECT_TRUE(keys.insert(Key(2, 1, "1")).second);
  EXPECT_TRUE(keys.insert(Key(1, 3, "1")).second);
}

// The bytes themselves: caller, callee, the count of significant bytes,
// then those bytes low first; and one key object reused for numbers and
// text (as the pairer reuses it per record) gives what a fresh one gives.
TEST(PendingCallsTest, KeyBytesAndReuse) {
  Record num;
  num.callid_is_number = true;
  num.callid_number = 0x0A0B0C;
  const std::string want("\x07\0\0\0\x09\0\0\0\x03\x0C\x0B\x0A", 12);
  PendingCallKey k(7, 9, num);
  EXPECT_EQ(k.view(), want);
  Record text;
  text.callid = "q17";
  k.Set(7, 9, text);
  EXPECT_EQ(k.view(), Key(7, 9, "q17"));
  EXPECT_EQ(k.view(), std::string("\x07\0\0\0\x09\0\0\0=q17", 12));
  k.Set(7, 9, num);
  EXPECT_EQ(k.view(), want);
  num.callid_number = 0;
  k.Set(7, 9, num);
  EXPECT_EQ(k.view(), std::string("\x07\0\0\0\x09\0\0\0\0", 9));
}

// The key table under churn (keys added and emptied again and again:
// backward shifts, growing and shrinking, reused entries and long-key
// buffers), against a plain model: per key a FIFO, and every call in age
// order, the oldest evicted past the limit.
TEST(PendingCallsTest, ManyKeysComingAndGoingMatchAPlainModel) {
  for (uint64_t limit : {uint64_t{0}, uint64_t{50}}) {
    PendingCalls<int> p(limit);
    std::map<std::string, std::deque<int>> queues;
    std::deque<std::pair<std::string, int>> by_age;  // oldest first
    std::mt19937 rng(11);
    auto drop = [&](const std::string& key, int v) {
      auto& q = queues[key];
      ASSERT_FALSE(q.empty());
      ASSERT_EQ(q.front(), v);
      q.pop_front();
      if (q.empty()) queues.erase(key);
      for (auto it = by_age.begin(); it != by_age.end(); ++it) {
        if (it->second == v) {
          by_age.erase(it);
          break;
        }
      }
    };
    for (int step = 0; step < 300000; ++step) {
      // Small key space (repeats) early, a large one later (growth), then
      // few calls and many returns (the table shrinks back). From the
      // second phase on, every third callid is longer than an entry holds
      // in itself, of lengths that vary (its buffer is reused).
      const int space = step < 100000 ? 40 : 5000;
      const int adds = step < 200000 ? 5 : 2;
      const int id = std::uniform_int_distribution<>(0, space)(rng);
      std::string callid = std::to_string(id);
      if (step >= 100000 && id % 3 == 0) {
        callid += std::string(static_cast<size_t>(10 + id % 40), 'x');
      }
      const std::string key = Key(1, 2, callid);
      const int op = std::uniform_int_distribution<>(0, 9)(rng);
      if (op < adds) {
        int evicted = -1;
        const bool out = p.Add(key, step, &evicted);
        queues[key].push_back(step);
        by_age.emplace_back(key, step);
        ASSERT_EQ(out, limit != 0 && by_age.size() > limit) << step;
        if (out) {
          ASSERT_EQ(evicted, by_age.front().second) << step;
          drop(by_age.front().first, evicted);
        }
      } else if (op < 9) {
        int v = -1;
        const bool found = p.Take(key, &v);
        ASSERT_EQ(found, queues.count(key) == 1) << step;
        if (found) drop(key, v);
      } else {
        int v = -1;
        ASSERT_EQ(p.Oldest(&v), !by_age.empty());
        if (!by_age.empty()) {
          ASSERT_EQ(v, by_age.front().second);
          p.PopOldest();
          drop(by_age.front().first, v);
        }
      }
      ASSERT_EQ(p.size(), by_age.size()) << step;
    }
  }
}

// Past the limit the oldest pending call goes, whatever its key; a return
// for it then finds nothing (counted unmatched by the caller), and later
// calls still pair with their own returns.
TEST(PendingCallsTest, PastTheLimitTheOldestIsEvictedAndCounted) {
  PendingCalls<int> p(3);
  int out = -1;
  for (int i = 0; i < 3; ++i)
    EXPECT_FALSE(p.Add(Key(1, 2, std::to_string(i)), i, &out));
  ASSERT_TRUE(p.Take(Key(1, 2, "1"), &out));  // answered: no longer pending
  EXPECT_FALSE(p.Add(Key(1, 2, "3"), 3, &out));
  ASSERT_TRUE(p.Add(Key(1, 2, "4"), 4, &out));
  EXPECT_EQ(out, 0);  // the oldest still pending
  ASSERT_TRUE(p.Add(Key(1, 2, "5"), 5, &out));
  EXPECT_EQ(out, 2);
  EXPECT_EQ(p.evictions(), 2u);
  EXPECT_EQ(p.size(), 3u);
  EXPECT_FALSE(p.Take(Key(1, 2, "0"), &out));
  for (int i : {3, 4, 5}) {
    ASSERT_TRUE(p.Take(Key(1, 2, std::to_string(i)), &out));
    EXPECT_EQ(out, i);
  }
  EXPECT_EQ(p.size(), 0u);
}

// The oldest call of a repeated key is evicted from the front of its
// queue, so the next return of that key takes the next call, in order.
TEST(PendingCallsTest, EvictionKeepsARepeatedKeyInOrder) {
  PendingCalls<int> p(2);
  int out = -1;
  EXPECT_FALSE(p.Add(Key(1, 2, "-"), 1, &out));
  EXPECT_FALSE(p.Add(Key(1, 2, "-"), 2, &out));
  ASSERT_TRUE(p.Add(Key(1, 2, "-"), 3, &out));
  EXPECT_EQ(out, 1);
  ASSERT_TRUE(p.Take(Key(1, 2, "-"), &out));
  EXPECT_EQ(out, 2);
  ASSERT_TRUE(p.Take(Key(1, 2, "-"), &out));
  EXPECT_EQ(out, 3);
}

TEST(PendingCallsTest, OldestAndPopOldestExpireInAgeOrder) {
  PendingCalls<int> p(0);
  int out = -1;
  EXPECT_FALSE(p.Oldest(&out));
  p.Add(Key(1, 2, "x"), 1, &out);
  p.Add(Key(3, 4, "y"), 2, &out);
  p.Add(Key(1, 2, "x"), 3, &out);
  ASSERT_TRUE(p.Oldest(&out));
  EXPECT_EQ(out, 1);
  p.PopOldest();
  ASSERT_TRUE(p.Oldest(&out));
  EXPECT_EQ(out, 2);
  ASSERT_TRUE(p.Take(Key(1, 2, "x"), &out));
  EXPECT_EQ(out, 3);
  p.PopOldest();
  EXPECT_FALSE(p.Oldest(&out));
  EXPECT_EQ(p.size(), 0u);
}

TEST(NodeTableTest, PastTheLimitNewNamesFoldIntoTheOverflowNode) {
  NodeTable t;
  t.SetLimit(2);
  NodeId a = t.Intern("a"), b = t.Intern("b");
  NodeId c = t.Intern("c"), d = t.Intern("d");
  EXPECT_NE(a, b);
  EXPECT_EQ(c, d);
  EXPECT_TRUE(t.IsOverflow(c));
  EXPECT_EQ(t.Name(c), NodeTable::kOverflowName);
  EXPECT_EQ(t.Intern("a"), a);  // known names keep their ids
  EXPECT_EQ(t.size(), 3u);
  EXPECT_EQ(t.folded(), 2u);
  EXPECT_TRUE(CheckNodeName(NodeTable::kOverflowName).empty());
}

// A trace of calls that are never answered, and one of a thousand distinct
// clients, through stats with small limits: memory-bound tables, counted.
TEST(StatsLimitsTest, UnansweredCallsAndDistinctNamesAreBoundedAndCounted) {
  TempDir dir;
  std::string text;
  for (int i = 0; i < 1000; ++i) {
    text += std::to_string(i) + " CALL client" + std::to_string(i) +
            " server c" + std::to_string(i) + "\n";
  }
  text += "1000 RET server client999 c999\n";  // the newest is still pending
  text += "1001 RET server client0 c0\n";      // the oldest was evicted
  std::string p = dir.Write("s.trace", text);
  auto nodes = std::make_shared<NodeTable>();
  nodes->SetLimit(100);
  auto r = OpenTraceReader(p, nodes);
  ASSERT_TRUE(r.ok());
  StatsOptions opts;
  opts.max_pending_calls = 10;
  int warnings = 0;
  opts.on_limit = [&](std::string_view what) {
    ++warnings;
    EXPECT_NE(what.find("--max-pending-calls"), std::string_view::npos);
  };
  auto s = ComputeStats(**r, opts);
  ASSERT_TRUE(s.ok()) << s.status().message();
  EXPECT_EQ(warnings, 1);
  EXPECT_EQ(s->pending_calls_evicted, 990u);
  EXPECT_EQ(s->calls_without_return, 999u);
  EXPECT_EQ(s->returns_without_call, 1u);
  EXPECT_EQ(s->nodes.size(), 101u);  // 99 clients, the server, {other-nodes}
  EXPECT_EQ(s->node_names_folded, 902u);  // 901 calls, 1 return
  EXPECT_EQ(s->nodes.at(std::string(NodeTable::kOverflowName)).sent, 901u);
  EXPECT_NE(StatsToJson(*s).find("\"pending_calls_evicted\": 990"),
            std::string::npos);
}

}  // namespace
}  // namespace bbprof::trace
