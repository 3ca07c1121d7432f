// PassTimings: the wall and CPU time each pass of a run took, for `nest
// --timings` (docs/cli.md). A pass is named by its driver as it ends (Lap);
// laps with the same name add up (the stream driver's segments each run
// every pass), and the names keep the order they were first met. Laps may
// come from several threads at once (segments nested side by side), so
// adding takes a lock: a few dozen laps a run, never a hot path.
//
// Why in the tool: the per-pass tables of docs/benchmarks.md come from the
// released binary, not from timers patched into a local build. The CPU
// time is the process's
// (user and system, every thread), so a pass's CPU over its wall time is
// how many cores it kept busy, and its CPU on two threads over its CPU on
// one is what the parallel version costs beyond the work itself
// (docs/benchmarks.md, "Where two threads lose"). That reading holds only
// while one pass runs at a time: a driver that runs anything beside its
// passes (the stream driver's reader and its segments side by side) says
// so (SharedProcess), and its CPU column is left out. (The in-memory
// passes end with their helper threads joined, which the kernel has then
// counted in full; a thread still running is read as of its last
// scheduler tick, a few milliseconds late.)
#ifndef BBPROF_BASE_PASS_TIMINGS_H_
#define BBPROF_BASE_PASS_TIMINGS_H_

#include <sys/resource.h>

#include <chrono>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

namespace bbprof {

struct PassTime {
  std::string name;
  double wall_s = 0;
  double cpu_s = 0;  // the process's, every thread's
};

class PassTimings {
 public:
  void Add(const std::string& pass, double wall_s, double cpu_s) {
    std::lock_guard lock(mu_);
    for (PassTime& p : passes_) {
      if (p.name == pass) {
        p.wall_s += wall_s;
        p.cpu_s += cpu_s;
        return;
      }
    }
    passes_.push_back({pass, wall_s, cpu_s});
  }
  // In the order first met.
  std::vector<PassTime> passes() const {
    std::lock_guard lock(mu_);
    return passes_;
  }
  // Called by a driver that runs work beside its passes: the process's CPU
  // time then is not theirs.
  void SharedProcess() {
    std::lock_guard lock(mu_);
    cpu_per_pass_ = false;
  }
  bool cpu_per_pass() const {
    std::lock_guard lock(mu_);
    return cpu_per_pass_;
  }

 private:
  mutable std::mutex mu_;
  std::vector<PassTime> passes_;
  bool cpu_per_pass_ = true;
};

// The process's CPU seconds so far (user and system, every thread, those
// that ended included).
inline double ProcessCpuSeconds() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return static_cast<double>(u.ru_utime.tv_sec + u.ru_stime.tv_sec) +
         1e-6 * static_cast<double>(u.ru_utime.tv_usec + u.ru_stime.tv_usec);
}

// Times the passes of one thread of a driver: each Lap(name) records the
// wall and CPU time since the previous lap (or since construction) under
// `name`. With no PassTimings it does nothing, not even read the clocks.
class PassClock {
 public:
  explicit PassClock(PassTimings* timings) : timings_(timings) {
    if (timings_ != nullptr) {
      last_ = std::chrono::steady_clock::now();
      last_cpu_ = ProcessCpuSeconds();
    }
  }
  void Lap(const char* name) {
    if (timings_ == nullptr) return;
    const auto now = std::chrono::steady_clock::now();
    const double cpu = ProcessCpuSeconds();
    timings_->Add(name, std::chrono::duration<double>(now - last_).count(),
                  cpu - last_cpu_);
    last_ = now;
    last_cpu_ = cpu;
  }

 private:
  PassTimings* timings_;
  std::chrono::steady_clock::time_point last_;
  double last_cpu_ = 0;
};

}  // namespace bbprof

#endif  // BBPROF_BASE_PASS_TIMINGS_H_
