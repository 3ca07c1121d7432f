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
// Memory per pending call is one node of 20-24 bytes in a pool plus, per
// distinct key, one 48-byte entry and two to four 8-byte slots of the key
// table: a key's queue is a list threaded through the pool, so a key
// pending once costs no queue of its own (a std::deque per key cost over
// 600 bytes).
#ifndef BBPROF_TRACE_PENDING_CALLS_H_
#define BBPROF_TRACE_PENDING_CALLS_H_

#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>
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
  bool Add(std::string_view key, const V& value, V* evicted) {
    const uint32_t e = InsertKey(key, PendingKeyHash()(key));
    const uint32_t n = NewNode(value, e);
    Queue& q = entries_[e].queue;
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
  bool Take(std::string_view key, V* value) {
    const uint32_t e = FindKey(key, PendingKeyHash()(key));
    if (e == kNil) return false;
    *value = nodes_[entries_[e].queue.head].value;
    PopHead(e);
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

  // Calls f(value) for every pending entry, oldest first (the stream
  // driver carries the calls still open at a segment's start into it).
  template <class F>
  void ForEach(F&& f) const {
    for (uint32_t n = oldest_; n != kNil; n = nodes_[n].newer) {
      f(nodes_[n].value);
    }
  }

  uint64_t size() const { return size_; }
  uint64_t evictions() const { return evictions_; }

 private:
  static constexpr uint32_t kNil = 0xFFFFFFFFu;
  struct Queue {
    uint32_t head = kNil, tail = kNil;
  };
  // A key with calls pending, or (queue empty) a free entry on the free
  // list, its string's buffer kept for the next key.
  struct Entry {
    std::string key;
    uint64_t hash = 0;
    Queue queue;
    uint32_t next_free = kNil;
  };
  struct Node {
    V value{};
    uint32_t next_same_key = kNil;        // this key's queue, oldest first
    uint32_t older = kNil, newer = kNil;  // every pending call, by age
    uint32_t owner = kNil;                // its key's entry
  };

  // The key table: open addressing with linear probing over slots that
  // hold an entry's number (low half) and its hash's high half (a filter
  // before the string compare); kEmpty ends a probe, kTomb (a key whose
  // calls were all taken) does not. Entries never move, so a node names
  // its key by number. A std::unordered_map here allocated a node per key
  // and chased a pointer per lookup, once per message of the trace.
  static constexpr uint64_t kEmpty = ~uint64_t{0};
  static constexpr uint64_t kTomb = ~uint64_t{0} - 1;
  static uint64_t Slot(uint64_t hash, uint32_t e) {
    return (hash >> 32) << 32 | e;
  }

  uint32_t FindKey(std::string_view key, uint64_t hash) const {
    if (slots_.empty()) return kNil;
    for (size_t i = hash & mask_;; i = (i + 1) & mask_) {
      const uint64_t s = slots_[i];
      if (s == kEmpty) return kNil;
      if (s != kTomb && s >> 32 == hash >> 32) {
        const auto e = static_cast<uint32_t>(s);
        if (entries_[e].key == key) return e;
      }
    }
  }

  uint32_t InsertKey(std::string_view key, uint64_t hash) {
    if ((live_ + tombs_ + 1) * 2 > slots_.size()) Rehash();
    size_t at = slots_.size();  // the first tombstone on the way, if any
    size_t i = hash & mask_;
    for (;; i = (i + 1) & mask_) {
      const uint64_t s = slots_[i];
      if (s == kEmpty) break;
      if (s == kTomb) {
        if (at == slots_.size()) at = i;
      } else if (s >> 32 == hash >> 32) {
        const auto e = static_cast<uint32_t>(s);
        if (entries_[e].key == key) return e;
      }
    }
    if (at == slots_.size()) {
      at = i;
    } else {
      --tombs_;
    }
    const uint32_t e = Claim(entries_, &free_entry_, &Entry::next_free);
    entries_[e].key.assign(key);
    entries_[e].hash = hash;
    entries_[e].queue = Queue{};
    slots_[at] = Slot(hash, e);
    ++live_;
    return e;
  }

  void EraseKey(uint32_t e) {
    const uint64_t slot = Slot(entries_[e].hash, e);
    for (size_t i = entries_[e].hash & mask_;; i = (i + 1) & mask_) {
      if (slots_[i] == slot) {
        slots_[i] = kTomb;
        break;
      }
    }
    --live_;
    ++tombs_;
    entries_[e].next_free = free_entry_;
    free_entry_ = e;
  }

  // To at least four slots a live key (at most half full after), which
  // also clears the tombstones.
  void Rehash() {
    size_t cap = 16;
    while (cap < 4 * (live_ + 1)) cap *= 2;
    std::vector<uint64_t> old = std::move(slots_);
    slots_.assign(cap, kEmpty);
    mask_ = cap - 1;
    tombs_ = 0;
    for (uint64_t s : old) {
      if (s == kEmpty || s == kTomb) continue;
      const uint64_t hash = entries_[static_cast<uint32_t>(s)].hash;
      size_t i = hash & mask_;
      while (slots_[i] != kEmpty) i = (i + 1) & mask_;
      slots_[i] = s;
    }
  }

  // An element of `pool` off its free list (linked through `link`), or a
  // new one at its end: entries and nodes are both reused this way.
  template <class T>
  static uint32_t Claim(std::vector<T>& pool, uint32_t* free,
                        uint32_t T::*link) {
    if (*free == kNil) {
      pool.emplace_back();
      return static_cast<uint32_t>(pool.size() - 1);
    }
    const uint32_t n = *free;
    *free = pool[n].*link;
    return n;
  }

  uint32_t NewNode(const V& value, uint32_t owner) {
    const uint32_t n = Claim(nodes_, &free_, &Node::next_same_key);
    nodes_[n] = Node{value, kNil, kNil, kNil, owner};
    return n;
  }

  // Removes the head of entry e's queue (its oldest call) from the queue,
  // the age list and, once empty, the key table; the node goes to the free
  // list.
  void PopHead(uint32_t e) {
    Queue& q = entries_[e].queue;
    const uint32_t n = q.head;
    Node& node = nodes_[n];
    q.head = node.next_same_key;
    (node.older != kNil ? nodes_[node.older].newer : oldest_) = node.newer;
    (node.newer != kNil ? nodes_[node.newer].older : newest_) = node.older;
    node.next_same_key = free_;
    free_ = n;
    --size_;
    if (q.head == kNil) EraseKey(e);
  }

  uint64_t limit_;
  std::vector<uint64_t> slots_;
  size_t mask_ = 0;
  uint64_t live_ = 0, tombs_ = 0;
  std::vector<Entry> entries_;
  uint32_t free_entry_ = kNil;
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
