// BlockCounter: the engine's pool of KV blocks, by count. The simulator needs how many blocks are
// in use, not which ones; the real engine's kernels::BlockPool (kernels/block_table) tracks
// identities. Invariant checks stay on in Release.
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>

namespace metronome {

class BlockCounter {
 public:
  explicit BlockCounter(int64_t capacity) : capacity_(capacity) {
    if (capacity <= 0) throw std::invalid_argument("BlockCounter: capacity must be positive");
  }

  int64_t capacity() const { return capacity_; }
  int64_t used() const { return used_; }
  int64_t free() const { return capacity_ - used_; }
  double occupancy() const { return static_cast<double>(used_) / static_cast<double>(capacity_); }
  int64_t peak() const { return peak_; }
  // Totals over the run: allocated - released == used at all times (blocks are conserved).
  int64_t allocated_total() const { return allocated_; }
  int64_t released_total() const { return released_; }

  bool try_allocate(int64_t n) {
    check(n >= 0, "negative allocation");
    if (n > free()) return false;
    used_ += n;
    allocated_ += n;
    if (used_ > peak_) peak_ = used_;
    return true;
  }

  // try_allocate for a count the caller has checked: 0 <= n <= free().
  void allocate_fitting(int64_t n) {
    used_ += n;
    allocated_ += n;
    if (used_ > peak_) peak_ = used_;
  }

  void release(int64_t n) {
    check(n >= 0 && n <= used_, "release of more blocks than are in use");
    used_ -= n;
    released_ += n;
  }

 private:
  static void check(bool ok, const char* what) {
    if (!ok) throw std::logic_error(std::string("BlockCounter invariant violated: ") + what);
  }

  int64_t capacity_;
  int64_t used_ = 0;
  int64_t peak_ = 0;
  int64_t allocated_ = 0;
  int64_t released_ = 0;
};

}  // namespace metronome
