// PassTimings: the wall time each pass of a run took, for `nest --timings`
// (docs/cli.md). A pass is named by its driver as it ends (Lap); laps with
// the same name add up (the stream driver's segments each run every pass),
// and the names keep the order they were first met. Laps may come from
// several threads at once (segments nested side by side), so adding takes a
// lock: a few dozen laps a run, never a hot path.
//
// Why in the tool: the per-pass tables of docs/benchmarks.md were measured
// with timers patched into a local build that was not kept; with this, the
// same table comes from the released binary.
#ifndef BBPROF_BASE_PASS_TIMINGS_H_
#define BBPROF_BASE_PASS_TIMINGS_H_

#include <chrono>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

namespace bbprof {

class PassTimings {
 public:
  void Add(const std::string& pass, double seconds) {
    std::lock_guard lock(mu_);
    for (auto& [name, total] : passes_) {
      if (name == pass) {
        total += seconds;
        return;
      }
    }
    passes_.emplace_back(pass, seconds);
  }
  // (name, seconds) in the order first met.
  std::vector<std::pair<std::string, double>> passes() const {
    std::lock_guard lock(mu_);
    return passes_;
  }

 private:
  mutable std::mutex mu_;
  std::vector<std::pair<std::string, double>> passes_;
};

// Times the passes of one thread of a driver: each Lap(name) records the
// time since the previous lap (or since construction) under `name`. With
// no PassTimings it does nothing, not even read the clock.
class PassClock {
 public:
  explicit PassClock(PassTimings* timings) : timings_(timings) {
    if (timings_ != nullptr) last_ = std::chrono::steady_clock::now();
  }
  void Lap(const char* name) {
    if (timings_ == nullptr) return;
    const auto now = std::chrono::steady_clock::now();
    timings_->Add(name, std::chrono::duration<double>(now - last_).count());
    last_ = now;
  }

 private:
  PassTimings* timings_;
  std::chrono::steady_clock::time_point last_;
};

}  // namespace bbprof

#endif  // BBPROF_BASE_PASS_TIMINGS_H_
