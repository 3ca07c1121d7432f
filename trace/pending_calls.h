// PendingCalls: the calls still waiting for their return while a trace is
// read, keyed by (caller, callee, callid), each key a first-in first-out
// queue (where callids are absent or repeat, a return takes the earliest
// call with its key: the pairing rule of section 5.1.1.1). `stats` and
// `nest` pair through it.
//
// Bounded (issue 16): a return that never comes (a lost reply, a crafted
// trace of calls only) would otherwise keep its call forever, and a long
// trace would grow memory with every loss. Past `limit` pending calls the
// oldest one, by capture time, is evicted: it is the call least likely to
// still be answered (calls are answered in milliseconds, a loss stays
// pending forever, so the oldest pending call is almost surely lost), and
// it is exactly the call a time-based expiry would drop first. An evicted
// call counts as unmatched; a return that arrives for it later finds no call
// and counts as a return without its call, so eviction never pairs a return
// with the wrong call.
//
// Memory per pending call is one 32-byte node in a pool plus, per distinct
// key, one hash-map entry: a key's queue is a list threaded through the
// pool, so a key pending once costs no queue of its own (a std::deque per
// key cost over 600 bytes).
#ifndef BBPROF_TRACE_PENDING_CALLS_H_
#define BBPROF_TRACE_PENDING_CALLS_H_

#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "trace/record.h"

namespace bbprof::trace {

// The default of every command's --max-pending-calls: far above the calls
// in flight at once on any real system (a million, at 10 ms each, is 100
// million calls a second), so it only bites on losses piled up over a long
// trace, and bounds their memory at about 100 MB.
inline constexpr uint64_t kDefaultMaxPendingCalls = 1'000'000;

// Writes the pairing key of a call from `caller` to `callee` with `rec`'s
// callid (its number or its text, whichever form the reader gave) to `key`.
// A number takes only its significant bytes, after a tag byte that counts
// them (0-8; text's tag is '=', 61): a callid below 2^48 makes a key of at
// most 15 bytes, which std::string holds without a heap allocation, and
// the encoding stays one-to-one.
inline void PendingCallKey(NodeId caller, NodeId callee, const Record& rec,
                           std::string* key) {
  key->assign(reinterpret_cast<const char*>(&caller), sizeof caller);
  key->append(reinterpret_cast<const char*>(&callee), sizeof callee);
  if (rec.callid_is_number) {
    char bytes[sizeof rec.callid_number];
    size_t n = 0;
    for (uint64_t v = rec.callid_number; v != 0; v >>= 8)
      bytes[n++] = static_cast<char>(v & 0xFF);
    key->push_back(static_cast<char>(n));
    key->append(bytes, n);
  } else {
    key->push_back('=');
    key->append(rec.callid);
  }
}

// The hash of PendingCalls' keys: a multiply-and-fold over 8-byte words.
// Keys are short (9-15 bytes for numeric callids) and hashed once per
// message, where std::hash's byte loop showed in nest's profile. The map is
// never iterated, so the hash decides nothing but speed.
struct PendingKeyHash {
  using is_transparent = void;
  size_t operator()(std::string_view s) const {
    uint64_t h = 0x9E3779B97F4A7C15ULL ^ s.size();
    const char* p = s.data();
    size_t n = s.size();
    for (; n >= 8; p += 8, n -= 8) {
      uint64_t w;
      std::memcpy(&w, p, 8);
      h = (h ^ w) * 0xBF58476D1CE4E5B9ULL;
      h ^= h >> 31;
    }
    uint64_t w = 0;
    std::memcpy(&w, p, n);
    h = (h ^ w) * 0x94D049BB133111EBULL;
    return static_cast<size_t>(h ^ (h >> 29));
  }
};

template <class V>
class PendingCalls {
 public:
  // limit: pending calls kept at most (0: no limit).
  explicit PendingCalls(uint64_t limit) : limit_(limit) {}
  PendingCalls(const PendingCalls&) = delete;
  PendingCalls& operator=(const PendingCalls&) = delete;

  // Adds a call (calls come in capture-time order). When that goes past
  // the limit, the oldest pending call is evicted: returns true and sets
  // *evicted to its value.
  bool Add(const std::string& key, const V& value, V* evicted) {
    auto [it, inserted] = queues_.try_emplace(key);
    const uint32_t n = NewNode(value, &*it);
    Queue& q = it->second;
    if (q.head == kNil) {
      q.head = n;
    } else {
      nodes_[q.tail].next_same_key = n;
    }
    q.tail = n;
    // Newest end of the age list.
    nodes_[n].older = newest_;
    if (newest_ != kNil) nodes_[newest_].newer = n;
    newest_ = n;
    if (oldest_ == kNil) oldest_ = n;
    ++size_;
    if (limit_ == 0 || size_ <= limit_) return false;
    ++evictions_;
    *evicted = nodes_[oldest_].value;
    PopHead(nodes_[oldest_].owner);
    return true;
  }

  // Takes the earliest pending call with this key, if any.
  bool Take(const std::string& key, V* value) {
    auto it = queues_.find(key);
    if (it == queues_.end()) return false;
    *value = nodes_[it->second.head].value;
    PopHead(&*it);
    return true;
  }

  // The oldest pending entry's value, if any; PopOldest() drops it (an
  // expiry by time: nest drops returns that waited too long for a call).
  bool Oldest(V* value) const {
    if (oldest_ == kNil) return false;
    *value = nodes_[oldest_].value;
    return true;
  }
  void PopOldest() { PopHead(nodes_[oldest_].owner); }

  uint64_t size() const { return size_; }
  uint64_t evictions() const { return evictions_; }

 private:
  static constexpr uint32_t kNil = 0xFFFFFFFFu;
  struct Queue {
    uint32_t head = kNil, tail = kNil;
  };
  using Map =
      std::unordered_map<std::string, Queue, PendingKeyHash, std::equal_to<>>;
  struct Node {
    V value{};
    uint32_t next_same_key = kNil;        // this key's queue, oldest first
    uint32_t older = kNil, newer = kNil;  // every pending call, by age
    typename Map::value_type* owner =
        nullptr;  // its key (stable in a node map)
  };

  uint32_t NewNode(const V& value, typename Map::value_type* owner) {
    uint32_t n;
    if (free_ != kNil) {
      n = free_;
      free_ = nodes_[n].next_same_key;
    } else {
      n = static_cast<uint32_t>(nodes_.size());
      nodes_.emplace_back();
    }
    nodes_[n] = Node{value, kNil, kNil, kNil, owner};
    return n;
  }

  // Removes the head of `entry`'s queue (its oldest call) from the queue,
  // the age list and, once empty, the map; the node goes to the free list.
  void PopHead(typename Map::value_type* entry) {
    Queue& q = entry->second;
    const uint32_t n = q.head;
    Node& node = nodes_[n];
    q.head = node.next_same_key;
    (node.older != kNil ? nodes_[node.older].newer : oldest_) = node.newer;
    (node.newer != kNil ? nodes_[node.newer].older : newest_) = node.older;
    node.next_same_key = free_;
    free_ = n;
    --size_;
    if (q.head == kNil) queues_.erase(queues_.find(entry->first));
  }

  uint64_t limit_;
  Map queues_;
  // A pool: nodes of answered calls are reused, so the pool's size is the
  // most calls ever pending at once (at most the limit, plus one).
  std::vector<Node> nodes_;
  uint32_t free_ = kNil;
  uint32_t oldest_ = kNil, newest_ = kNil;
  uint64_t size_ = 0;
  uint64_t evictions_ = 0;
};

}  // namespace bbprof::trace

#endif  // BBPROF_TRACE_PENDING_CALLS_H_
