// Runs the parts of a pass on threads (Params::threads, `nest --threads`):
// the passes that split into parts with an exact merge (docs/nesting.md,
// "Passes and their state") hand each part to RunParts; the calling thread
// runs part 0, so one part costs no thread at all.
#ifndef BBPROF_BASE_WORKERS_H_
#define BBPROF_BASE_WORKERS_H_

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <thread>
#include <utility>
#include <vector>

namespace bbprof {

template <class Fn>
void RunParts(int parts, Fn&& fn) {
  if (parts <= 1) {
    fn(0);
    return;
  }
  std::vector<std::thread> threads;
  threads.reserve(static_cast<size_t>(parts - 1));
  for (int t = 1; t < parts; ++t) threads.emplace_back([&fn, t] { fn(t); });
  fn(0);
  for (std::thread& th : threads) th.join();
}

// Runs `parts` parts on at most `threads` threads (the calling thread one of
// them), each thread taking the next part not yet taken. For parts whose
// results do not depend on which thread ran them or when (each writes only
// its own part's state): more parts than threads even out parts of unequal
// cost, and a core that another guest of the machine holds back (steal
// time) takes fewer of them instead of keeping the others waiting.
template <class Fn>
void RunPartsOn(int threads, int parts, Fn&& fn) {
  threads = std::max(1, std::min(threads, parts));
  if (threads == 1) {
    for (int p = 0; p < parts; ++p) fn(p);
    return;
  }
  std::atomic<int> next{0};
  RunParts(threads, [&](int) {
    for (int p; (p = next.fetch_add(1, std::memory_order_relaxed)) < parts;) {
      fn(p);
    }
  });
}

// For a walk over n items in ranges side by side: the number of ranges on
// `threads`, each of at least 65,536 items (a thread costs more than a
// short walk: 18-100 us to start on this project's test machines).
inline int RangeParts(int threads, size_t n) {
  return std::max(1, std::min<int>(threads, static_cast<int>(n / 65536 + 1)));
}

// Calls fn(part, begin, end) for each of `parts` equal ranges of [0, n),
// side by side (RunParts).
template <class Fn>
void RunRanges(int parts, size_t n, Fn&& fn) {
  RunParts(parts, [&](int part) {
    const auto p = static_cast<size_t>(part);
    fn(part, n * p / parts, n * (p + 1) / parts);
  });
}

// Walks [0, n) in chunks of `chunk` items on `threads` threads, and hands
// each chunk's output to `consume` on the calling thread, in chunk order:
// for a walk whose results are computed side by side but must be added up
// in the order of one walk (sums of fractions, whose order shows in the
// last bits). `chunks` chunks a thread make a stretch, walked at a time so
// that the outputs held stay bounded (two stretches'); the calling thread
// consumes each stretch while the threads, itself among them once it is
// done, walk the next, so the consuming keeps no thread waiting but at the
// end. walk(begin, end, Out&) fills a chunk's output, which it must clear
// first (outputs are reused); consume(const Out&).
template <class Out, class Walk, class Consume>
void WalkInChunksConsumeInOrder(int threads, size_t n, size_t chunk,
                                size_t chunks, Walk&& walk, Consume&& consume) {
  threads = std::max(1, threads);
  chunk = std::max<size_t>(1, chunk);
  const size_t stretch =
      chunk * std::max<size_t>(1, chunks) * static_cast<size_t>(threads);
  // Each chunk's output on cache lines of its own (their ends move).
  struct alignas(64) Slot {
    Out out;
  };
  std::vector<Slot> walked((stretch + chunk - 1) / chunk), held(walked.size());
  size_t to_consume = 0;  // the chunks of `held` walked
  auto consume_held = [&] {
    for (size_t c = 0; c < to_consume; ++c) consume(std::as_const(held[c].out));
    to_consume = 0;
  };
  for (size_t from = 0; from < n; from += stretch) {
    const size_t to = std::min(n, from + stretch);
    const size_t n_chunks = (to - from + chunk - 1) / chunk;
    std::atomic<size_t> next{0};
    RunParts(threads, [&](int part) {
      if (part == 0) consume_held();
      for (size_t c;
           (c = next.fetch_add(1, std::memory_order_relaxed)) < n_chunks;) {
        const size_t begin = from + chunk * c;
        walk(begin, std::min(to, begin + chunk), walked[c].out);
      }
    });
    std::swap(walked, held);
    to_consume = n_chunks;
  }
  consume_held();
}

// The items of a range not yet walked, [cur, end), as one atomic word, so
// that its walker claims them a few at a time while another thread may
// take the upper half of what is left (Split): every item is walked once,
// by one of the two.
class SplitRange {
 public:
  SplitRange(uint32_t begin, uint32_t end) : word_(Pack(begin, end)) {}

  // The next items, at most `grain` of them: [*begin, *end). False once
  // none is left.
  bool Claim(uint32_t grain, uint32_t* begin, uint32_t* end) {
    uint64_t v = word_.load(std::memory_order_relaxed);
    for (;;) {
      const uint32_t cur = Cur(v), stop = End(v);
      if (cur >= stop) return false;
      const uint32_t next = stop - cur > grain ? cur + grain : stop;
      if (word_.compare_exchange_weak(v, Pack(next, stop),
                                      std::memory_order_relaxed)) {
        *begin = cur;
        *end = next;
        return true;
      }
    }
  }

  // Takes the upper half of the items left, [*begin, *end), when at least
  // 2 x `least` are left; false (nothing taken) otherwise.
  bool Split(uint32_t least, uint32_t* begin, uint32_t* end) {
    uint64_t v = word_.load(std::memory_order_relaxed);
    for (;;) {
      const uint32_t cur = Cur(v), stop = End(v);
      if (cur >= stop || stop - cur < 2 * uint64_t{least}) return false;
      const uint32_t mid = cur + (stop - cur) / 2;
      if (word_.compare_exchange_weak(v, Pack(cur, mid),
                                      std::memory_order_relaxed)) {
        *begin = mid;
        *end = stop;
        return true;
      }
    }
  }

  uint32_t left() const {
    const uint64_t v = word_.load(std::memory_order_relaxed);
    return Cur(v) < End(v) ? End(v) - Cur(v) : 0;
  }

 private:
  static uint64_t Pack(uint32_t cur, uint32_t end) {
    return uint64_t{end} << 32 | cur;
  }
  static uint32_t Cur(uint64_t v) { return static_cast<uint32_t>(v); }
  static uint32_t End(uint64_t v) { return static_cast<uint32_t>(v >> 32); }

  std::atomic<uint64_t> word_;
};

// Walks [0, n) in ranges side by side on `threads` threads (the calling
// thread one of them), a State for each range, and returns the states in
// the order of their ranges, which are contiguous and cover [0, n): for a
// walk whose parts merge in index order (the pattern table, the timeline
// counts), with the part boundaries chosen as the walk goes rather than
// fixed. Each thread starts on an equal range; a thread done with its own
// takes the upper half of what is left of the range with the most left
// (when at least 2 x `least` items are), as a new range with a new State,
// and so on until none is left to take. Why: the threads of a shared
// machine do not run at one speed (another guest's steal time, the cache
// each part finds), and with fixed ranges the first thread done would
// wait for the other. A State depends only on its range's items
// (which thread walked them, and when, must not show), so the merged
// result is one walk's.
//
// walk(State&, SplitRange&, int thread) claims items with Claim until it
// returns false; `thread` (0 to threads - 1) picks the thread's scratch.
template <class State, class Walk>
std::vector<State> WalkSplittingRanges(int threads, uint32_t n, uint32_t least,
                                       Walk&& walk) {
  threads = std::max(1, threads);
  struct alignas(64) Range {
    Range(uint32_t b, uint32_t e) : begin(b), items(b, e) {}
    uint32_t begin;
    SplitRange items;
    State state;
  };
  std::mutex mu;
  std::vector<std::unique_ptr<Range>> ranges;
  const auto n_threads = static_cast<uint64_t>(threads);
  for (uint64_t t = 0; t < n_threads; ++t) {
    ranges.push_back(std::make_unique<Range>(
        static_cast<uint32_t>(n * t / n_threads),
        static_cast<uint32_t>(n * (t + 1) / n_threads)));
  }
  RunParts(threads, [&](int thread) {
    Range* mine;
    {
      std::lock_guard lock(mu);
      mine = ranges[static_cast<size_t>(thread)].get();
    }
    for (;;) {
      walk(mine->state, mine->items, thread);
      std::lock_guard lock(mu);
      Range* most = nullptr;
      for (const auto& r : ranges) {
        if (most == nullptr || r->items.left() > most->items.left()) {
          most = r.get();
        }
      }
      uint32_t begin, end;
      if (most == nullptr || !most->items.Split(least, &begin, &end)) return;
      ranges.push_back(std::make_unique<Range>(begin, end));
      mine = ranges.back().get();
    }
  });
  // (Ranges left empty from the start may share a begin: stable.)
  std::stable_sort(
      ranges.begin(), ranges.end(),
      [](const auto& a, const auto& b) { return a->begin < b->begin; });
  std::vector<State> states;
  states.reserve(ranges.size());
  for (auto& r : ranges) states.push_back(std::move(r->state));
  return states;
}

}  // namespace bbprof

#endif  // BBPROF_BASE_WORKERS_H_
