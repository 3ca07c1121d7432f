// Runs the parts of a pass on threads (Params::threads, `nest --threads`):
// the passes that split into parts with an exact merge (docs/nesting.md,
// "Passes and their state") hand each part to RunParts; the calling thread
// runs part 0, so one part costs no thread at all.
#ifndef BBPROF_NESTING_WORKERS_H_
#define BBPROF_NESTING_WORKERS_H_

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <thread>
#include <vector>

namespace bbprof::nesting {

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

}  // namespace bbprof::nesting

#endif  // BBPROF_NESTING_WORKERS_H_
