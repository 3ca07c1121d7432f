#include "base/interrupt.h"

#include <fcntl.h>
#include <poll.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <csignal>
#include <cstring>

namespace bbprof {

namespace {

// The registry is read by the signal handler, so it is made of pieces the
// handler can walk at any moment: chunks that, once published, never move or
// go away, and entries whose path is only read while `live` is set. Paths are
// stored as C strings ahead of time: the handler only calls unlink.
constexpr int kChunkSize = 64;
constexpr int kChunks = 256;  // up to 16384 temporary files open at once

struct Entry {
  std::atomic<bool> live{false};
  char* path = nullptr;  // owned; replaced only while !live
  size_t capacity = 0;
};
struct Chunk {
  Entry entries[kChunkSize];
};
std::atomic<Chunk*> g_chunks[kChunks];

volatile std::sig_atomic_t g_graceful = 0;
volatile std::sig_atomic_t g_requested = 0;
void (*volatile g_notify)() = nullptr;
int g_wake_read = -1;
int g_wake_write = -1;
char g_message[256] = "bbprof: interrupted\n";
size_t g_message_len = std::strlen(g_message);

void RemoveTempFiles() {
  for (int c = 0; c < kChunks; ++c) {
    Chunk* chunk = g_chunks[c].load();
    if (chunk == nullptr) break;
    for (Entry& e : chunk->entries) {
      if (e.live.load()) ::unlink(e.path);
    }
  }
}

void OnInterrupt(int /*sig*/) {
  int saved_errno = errno;
  if (g_graceful && !g_requested) {
    g_requested = 1;
    if (g_wake_write >= 0) {
      ssize_t n = ::write(g_wake_write, "!", 1);
      (void)n;  // the pipe is non-blocking; one byte is enough to wake
    }
    if (void (*notify)() = g_notify) notify();
    errno = saved_errno;
    return;
  }
  RemoveTempFiles();
  ssize_t n = ::write(STDERR_FILENO, g_message, g_message_len);
  (void)n;
  _exit(130);
}

}  // namespace

void InstallInterruptHandlers(const std::string& program) {
  std::string msg = program + ": interrupted\n";
  if (msg.size() < sizeof g_message) {
    std::memcpy(g_message, msg.data(), msg.size());
    g_message_len = msg.size();
  }
  if (g_wake_read < 0) {
    int fds[2];
    if (::pipe2(fds, O_CLOEXEC | O_NONBLOCK) == 0) {
      g_wake_read = fds[0];
      g_wake_write = fds[1];
    }
  }
  struct sigaction sa {};
  sa.sa_handler = &OnInterrupt;
  sigemptyset(&sa.sa_mask);
  sigaddset(&sa.sa_mask, SIGINT);
  sigaddset(&sa.sa_mask, SIGTERM);
  sa.sa_flags = 0;  // no SA_RESTART: a blocking call returns to its loop
  sigaction(SIGINT, &sa, nullptr);
  sigaction(SIGTERM, &sa, nullptr);
}

void SetGracefulInterrupts(void (*notify)()) {
  g_notify = notify;
  g_graceful = 1;
}

bool InterruptRequested() { return g_requested != 0; }

bool WaitReadable(int fd) {
  if (g_wake_read < 0) return true;
  for (;;) {
    if (g_requested) return false;
    struct pollfd p[2] = {{fd, POLLIN, 0}, {g_wake_read, POLLIN, 0}};
    int rc = ::poll(p, 2, -1);
    if (rc < 0) {
      if (errno == EINTR) continue;
      return true;  // let the read itself report the problem
    }
    if (g_requested) return false;
    if (p[0].revents != 0) return true;
  }
}

int RegisterTempFile(const std::string& path) {
  for (int c = 0; c < kChunks; ++c) {
    Chunk* chunk = g_chunks[c].load();
    if (chunk == nullptr) {
      chunk = new Chunk();
      g_chunks[c].store(chunk);
    }
    for (int i = 0; i < kChunkSize; ++i) {
      Entry& e = chunk->entries[i];
      if (e.live.load()) continue;
      if (e.capacity < path.size() + 1) {
        delete[] e.path;
        e.capacity = path.size() + 1;
        e.path = new char[e.capacity];
      }
      std::memcpy(e.path, path.c_str(), path.size() + 1);
      e.live.store(true);
      return c * kChunkSize + i;
    }
  }
  return -1;
}

void UnregisterTempFile(int handle) {
  if (handle < 0 || handle >= kChunks * kChunkSize) return;
  Chunk* chunk = g_chunks[handle / kChunkSize].load();
  if (chunk != nullptr) chunk->entries[handle % kChunkSize].live.store(false);
}

}  // namespace bbprof
