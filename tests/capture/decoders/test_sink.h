// Test helpers for capture/decoders: a sink that records events and
// counters, and byte-array builders.
#ifndef BBPROF_TESTS_CAPTURE_DECODERS_TEST_SINK_H_
#define BBPROF_TESTS_CAPTURE_DECODERS_TEST_SINK_H_

#include <cstddef>
#include <cstdint>
#include <map>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "base/byte_cursor.h"
#include "capture/decoder.h"

namespace bbprof::capture {

class RecordingSink : public EventSink {
 public:
  void Emit(const AppEvent& e) override {
    events.push_back(e);
    events.back().op = {};  // a view valid during Emit only: kept in `ops`
    ops.emplace_back(e.op);
  }
  // The calls' ops in order, space-separated ("-" for none).
  std::string CallOps() const {
    std::string s;
    for (size_t i = 0; i < events.size(); ++i) {
      if (events[i].kind != trace::Kind::kCall) continue;
      if (!s.empty()) s += ' ';
      s += ops[i].empty() ? "-" : ops[i];
    }
    return s;
  }
  void Count(std::string_view reason, uint64_t n = 1) override {
    counts[std::string(reason)] += n;
  }
  size_t Kinds(trace::Kind k) const {
    size_t n = 0;
    for (const auto& e : events) n += e.kind == k;
    return n;
  }
  uint64_t count(const std::string& r) const {
    auto it = counts.find(r);
    return it == counts.end() ? 0 : it->second;
  }
  // "C0@10 R0@20 M@5": kind, token, ts, compact for assertions.
  std::string Summary() const {
    std::string s;
    for (const auto& e : events) {
      if (!s.empty()) s += ' ';
      s += e.kind == trace::Kind::kCall     ? "C"
           : e.kind == trace::Kind::kReturn ? "R"
                                            : "M";
      if (e.has_token) s += std::to_string(e.token);
      s += '@' + std::to_string(e.ts);
    }
    return s;
  }
  std::vector<AppEvent> events;
  std::vector<std::string> ops;  // per event
  std::map<std::string, uint64_t> counts;
};

inline std::vector<std::byte> Bytes(std::string_view s) {
  auto b = AsBytes(s);
  return {b.begin(), b.end()};
}

inline void Put32(std::vector<std::byte>& v, uint32_t x) {
  for (int i = 3; i >= 0; --i)
    v.push_back(static_cast<std::byte>(x >> (8 * i)));
}
inline void Put16(std::vector<std::byte>& v, uint16_t x) {
  v.push_back(static_cast<std::byte>(x >> 8));
  v.push_back(static_cast<std::byte>(x));
}
inline void Append(std::vector<std::byte>& v, std::span<const std::byte> b) {
  v.insert(v.end(), b.begin(), b.end());
}

inline std::span<const std::byte> Span(const std::vector<std::byte>& v) {
  return v;
}

}  // namespace bbprof::capture

#endif  // BBPROF_TESTS_CAPTURE_DECODERS_TEST_SINK_H_
