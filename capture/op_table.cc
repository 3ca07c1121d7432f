#include "capture/op_table.h"

namespace bbprof::capture {

uint32_t OpTable::Index(std::string_view op) {
  auto it = index_.find(op);
  if (it != index_.end()) return it->second.index;
  names_.emplace_back(op);
  auto index = static_cast<uint32_t>(names_.size());
  index_.emplace(names_.back(), Entry{index});
  return index;
}

uint32_t OpTable::Intern(trace::NodeId server, std::string_view op) {
  if (op.empty()) return 0;
  auto known = index_.find(op);
  if (known != index_.end()) {
    Entry& e = known->second;
    if (e.has_last && e.last_server == server) return e.index;
    if (admitted_.contains((uint64_t{server} << 32) | e.index)) {
      e.last_server = server;
      e.has_last = true;
      return e.index;
    }
  }
  // The budget of (server, protocol): the protocol is the op's first part.
  std::string_view protocol = op.substr(0, op.find(':'));
  std::string budget_key = std::to_string(server) + ' ' + std::string(protocol);
  Budget& budget = budgets_[budget_key];
  if (budget.ops < max_per_server_) {
    ++budget.ops;
    uint32_t index = Index(op);
    admitted_.insert((uint64_t{server} << 32) | index);
    return index;
  }
  // A name refused everywhere is never stored: memory stays bounded.
  ++capped_;
  // Over the cap: keep the protocol and verb where the op has an object.
  size_t verb_end = op.find(':', protocol.size() + 1);
  std::string other = std::string(protocol) + ":{other}";
  if (verb_end != std::string_view::npos) {
    std::string with_verb = std::string(op.substr(0, verb_end)) + ":{other}";
    auto w = index_.find(with_verb);
    if (w != index_.end() &&
        admitted_.contains((uint64_t{server} << 32) | w->second.index)) {
      return w->second.index;
    }
    if (budget.capped_forms < 64) {
      ++budget.capped_forms;
      uint32_t index = Index(with_verb);
      admitted_.insert((uint64_t{server} << 32) | index);
      return index;
    }
  }
  uint32_t o = Index(other);
  admitted_.insert((uint64_t{server} << 32) | o);
  return o;
}

}  // namespace bbprof::capture
