// A double-ended queue on one power-of-two ring buffer. std::deque allocates and frees a chunk
// every few dozen push/pop pairs; the engine's ready queue does that millions of times per run.
#pragma once

#include <cstddef>
#include <utility>
#include <vector>

namespace metronome {

template <class T>
class RingQueue {
 public:
  bool empty() const { return size_ == 0; }
  size_t size() const { return size_; }
  T& operator[](size_t i) { return buf_[(head_ + i) & mask_]; }
  const T& operator[](size_t i) const { return buf_[(head_ + i) & mask_]; }
  T& front() { return (*this)[0]; }
  T& back() { return (*this)[size_ - 1]; }
  const T& front() const { return (*this)[0]; }
  const T& back() const { return (*this)[size_ - 1]; }

  void push_back(const T& v) {
    grow_if_full();
    buf_[(head_ + size_++) & mask_] = v;
  }
  void push_front(const T& v) {
    grow_if_full();
    head_ = (head_ - 1) & mask_;
    buf_[head_] = v;
    ++size_;
  }
  void clear() { head_ = size_ = 0; }
  void pop_front() {
    head_ = (head_ + 1) & mask_;
    --size_;
  }
  void pop_front(size_t n) {  // n <= size()
    head_ = (head_ + n) & mask_;
    size_ -= n;
  }

  // The ring's fields copied into a loop's locals, for the engine's loops over a step's sessions:
  // their stores into int64_t fields may alias the ring's size_t ones, so through the ring itself
  // the compiler would reload its buffer, head and mask once per item.
  class View {  // reads items by position; valid until the ring changes
   public:
    explicit View(const RingQueue& q) : buf_(q.buf_.data()), head_(q.head_), mask_(q.mask_) {}
    const T& operator[](size_t i) const { return buf_[(head_ + i) & mask_]; }

   private:
    const T* buf_;
    size_t head_, mask_;
  };
  class Appender {  // appends up to n items, room for which it makes first; publish() shows them
   public:
    Appender(RingQueue& q, size_t n) : q_(q) {
      while (q.capacity_ - q.size_ < n) q.grow();
      buf_ = q.buf_.data();
      mask_ = q.mask_;
      tail_ = q.head_ + q.size_;
    }
    T& push_back() { return buf_[tail_++ & mask_]; }  // the new back item, for the caller to fill
    void publish() { q_.size_ = tail_ - q_.head_; }

   private:
    RingQueue& q_;
    T* buf_;
    size_t mask_, tail_;
  };

 private:
  void grow_if_full() {
    if (size_ == capacity_) [[unlikely]]
      grow();
  }
  [[gnu::noinline]] void grow() {
    std::vector<T> bigger(buf_.empty() ? 64 : 2 * buf_.size());
    for (size_t i = 0; i < size_; ++i) bigger[i] = (*this)[i];
    buf_ = std::move(bigger);
    head_ = 0;
    mask_ = buf_.size() - 1;
    capacity_ = buf_.size();
  }

  std::vector<T> buf_;
  size_t head_ = 0, size_ = 0, mask_ = 0, capacity_ = 0;
};

}  // namespace metronome
