// A synthetic multi-tier-like trace for tests and benchmarks: clients call
// web servers, which call application servers, which call databases (the
// shape of the paper's multi-tier trace, section 6.3). Numeric callids, numeric
// pathids, exponential gaps averaging `mean_gap_ns` between messages.
// Deterministic for a given seed. Streams: memory does not grow with length.
#ifndef BBPROF_TESTS_TRACE_SYNTHETIC_TRACE_H_
#define BBPROF_TESTS_TRACE_SYNTHETIC_TRACE_H_

#include <cstdint>
#include <queue>
#include <random>
#include <string>
#include <vector>

#include "trace/record.h"

namespace bbprof::testing {

struct SyntheticMessage {
  trace::TimeNs ts_ns;
  trace::Kind kind;
  int sender, receiver;  // indexes into SyntheticTrace::names()
  uint64_t callid;
  uint64_t pathid;
};

class SyntheticTrace {
 public:
  explicit SyntheticTrace(uint64_t seed = 1, int64_t mean_gap_ns = 400'000)
      : rng_(seed), mean_gap_ns_(mean_gap_ns) {
    names_ = {"10.0.0.1:40001",
              "10.0.0.2:40002",
              "10.0.0.3:40003",
              "WS1",
              "WS2",
              "AS1",
              "AS2",
              "DB1",
              "DB2",
              "DB3"};
    next_request_ns_ = 1'700'000'000'000'000'000;
  }

  const std::vector<std::string>& names() const { return names_; }

  SyntheticMessage Next() {
    // Six messages per request: keep requests arriving at 1/6 of the rate.
    while (heap_.empty() || heap_.top().ts_ns > next_request_ns_) {
      AddRequest(next_request_ns_);
      next_request_ns_ += Exp(6 * mean_gap_ns_);
    }
    SyntheticMessage m = heap_.top();
    heap_.pop();
    return m;
  }

 private:
  struct Later {
    bool operator()(const SyntheticMessage& a,
                    const SyntheticMessage& b) const {
      if (a.ts_ns != b.ts_ns) return a.ts_ns > b.ts_ns;
      return a.callid > b.callid;
    }
  };
  int64_t Exp(int64_t mean) {
    std::exponential_distribution<double> d(1.0 / static_cast<double>(mean));
    return 1 + static_cast<int64_t>(d(rng_));
  }
  int Pick(int first, int count) {
    return first + static_cast<int>(rng_() % static_cast<uint64_t>(count));
  }
  void AddRequest(trace::TimeNs t) {
    uint64_t path = ++paths_;
    int client = Pick(0, 3), ws = Pick(3, 2), as = Pick(5, 2), db = Pick(7, 3);
    uint64_t c1 = ++calls_, c2 = ++calls_, c3 = ++calls_;
    trace::TimeNs t1 = t;
    trace::TimeNs t2 = t1 + Exp(300'000);
    trace::TimeNs t3 = t2 + Exp(200'000);
    trace::TimeNs t4 = t3 + Exp(800'000);
    trace::TimeNs t5 = t4 + Exp(200'000);
    trace::TimeNs t6 = t5 + Exp(300'000);
    using trace::Kind;
    heap_.push({t1, Kind::kCall, client, ws, c1, path});
    heap_.push({t2, Kind::kCall, ws, as, c2, path});
    heap_.push({t3, Kind::kCall, as, db, c3, path});
    heap_.push({t4, Kind::kReturn, db, as, c3, path});
    heap_.push({t5, Kind::kReturn, as, ws, c2, path});
    heap_.push({t6, Kind::kReturn, ws, client, c1, path});
  }

  std::mt19937_64 rng_;
  int64_t mean_gap_ns_;
  std::vector<std::string> names_;
  std::priority_queue<SyntheticMessage, std::vector<SyntheticMessage>, Later>
      heap_;
  trace::TimeNs next_request_ns_;
  uint64_t paths_ = 0;
  uint64_t calls_ = 0;
};

}  // namespace bbprof::testing

#endif  // BBPROF_TESTS_TRACE_SYNTHETIC_TRACE_H_
