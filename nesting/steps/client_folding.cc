#include "nesting/steps/client_folding.h"

#include <unordered_map>

namespace bbprof::nesting {

std::vector<uint32_t> FoldClients(const std::vector<bool>& calls,
                                  const std::vector<bool>& called,
                                  const ClientFolding& how,
                                  std::vector<std::string>* names) {
  const size_t n = names->size();
  std::vector<uint32_t> to(n);
  for (size_t i = 0; i < n; ++i) to[i] = static_cast<uint32_t>(i);
  if (how.mode == ClientFolding::Mode::kKeep) return to;
  std::unordered_map<std::string, uint32_t> groups;
  for (size_t i = 0; i < n; ++i) {
    if (!calls[i] || called[i]) continue;
    std::string group = how.mode == ClientFolding::Mode::kFold
                            ? std::string(kFoldedClientsName)
                            : how.group((*names)[i]);
    if (group.empty()) continue;
    auto [it, inserted] =
        groups.try_emplace(group, static_cast<uint32_t>(names->size()));
    if (inserted) names->push_back(std::move(group));
    to[i] = it->second;
  }
  return to;
}

}  // namespace bbprof::nesting
