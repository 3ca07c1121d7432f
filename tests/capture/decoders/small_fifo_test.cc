// The decoders' request queue: first in, first out across the compaction
// of its dead prefix, and dropping the oldest with erase, as a std::deque
// does.
#include "capture/decoders/small_fifo.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <deque>
#include <random>

namespace bbprof::capture {
namespace {

TEST(SmallFifoTest, BehavesAsADequeUnderRandomUse) {
  SmallFifo<uint32_t> fifo;
  std::deque<uint32_t> model;
  std::mt19937 rng(3);
  uint32_t next = 0;
  for (int step = 0; step < 20000; ++step) {
    const uint32_t op = rng() % 10;
    if (op < 6) {
      fifo.push_back(next);
      model.push_back(next++);
    } else if (op < 9 && !model.empty()) {
      ASSERT_EQ(fifo.front(), model.front());
      fifo.pop_front();
      model.pop_front();
    } else if (model.size() >
               1) {  // drop all but the newest, as on a lost response
      fifo.erase(fifo.begin(), fifo.end() - 1);
      model.erase(model.begin(), model.end() - 1);
    }
    ASSERT_EQ(fifo.size(), model.size());
    ASSERT_EQ(fifo.empty(), model.empty());
    if (!model.empty()) {
      ASSERT_EQ(fifo.front(), model.front());
    }
  }
}

}  // namespace
}  // namespace bbprof::capture
