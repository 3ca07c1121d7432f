// maketrace_generator_bench CONFIG [MESSAGES]: the generator alone (no
// formatting, no writing), in messages per second, so its cost can be told
// apart from the trace writer's. Built with -DBBPROF_BUILD_BENCHMARKS=ON
// (the release preset); run by bench/maketrace_bench.sh.
#include <chrono>
#include <cinttypes>
#include <cstdio>
#include <cstdlib>

#include "maketrace/config.h"
#include "maketrace/generator.h"

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: %s CONFIG [MESSAGES]\n", argv[0]);
    return 2;
  }
  auto config = bbprof::maketrace::LoadConfig(argv[1]);
  if (!config.ok()) {
    std::fprintf(stderr, "%s\n", config.status().message().c_str());
    return 1;
  }
  const uint64_t messages =
      argc > 2 ? std::strtoull(argv[2], nullptr, 10) : 5'000'000;
  bbprof::trace::NodeTable nodes;
  bbprof::maketrace::Generator gen(*config, 1, &nodes, 0, messages);
  bbprof::maketrace::Message m;
  uint64_t n = 0, checksum = 0;
  const auto t0 = std::chrono::steady_clock::now();
  while (gen.Next(&m)) {
    ++n;
    checksum += static_cast<uint64_t>(m.ts_ns) ^ m.pathid;
  }
  const double s =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0)
          .count();
  std::printf("generator only: %" PRIu64 " messages in %.3f s = %.2f M msg/s "
              "(checksum %" PRIx64 ")\n",
              n, s, static_cast<double>(n) / s / 1e6, checksum);
  return 0;
}
