#include "capture/reorder_buffer.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace bbprof::capture {
namespace {

struct Sink {
  std::vector<std::pair<trace::TimeNs, std::string>> got;
  ReorderBuffer::Output fn() {
    return [this](const trace::Record& r) {
      got.emplace_back(r.ts_ns, r.callid_is_number ? std::to_string(r.callid_number)
                                                   : std::string(r.callid));
      return Status::Ok();
    };
  }
};

CapturedRecord Rec(trace::TimeNs ts, uint64_t callid) {
  CapturedRecord r;
  r.ts = ts;
  r.has_callid = true;
  r.callid = callid;
  return r;
}

TEST(ReorderBufferTest, ReleasesInTimeOrderOnceTheWindowHasPassed) {
  Sink s;
  ReorderBuffer b(100, s.fn());
  b.Push(Rec(50, 1));
  b.Push(Rec(10, 2));
  b.Push(Rec(10, 3));  // equal times keep arrival order
  ASSERT_TRUE(b.Release(100).ok());
  EXPECT_TRUE(s.got.empty());
  ASSERT_TRUE(b.Release(115).ok());
  ASSERT_EQ(s.got.size(), 2u);
  EXPECT_EQ(s.got[0].second, "2");
  EXPECT_EQ(s.got[1].second, "3");
  ASSERT_TRUE(b.Flush().ok());
  ASSERT_EQ(s.got.size(), 3u);
  EXPECT_EQ(s.got[2], std::make_pair(trace::TimeNs{50}, std::string("1")));
}

TEST(ReorderBufferTest, ALateRecordIsKeptAtTheLastWrittenTimeAndCounted) {
  Sink s;
  ReorderBuffer b(10, s.fn());
  b.Push(Rec(100, 1));
  ASSERT_TRUE(b.Release(200).ok());
  b.Push(Rec(40, (uint64_t{5} << 32) | 9));
  ASSERT_TRUE(b.Flush().ok());
  ASSERT_EQ(s.got.size(), 2u);
  EXPECT_EQ(s.got[1].first, 100);
  EXPECT_EQ(s.got[1].second, std::to_string((uint64_t{5} << 32) | 9));
  EXPECT_EQ(b.late_records(), 1u);
}

TEST(ReorderBufferTest, RecordsWithoutCallidHaveAnEmptyOne) {
  Sink s;
  ReorderBuffer b(0, s.fn());
  CapturedRecord r;
  r.ts = 5;
  b.Push(r);
  ASSERT_TRUE(b.Flush().ok());
  ASSERT_EQ(s.got.size(), 1u);
  EXPECT_EQ(s.got[0].second, "");
}

TEST(ReorderBufferTest, AWriteErrorStopsRelease) {
  ReorderBuffer b(0, [](const trace::Record&) { return Status::Error("disk full"); });
  b.Push(Rec(1, 1));
  Status st = b.Flush();
  EXPECT_FALSE(st.ok());
  EXPECT_EQ(st.message(), "disk full");
}

}  // namespace
}  // namespace bbprof::capture
