#include "nesting/mpi_driver.h"

#include <mpi.h>

#include <climits>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>
#include <utility>
#include <vector>

namespace bbprof::nesting {

namespace {

int EnvInt(const char* name) {
  const char* v = std::getenv(name);
  return v != nullptr ? std::atoi(v) : 0;
}

void StartMpi() {
  static bool started = false;
  if (started) return;
  started = true;
  // The stream driver's worker threads never call MPI; only the thread
  // that started it does.
  int provided = 0;
  MPI_Init_thread(nullptr, nullptr, MPI_THREAD_FUNNELED, &provided);
  std::atexit([] {
    int finalized = 0;
    MPI_Finalized(&finalized);
    if (!finalized) MPI_Finalize();
  });
}

void PutU64(uint64_t v, std::string* out) {
  char b[8];
  std::memcpy(b, &v, 8);
  out->append(b, 8);
}
uint64_t GetU64(const char* p) {
  uint64_t v;
  std::memcpy(&v, p, 8);
  return v;
}

// Every rank's parts to rank 0: their byte counts first, then the bytes.
Result<StreamOptions::Parts> Gather(const StreamOptions::Parts& mine,
                                    int rank, int ranks) {
  std::string buf;
  for (const auto& [k, bytes] : mine) {
    PutU64(k, &buf);
    PutU64(bytes.size(), &buf);
    buf += bytes;
  }
  if (buf.size() > static_cast<size_t>(INT_MAX)) {
    return Status::Error("nest: a rank's segments' results exceed 2 GB");
  }
  int size = static_cast<int>(buf.size());
  std::vector<int> sizes(rank == 0 ? static_cast<size_t>(ranks) : 0);
  MPI_Gather(&size, 1, MPI_INT, sizes.data(), 1, MPI_INT, 0, MPI_COMM_WORLD);
  std::vector<int> displs(sizes.size());
  std::string all;
  if (rank == 0) {
    int64_t total = 0;
    for (size_t r = 0; r < sizes.size(); ++r) {
      displs[r] = static_cast<int>(total);
      total += sizes[r];
      if (total > INT_MAX) {
        return Status::Error("nest: the ranks' results exceed 2 GB");
      }
    }
    all.resize(static_cast<size_t>(total));
  }
  MPI_Gatherv(buf.data(), size, MPI_CHAR, all.data(), sizes.data(),
              displs.data(), MPI_CHAR, 0, MPI_COMM_WORLD);
  StreamOptions::Parts parts;
  for (size_t at = 0; at + 16 <= all.size();) {
    const uint64_t k = GetU64(all.data() + at);
    const uint64_t n = GetU64(all.data() + at + 8);
    at += 16;
    parts.emplace_back(k, all.substr(at, n));
    at += n;
  }
  return parts;
}

}  // namespace

bool MpiLaunched() {
  return EnvInt("OMPI_COMM_WORLD_SIZE") > 1 || EnvInt("PMI_SIZE") > 1 ||
         EnvInt("PMIX_SIZE") > 1;
}

Result<NestingResult> RunNestingMpi(trace::TraceReader& reader,
                                    const Params& params,
                                    StreamOptions options,
                                    StreamReport* report, int* rank) {
  StartMpi();
  int r = 0, n = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &r);
  MPI_Comm_size(MPI_COMM_WORLD, &n);
  *rank = r;
  options.rank = r;
  options.ranks = n;
  // Each rank's segments would spool on its own machine.
  options.requests = nullptr;
  options.gather = [r, n](const StreamOptions::Parts& mine) {
    return Gather(mine, r, n);
  };
  return RunNestingStream(reader, params, options, report);
}

}  // namespace bbprof::nesting
