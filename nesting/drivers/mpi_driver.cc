#include "nesting/drivers/mpi_driver.h"

#include <mpi.h>

#include <algorithm>
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

// One message of a spool's (RequestSpool::SendTo) to rank 0: its length,
// then its bytes in pieces an int can count.
constexpr int kRequestsTag = 17;
constexpr size_t kPiece = size_t{1} << 30;
Status SendMessage(const std::string& m) {
  uint64_t size = m.size();
  MPI_Send(&size, 1, MPI_UINT64_T, 0, kRequestsTag, MPI_COMM_WORLD);
  for (size_t at = 0; at < m.size(); at += kPiece) {
    const int n = static_cast<int>(std::min(kPiece, m.size() - at));
    MPI_Send(m.data() + at, n, MPI_CHAR, 0, kRequestsTag, MPI_COMM_WORLD);
  }
  return Status::Ok();
}
std::string ReceiveMessage(int from) {
  uint64_t size = 0;
  MPI_Recv(&size, 1, MPI_UINT64_T, from, kRequestsTag, MPI_COMM_WORLD,
           MPI_STATUS_IGNORE);
  std::string m(size, '\0');
  for (size_t at = 0; at < m.size(); at += kPiece) {
    const int n = static_cast<int>(std::min(kPiece, m.size() - at));
    MPI_Recv(m.data() + at, n, MPI_CHAR, from, kRequestsTag, MPI_COMM_WORLD,
             MPI_STATUS_IGNORE);
  }
  return m;
}
// Rank 0: every other rank's spooled requests into its own spool. A rank
// that failed to send said so in its last message.
Status ReceiveRequests(RequestSpool* spool, int ranks) {
  Status first = Status::Ok();
  for (int from = 1; from < ranks; ++from) {
    Status s = spool->ReceiveFrom(
        [from]() -> Result<std::string> { return ReceiveMessage(from); });
    if (!s.ok() && first.ok()) first = s;
  }
  return first;
}

}  // namespace

bool MpiLaunched() {
  return EnvInt("OMPI_COMM_WORLD_SIZE") > 1 || EnvInt("PMI_SIZE") > 1 ||
         EnvInt("PMIX_SIZE") > 1;
}

Result<NestingResult> RunNestingMpi(trace::TraceReader& reader,
                                    const Params& params, StreamOptions options,
                                    StreamReport* report, int* rank,
                                    const Status& spool_ready) {
  StartMpi();
  int r = 0, n = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &r);
  MPI_Comm_size(MPI_COMM_WORLD, &n);
  *rank = r;
  if (options.requests != nullptr) {
    int ready = spool_ready.ok() ? 1 : 0, all_ready = 0;
    MPI_Allreduce(&ready, &all_ready, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
    if (!spool_ready.ok()) return spool_ready;
    if (!all_ready) {
      return Status::Error(
          "nest: another rank could not make its requests' spool file (set "
          "TMPDIR to a writable folder on every machine)");
    }
  }
  options.rank = r;
  options.ranks = n;
  options.gather = [r, n](const StreamOptions::Parts& mine) {
    return Gather(mine, r, n);
  };
  Result<NestingResult> result =
      RunNestingStream(reader, params, options, report);
  if (options.requests == nullptr) return result;
  // The requests: each rank spooled its own segments' on its own machine;
  // rank 0 takes the others' in turn, once every rank has nested (a
  // failed one ends the run as the gather above said).
  int ok = result.ok() ? 1 : 0, all_ok = 0;
  MPI_Allreduce(&ok, &all_ok, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
  if (!all_ok)
    return result.ok() ? Status::Error("nest: a rank failed") : result;
  Status s = r == 0 ? ReceiveRequests(options.requests, n)
                    : options.requests->SendTo(
                          [](const std::string& m) { return SendMessage(m); });
  if (!s.ok()) return s;
  return result;
}

}  // namespace bbprof::nesting
