// Runs the parts of a pass on threads (Params::threads, `nest --threads`):
// the passes that split into parts with an exact merge (docs/nesting.md,
// "Passes and their state") hand each part to RunParts; the calling thread
// runs part 0, so one part costs no thread at all.
#ifndef BBPROF_NESTING_WORKERS_H_
#define BBPROF_NESTING_WORKERS_H_

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

}  // namespace bbprof::nesting

#endif  // BBPROF_NESTING_WORKERS_H_
