#include "base/progress.h"

#include <unistd.h>

#include <cstdio>

namespace bbprof {

namespace {
bool g_quiet = false;
constexpr auto kDelayBeforeFirstDraw = std::chrono::seconds(2);
constexpr auto kRedrawInterval = std::chrono::milliseconds(250);
}  // namespace

void Progress::SetQuiet(bool quiet) { g_quiet = quiet; }
bool Progress::quiet() { return g_quiet; }

Progress::Progress(std::string what, uint64_t total, bool quiet)
    : what_(std::move(what)),
      total_(total),
      enabled_(!quiet && !g_quiet && isatty(STDERR_FILENO) == 1),
      start_(std::chrono::steady_clock::now()),
      last_draw_(start_) {}

Progress::~Progress() { Finish(); }

void Progress::MaybeDraw(uint64_t done) {
  auto now = std::chrono::steady_clock::now();
  if (now - start_ < kDelayBeforeFirstDraw) return;
  if (drawn_ && now - last_draw_ < kRedrawInterval) return;
  last_draw_ = now;
  drawn_ = true;
  double secs = std::chrono::duration<double>(now - start_).count();
  if (total_ > 0) {
    std::fprintf(stderr, "\r%s: %5.1f%% (%llu of %llu) %.0fs ", what_.c_str(),
                 100.0 * static_cast<double>(done) / static_cast<double>(total_),
                 static_cast<unsigned long long>(done),
                 static_cast<unsigned long long>(total_), secs);
  } else {
    std::fprintf(stderr, "\r%s: %llu %.0fs ", what_.c_str(),
                 static_cast<unsigned long long>(done), secs);
  }
  std::fflush(stderr);
}

void Progress::Finish() {
  if (drawn_) {
    std::fprintf(stderr, "\r\033[K");
    std::fflush(stderr);
    drawn_ = false;
  }
  enabled_ = false;
}

}  // namespace bbprof
