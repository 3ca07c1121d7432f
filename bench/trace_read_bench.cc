// trace_read_bench FILE...: how fast the trace readers hand out records, with
// nothing else done per record (docs/benchmarks.md, "Trace I/O": text
// lines/s, binary records/s). Prints records, seconds and records per
// second per file.
//   trace_read_bench [--numeric-ids] TRACE...
#include <chrono>
#include <cstdio>
#include <string_view>

#include "trace/reader.h"

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: trace_read_bench TRACE...\n");
    return 2;
  }
  // --numeric-ids: numeric callids/pathids as numbers (what nest and convert
  // ask for), not formatted to text.
  bool numeric = false;
  for (int i = 1; i < argc; ++i) {
    if (std::string_view(argv[i]) == "--numeric-ids") {
      numeric = true;
      continue;
    }
    auto start = std::chrono::steady_clock::now();
    bbprof::trace::ReaderOptions options;
    options.numeric_ids = numeric;
    auto reader = bbprof::trace::OpenTraceReader(argv[i], nullptr, options);
    if (!reader.ok()) {
      std::fprintf(stderr, "%s\n", reader.status().message().c_str());
      return 1;
    }
    bbprof::trace::Record rec;
    uint64_t n = 0, check = 0;
    while ((*reader)->Next(rec)) {
      ++n;
      check += static_cast<uint64_t>(rec.ts_ns) ^ rec.sender ^ rec.callid.size() ^
               rec.callid_number;
    }
    if (!(*reader)->status().ok()) {
      std::fprintf(stderr, "%s\n", (*reader)->status().message().c_str());
      return 1;
    }
    double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    std::printf("%s%s: %llu records in %.3f s = %.2f M records/s (check %llu)\n", argv[i],
                numeric ? " (numeric ids)" : "",
                static_cast<unsigned long long>(n), s, n / s / 1e6,
                static_cast<unsigned long long>(check & 0xff));
  }
  return 0;
}
