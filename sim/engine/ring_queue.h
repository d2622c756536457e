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
