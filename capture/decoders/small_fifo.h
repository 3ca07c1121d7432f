// SmallFifo: the queue of requests a stream decoder waits to see answered
// (HTTP/1.x pipelining, PostgreSQL, Redis, memcached, MySQL). A vector with
// a head index rather than a std::deque: libstdc++ allocates a deque's first
// 512-byte block on construction, which would make every connection, even
// one that never sends a second request, cost over a kilobyte of queues,
// and a crafted capture of a million idle connections gigabytes.
// A queue never used holds no heap memory; one used keeps the capacity of
// its largest backlog (a few entries on a connection: one per request in
// flight), so a keep-alive connection does not allocate per request.
#ifndef BBPROF_CAPTURE_DECODERS_SMALL_FIFO_H_
#define BBPROF_CAPTURE_DECODERS_SMALL_FIFO_H_

#include <cstddef>
#include <vector>

namespace bbprof::capture {

template <class T>
class SmallFifo {
 public:
  using iterator = typename std::vector<T>::iterator;

  bool empty() const { return head_ == items_.size(); }
  size_t size() const { return items_.size() - head_; }
  T& front() { return items_[head_]; }
  iterator begin() {
    return items_.begin() + static_cast<std::ptrdiff_t>(head_);
  }
  iterator end() { return items_.end(); }
  void push_back(const T& item) { items_.push_back(item); }
  void pop_front() {
    ++head_;
    if (head_ == items_.size()) {
      items_.clear();
      head_ = 0;
    } else if (head_ >= 32 && 2 * head_ >= items_.size()) {
      // Slide the live items down once the dead prefix is the larger half:
      // each item moves O(1) times on average.
      items_.erase(items_.begin(), begin());
      head_ = 0;
    }
  }
  // Drops [begin(), last): the oldest requests.
  void erase(iterator first, iterator last) {
    items_.erase(first, last);
    if (empty()) {
      items_.clear();
      head_ = 0;
    }
  }

 private:
  std::vector<T> items_;
  size_t head_ = 0;
};

}  // namespace bbprof::capture

#endif  // BBPROF_CAPTURE_DECODERS_SMALL_FIFO_H_
