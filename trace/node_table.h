// NodeTable: interns node names once per run. A trace has few distinct nodes
// (hosts or services) and many messages, so every record carries a NodeId and
// the names live here. Several readers may share one table (merge does), so
// that the same name gets the same id across files.
#ifndef BBPROF_TRACE_NODE_TABLE_H_
#define BBPROF_TRACE_NODE_TABLE_H_

#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "base/status.h"
#include "trace/record.h"
#include "trace/string_hash.h"
#include "trace/token.h"

namespace bbprof::trace {

// Checks a node name against the format's token rule (trace/token.h): 1 to
// 255 bytes of valid UTF-8, no whitespace or control bytes, none of
// "( ) , ;". Returns an empty
// string when valid, else what is wrong (without file/line context).
std::string CheckNodeName(std::string_view name);

class NodeTable {
 public:
  NodeTable() = default;
  NodeTable(const NodeTable&) = delete;
  NodeTable& operator=(const NodeTable&) = delete;

  // Returns the id of `name`, adding it if new. The name must be valid
  // (CheckNodeName); readers validate before interning. Past the limit
  // (SetLimit), a new name is not added: it gets the id of the overflow
  // node kOverflowName, and folded() counts it.
  NodeId Intern(std::string_view name);
  // Returns the id of `name` if known.
  bool Find(std::string_view name, NodeId* id) const;

  std::string_view Name(NodeId id) const { return names_[id]; }
  size_t size() const { return names_.size(); }

  // Distinct names kept at most (0: no limit; the overflow node comes on
  // top). A trace or capture with millions of distinct names (a crafted
  // one, or every client address of days of internet traffic) would
  // otherwise grow every per-node table of every stage: past the
  // limit, the excess names become one node, `{other-nodes}`. Names seen
  // before the limit keep theirs, so the first (and, in time order, the
  // earliest) nodes stay apart.
  void SetLimit(size_t max_names) { limit_ = max_names; }
  size_t limit() const { return limit_; }
  // Times a new name was folded into the overflow node (a name met again
  // on a later record counts again).
  uint64_t folded() const { return folded_; }
  bool IsOverflow(NodeId id) const { return id == overflow_; }
  static constexpr std::string_view kOverflowName = "{other-nodes}";

 private:
  NodeId Add(std::string_view name);

  size_t limit_ = 0;
  uint64_t folded_ = 0;
  static constexpr NodeId kNoOverflow = 0xFFFFFFFFu;
  NodeId overflow_ = kNoOverflow;
  std::unordered_map<std::string, NodeId, StringHash, std::equal_to<>> ids_;
  std::vector<std::string> names_;
};

}  // namespace bbprof::trace

#endif  // BBPROF_TRACE_NODE_TABLE_H_
