// PendingCalls: the calls still waiting for their return while a trace is
// read, keyed by (caller, callee, callid), each key a first-in first-out
// queue (where callids are absent or repeat, a return takes the earliest
// call with its key: the pairing rule of section 5.1.1.1). `stats` and
// `nest` pair through it.
//
// Bounded, because input is not trusted: a return that never comes (a lost
// reply, a crafted
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
// distinct key, one 64-byte entry and two to eight 8-byte slots of the key
// table: a key's queue is a list threaded through the pool, so a key
// pending once costs no queue of its own (a std::deque per key cost over
// 600 bytes).
#ifndef BBPROF_TRACE_PENDING_CALLS_H_
#define BBPROF_TRACE_PENDING_CALLS_H_

#include <bit>
#include <cstdint>
#include <cstring>
#include <memory>
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

// The pairing key of a call from `caller` to `callee` with a record's
// callid (its number or its text, whichever form the reader gave). A number
// takes only its significant bytes, after a tag byte that counts them (0-8;
// text's tag is '=', 61), so the encoding stays one-to-one. A numeric key
// (at most 17 bytes) is built in place: pairing builds a key per call and
// return, and building it in a std::string (assign, append, push_back)
// would be a large share of the pairer's work.
class PendingCallKey {
 public:
  PendingCallKey() = default;
  PendingCallKey(NodeId caller, NodeId callee, const Record& rec) {
    Set(caller, callee, rec);
  }
  // The view points into the object itself.
  PendingCallKey(const PendingCallKey&) = delete;
  PendingCallKey& operator=(const PendingCallKey&) = delete;
  void Set(NodeId caller, NodeId callee, const Record& rec) {
    if (rec.callid_is_number) {
      std::memcpy(small_, &caller, sizeof caller);
      std::memcpy(small_ + 4, &callee, sizeof callee);
      const uint64_t v = rec.callid_number;
      const size_t n = static_cast<size_t>(std::bit_width(v) + 7) / 8;
      small_[8] = static_cast<char>(n);
      // Its significant bytes, low first (the buffer has room for all 8).
      if constexpr (std::endian::native == std::endian::little) {
        std::memcpy(small_ + 9, &v, sizeof v);
      } else {
        for (size_t i = 0; i < n; ++i) {
          small_[9 + i] = static_cast<char>((v >> (8 * i)) & 0xFF);
        }
      }
      view_ = {small_, 9 + n};
      return;
    }
    text_.assign(reinterpret_cast<const char*>(&caller), sizeof caller);
    text_.append(reinterpret_cast<const char*>(&callee), sizeof callee);
    text_.push_back('=');
    text_.append(rec.callid);
    view_ = text_;
  }
  std::string_view view() const { return view_; }
  operator std::string_view() const { return view_; }

 private:
  char small_[4 + 4 + 1 + 8] = {};
  std::string text_;  // a textual callid's key
  std::string_view view_;
};

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
    if (n > 0 && s.size() >= 8) {
      // The last 8 bytes, overlapping words already mixed: a load of fixed
      // size, where one of n bytes was a call into memcpy.
      std::memcpy(&w, s.data() + s.size() - 8, 8);
    } else {
      std::memcpy(&w, p, n);
    }
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
  // list. A key of at most kInlineKey bytes (every numeric callid's, a
  // text callid's up to 15 characters) is held in the entry itself, a
  // longer one in a buffer the entry keeps for the next long key (a
  // std::string per entry was assigned once per new key, and compared
  // through its general path).
  static constexpr size_t kInlineKey = 24;
  struct Entry {
    char inline_key[kInlineKey];
    std::unique_ptr<char[]> long_key;
    uint32_t len = 0, long_capacity = 0;
    uint64_t hash = 0;
    Queue queue;
    uint32_t next_free = kNil;

    const char* data() const {
      return len <= kInlineKey ? inline_key : long_key.get();
    }
    bool Holds(std::string_view key) const {
      return key.size() == len && std::memcmp(data(), key.data(), len) == 0;
    }
    void Store(std::string_view key) {
      len = static_cast<uint32_t>(key.size());
      if (len > kInlineKey && len > long_capacity) {
        long_key = std::make_unique<char[]>(len);
        long_capacity = len;
      }
      std::memcpy(len <= kInlineKey ? inline_key : long_key.get(),
                  key.data(), len);
    }
  };
  static_assert(sizeof(Entry) <= 64, "an entry per distinct pending key");
  struct Node {
    V value{};
    uint32_t next_same_key = kNil;        // this key's queue, oldest first
    uint32_t older = kNil, newer = kNil;  // every pending call, by age
    uint32_t owner = kNil;                // its key's entry
  };

  // The key table: open addressing with linear probing over slots that
  // hold an entry's number (low half) and its hash's high half (a filter
  // before the key compare); kEmpty ends a probe. A key whose calls were
  // all taken leaves its slot by backward shifting (the slots after it
  // that may move closer to their home move back), so no tombstones pile
  // up: every call and its return add a key and take it away again, and
  // tombstones made the table rehash every few dozen calls. Entries never
  // move, so a node names its key by number. A std::unordered_map here
  // allocated a node per key and chased a pointer per lookup, once per
  // message of the trace.
  static constexpr uint64_t kEmpty = ~uint64_t{0};
  static uint64_t Slot(uint64_t hash, uint32_t e) {
    return (hash >> 32) << 32 | e;
  }
  size_t Home(uint64_t slot) const {
    return entries_[static_cast<uint32_t>(slot)].hash & mask_;
  }

  uint32_t FindKey(std::string_view key, uint64_t hash) const {
    if (slots_.empty()) return kNil;
    for (size_t i = hash & mask_;; i = (i + 1) & mask_) {
      const uint64_t s = slots_[i];
      if (s == kEmpty) return kNil;
      if (s >> 32 == hash >> 32) {
        const auto e = static_cast<uint32_t>(s);
        if (entries_[e].Holds(key)) return e;
      }
    }
  }

  uint32_t InsertKey(std::string_view key, uint64_t hash) {
    if ((live_ + 1) * 2 > slots_.size()) Rehash();
    size_t i = hash & mask_;
    for (;; i = (i + 1) & mask_) {
      const uint64_t s = slots_[i];
      if (s == kEmpty) break;
      if (s >> 32 == hash >> 32) {
        const auto e = static_cast<uint32_t>(s);
        if (entries_[e].Holds(key)) return e;
      }
    }
    const uint32_t e = Claim(entries_, &free_entry_, &Entry::next_free);
    entries_[e].Store(key);
    entries_[e].hash = hash;
    entries_[e].queue = Queue{};
    slots_[i] = Slot(hash, e);
    ++live_;
    return e;
  }

  void EraseKey(uint32_t e) {
    const uint64_t slot = Slot(entries_[e].hash, e);
    size_t i = entries_[e].hash & mask_;
    while (slots_[i] != slot) i = (i + 1) & mask_;
    // Backward shift: a later slot of the run moves into the hole unless
    // its home lies cyclically in (hole, slot], where the hole would break
    // its probe.
    for (size_t j = (i + 1) & mask_; slots_[j] != kEmpty; j = (j + 1) & mask_) {
      const size_t home = Home(slots_[j]);
      const bool stays = i <= j ? (i < home && home <= j)
                                : (i < home || home <= j);
      if (stays) continue;
      slots_[i] = slots_[j];
      i = j;
    }
    slots_[i] = kEmpty;
    --live_;
    entries_[e].next_free = free_entry_;
    free_entry_ = e;
    // A burst of calls gone: the table shrinks back (at most a quarter
    // full after), with room between the two bounds so that it does not
    // resize back and forth.
    if (slots_.size() > 1024 && live_ * 16 < slots_.size()) Rehash();
  }

  // To four to eight slots a live key (at least 16).
  void Rehash() {
    size_t cap = 16;
    while (cap < 4 * (live_ + 1)) cap *= 2;
    std::vector<uint64_t> old = std::move(slots_);
    slots_.assign(cap, kEmpty);
    mask_ = cap - 1;
    for (uint64_t s : old) {
      if (s == kEmpty) continue;
      size_t i = Home(s);
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
  uint64_t live_ = 0;
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
