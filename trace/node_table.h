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
  // (CheckNodeName); readers validate before interning.
  NodeId Intern(std::string_view name);
  // Returns the id of `name` if known.
  bool Find(std::string_view name, NodeId* id) const;

  std::string_view Name(NodeId id) const { return names_[id]; }
  size_t size() const { return names_.size(); }

 private:
  std::unordered_map<std::string, NodeId, StringHash, std::equal_to<>> ids_;
  std::vector<std::string> names_;
};

}  // namespace bbprof::trace

#endif  // BBPROF_TRACE_NODE_TABLE_H_
