#include "trace/node_table.h"

#include <cstdio>

namespace bbprof::trace {

std::string CheckNodeName(std::string_view name) {
  if (name.empty()) return "empty node name";
  if (name.size() > kMaxNodeNameBytes) {
    return "node name longer than 255 bytes";
  }
  for (char c : name) {
    auto u = static_cast<unsigned char>(c);
    if (c == '(' || c == ')' || c == ',' || c == ';') {
      return std::string("node name '") + std::string(name) +
             "' contains reserved character '" + c + "'";
    }
    if (u <= 0x20 || u == 0x7f) {
      char hex[8];
      std::snprintf(hex, sizeof hex, "0x%02x", u);
      return std::string("node name contains whitespace or control byte ") +
             hex;
    }
  }
  return {};
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
