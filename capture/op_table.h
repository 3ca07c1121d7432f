// The capture-wide table of operation names (trace field 7): decoders name
// each call's operation (capture/decoders/op_names.h); the reducer interns
// the name here once and carries a 32-bit index through the reorder buffer,
// so a record stays small and a name is stored once however many calls use
// it.
//
// It also bounds the names a capture can create. Route templates fold the
// numbers, ids and hashes they recognise, but an id they miss (a fresh word
// per request) would otherwise make one operation per request. Per server
// node and protocol (the op's first part), at most `max_per_server` distinct
// ops are kept; a further new one is recorded as its protocol and verb with
// the object replaced by `{other}` (`http:GET:{other}`), or as
// `PROTO:{other}` once that server has 64 such verbs as well, and counted
// (`ops_capped`).
#ifndef BBPROF_CAPTURE_OP_TABLE_H_
#define BBPROF_CAPTURE_OP_TABLE_H_

#include <cstdint>
#include <deque>
#include <string>
#include <string_view>
#include <unordered_map>
#include <unordered_set>

#include "trace/record.h"
#include "trace/string_hash.h"

namespace bbprof::capture {

class OpTable {
 public:
  static constexpr size_t kDefaultMaxPerServer = 1000;
  explicit OpTable(size_t max_per_server = kDefaultMaxPerServer)
      : max_per_server_(max_per_server) {}

  // The index of `op` called at `server` (0 for an empty op), after the cap.
  uint32_t Intern(trace::NodeId server, std::string_view op);
  // The name of an index from Intern ("" for 0). Stable for the table's
  // life.
  std::string_view Name(uint32_t index) const {
    return index == 0 ? std::string_view()
                      : std::string_view(names_[index - 1]);
  }
  // Calls whose op the cap replaced.
  uint64_t capped() const { return capped_; }
  size_t size() const { return names_.size(); }

 private:
  // The index of a name, creating it if new (no cap).
  uint32_t Index(std::string_view op);
  // Distinct ops (and capped forms) seen per (server, protocol).
  struct Budget {
    size_t ops = 0;
    size_t capped_forms = 0;
  };

  size_t max_per_server_;
  std::deque<std::string> names_;  // a deque: views of names stay valid
  struct Entry {
    uint32_t index = 0;
    // The last server this op was admitted at: most ops go to one server,
    // and this spares the admitted_ lookup on every call.
    trace::NodeId last_server = 0;
    bool has_last = false;
  };
  std::unordered_map<std::string, Entry, trace::StringHash, std::equal_to<>> index_;
  // (server << 32 | op index) for every op admitted at a server.
  std::unordered_set<uint64_t> admitted_;
  std::unordered_map<std::string, Budget, trace::StringHash, std::equal_to<>> budgets_;
  uint64_t capped_ = 0;
};

}  // namespace bbprof::capture

#endif  // BBPROF_CAPTURE_OP_TABLE_H_
