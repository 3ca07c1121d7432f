// Progress: a one-line progress indicator on standard error, shown only when
// standard error is a terminal and the user did not ask for --quiet, and only
// for work that has already run a couple of seconds, so short runs and
// pipelines stay silent.
#ifndef BBPROF_BASE_PROGRESS_H_
#define BBPROF_BASE_PROGRESS_H_

#include <chrono>
#include <cstdint>
#include <string>

namespace bbprof {

class Progress {
 public:
  // `what` names the work ("reading trace"); `total` may be 0 if unknown.
  Progress(std::string what, uint64_t total, bool quiet);
  ~Progress();
  Progress(const Progress&) = delete;
  Progress& operator=(const Progress&) = delete;

  // Cheap to call often: it looks at the clock only every 64 Ki updates.
  void Update(uint64_t done) {
    UpdateLazily([done] { return done; });
  }
  // The same for a count that costs something to read (a reader's bytes,
  // two virtual calls deep, too dear to read per record): `done()` is
  // called only when the clock is looked at.
  template <typename Done>
  void UpdateLazily(Done&& done) {
    if (!enabled_ || (++calls_ & 0xFFFF) != 0) return;
    MaybeDraw(done());
  }
  void Finish();

  // Global switch set by --quiet in the CLI.
  static void SetQuiet(bool quiet);
  static bool quiet();

 private:
  void MaybeDraw(uint64_t done);
  std::string what_;
  uint64_t total_;
  bool enabled_;
  bool drawn_ = false;
  uint64_t calls_ = 0;
  std::chrono::steady_clock::time_point start_;
  std::chrono::steady_clock::time_point last_draw_;
};

}  // namespace bbprof

#endif  // BBPROF_BASE_PROGRESS_H_
