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
#include <utility>
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

}  // namespace bbprof::nesting

#endif  // BBPROF_NESTING_WORKERS_H_
