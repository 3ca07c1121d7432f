#include "capture/ip_fragments.h"

#include <algorithm>

namespace bbprof::capture {

void FragmentReassembler::Erase(std::map<Key, Partial>::iterator it) {
  bytes_ -= it->second.bytes;
  table_.erase(it);
}

std::optional<std::vector<std::byte>> FragmentReassembler::Add(
    const IpResult& ip, trace::TimeNs ts, trace::TimeNs* first_ts) {
  uint64_t begin = ip.frag_offset;
  uint64_t end = begin + ip.payload.size();
  if (end > 65535) {
    ++stats_.oversized;
    return std::nullopt;
  }
  Key key{ip.v6, ip.protocol, ip.frag_id, ip.src, ip.dst};
  auto [it, inserted] = table_.try_emplace(key);
  Partial& p = it->second;
  if (inserted) p.first_ts = ts;
  p.first_ts = std::min(p.first_ts, ts);
  if (!ip.more_fragments) p.total = static_cast<uint32_t>(end);
  // Insert only the bytes no earlier fragment covered.
  uint64_t pos = begin;
  auto next = p.pieces.upper_bound(static_cast<uint32_t>(pos));
  if (next != p.pieces.begin()) {
    auto prev = std::prev(next);
    uint64_t prev_end = prev->first + prev->second.size();
    if (prev_end > pos) {
      stats_.overlapping_bytes += std::min(prev_end, end) - pos;
      pos = prev_end;
    }
  }
  while (pos < end) {
    uint64_t piece_end = end;
    if (next != p.pieces.end() && next->first < end) piece_end = next->first;
    if (piece_end > pos) {
      auto s = ip.payload.subspan(pos - begin, piece_end - pos);
      p.pieces.emplace(static_cast<uint32_t>(pos),
                       std::vector<std::byte>(s.begin(), s.end()));
      p.bytes += s.size();
      bytes_ += s.size();
    }
    if (next == p.pieces.end() || next->first >= end) break;
    uint64_t covered_end = next->first + next->second.size();
    stats_.overlapping_bytes += std::min(covered_end, end) - next->first;
    pos = covered_end;
    ++next;
  }
  // Complete when the pieces cover [0, total) without holes.
  if (p.total) {
    uint64_t reach = 0;
    for (const auto& [off, data] : p.pieces) {
      if (off > reach) break;
      reach = std::max<uint64_t>(reach, off + data.size());
    }
    if (reach >= *p.total) {
      std::vector<std::byte> whole;
      whole.reserve(*p.total);
      for (const auto& [off, data] : p.pieces) {
        if (off >= *p.total) break;
        size_t n = std::min<size_t>(data.size(), *p.total - off);
        whole.insert(whole.end(), data.begin(), data.begin() + n);
      }
      if (first_ts != nullptr) *first_ts = p.first_ts;
      ++stats_.reassembled;
      Erase(it);
      return whole;
    }
  }
  while (bytes_ > max_bytes_ && !table_.empty()) {
    auto oldest = table_.begin();
    for (auto i = table_.begin(); i != table_.end(); ++i) {
      if (i->second.first_ts < oldest->second.first_ts) oldest = i;
    }
    ++stats_.evicted;
    Erase(oldest);
  }
  return std::nullopt;
}

void FragmentReassembler::Expire(trace::TimeNs now) {
  for (auto it = table_.begin(); it != table_.end();) {
    if (now - it->second.first_ts > timeout_) {
      ++stats_.timed_out;
      auto dead = it++;
      Erase(dead);
    } else {
      ++it;
    }
  }
}

}  // namespace bbprof::capture
