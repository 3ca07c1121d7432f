#include "trace/node_table.h"

#include "trace/token.h"

namespace bbprof::trace {

std::string CheckNodeName(std::string_view name) {
  return CheckToken(name, TokenKind::kNodeName);
}

NodeId NodeTable::Intern(std::string_view name) {
  auto it = ids_.find(name);
  if (it != ids_.end()) return it->second;
  // Names never leave the table: once the limit is reached (the overflow
  // node exists), every new name folds.
  if (overflow_ != kNoOverflow || (limit_ != 0 && names_.size() >= limit_)) {
    ++folded_;
    if (overflow_ == kNoOverflow) {
      // A trace may name a node so itself: then that node is the overflow.
      auto own = ids_.find(kOverflowName);
      overflow_ = own != ids_.end() ? own->second : Add(kOverflowName);
    }
    return overflow_;
  }
  return Add(name);
}

NodeId NodeTable::Add(std::string_view name) {
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
