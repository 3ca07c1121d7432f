#include "trace/node_table.h"

#include "trace/token.h"

namespace bbprof::trace {

std::string CheckNodeName(std::string_view name) {
  return CheckToken(name, TokenKind::kNodeName);
}

NodeId NodeTable::Intern(std::string_view name) {
  auto it = ids_.find(name);
  if (it != ids_.end()) return it->second;
  auto id = static_cast<NodeId>(names_.size());
  names_.emplace_back(name);
  ids_.emplace(std::string(name), id);
  return id;
}

bool NodeTable::Find(std::string_view name, NodeId* id) const {
  auto it = ids_.find(name);
  if (it == ids_.end()) return false;
  *id = it->second;
  return true;
}

}  // namespace bbprof::trace
