#include "sim/vllm/vllm_block_pool.h"

#include <algorithm>
#include <stdexcept>

namespace metronome {

VllmBlockPool::VllmBlockPool(int64_t num_gpu_blocks, BlockCounter& counts)
    : counts_(counts),
      ref_(static_cast<size_t>(num_gpu_blocks), 0),
      prev_(static_cast<size_t>(num_gpu_blocks), -1),
      next_(static_cast<size_t>(num_gpu_blocks), -1),
      hash_(static_cast<size_t>(num_gpu_blocks), 0),
      queued_(static_cast<size_t>(num_gpu_blocks), false) {
  if (counts.capacity() != num_gpu_blocks - 1) {
    throw std::logic_error("VllmBlockPool: counts must hold num_gpu_blocks - 1 blocks");
  }
  ref_[0] = 1;  // the null block
  for (int64_t b = 1; b < num_gpu_blocks; ++b) push_back(b);
}

void VllmBlockPool::unlink(int64_t b) {
  const size_t i = static_cast<size_t>(b);
  if (prev_[i] >= 0)
    next_[static_cast<size_t>(prev_[i])] = next_[i];
  else
    head_ = next_[i];
  if (next_[i] >= 0)
    prev_[static_cast<size_t>(next_[i])] = prev_[i];
  else
    tail_ = prev_[i];
  prev_[i] = next_[i] = -1;
  queued_[i] = false;
  --free_count_;
}

void VllmBlockPool::push_back(int64_t b) {
  const size_t i = static_cast<size_t>(b);
  prev_[i] = tail_;
  next_[i] = -1;
  if (tail_ >= 0)
    next_[static_cast<size_t>(tail_)] = b;
  else
    head_ = b;
  tail_ = b;
  queued_[i] = true;
  ++free_count_;
}

void VllmBlockPool::push_front(int64_t b) {
  const size_t i = static_cast<size_t>(b);
  next_[i] = head_;
  prev_[i] = -1;
  if (head_ >= 0)
    prev_[static_cast<size_t>(head_)] = b;
  else
    tail_ = b;
  head_ = b;
  queued_[i] = true;
  ++free_count_;
}

void VllmBlockPool::take(int64_t k, std::vector<int64_t>& into) {
  if (k > free_count_ || !counts_.try_allocate(k)) {
    throw std::logic_error("VllmBlockPool: take beyond the free blocks");
  }
  for (int64_t n = 0; n < k; ++n) {
    const int64_t b = head_;
    unlink(b);
    const size_t i = static_cast<size_t>(b);
    if (hash_[i] != 0) {  // evicted from the prefix cache on reuse
      auto it = by_hash_.find(hash_[i]);
      std::erase(it->second, b);
      if (it->second.empty()) by_hash_.erase(it);
      hash_[i] = 0;
    }
    ref_[i] = 1;
    into.push_back(b);
  }
}

void VllmBlockPool::release(const std::vector<int64_t>& ordered) {
  std::vector<int64_t> front;
  int64_t freed = 0;
  for (const int64_t b : ordered) {
    const size_t i = static_cast<size_t>(b);
    if (b <= 0 || --ref_[i] > 0) continue;
    ++freed;
    if (hash_[i] == 0) {
      front.push_back(b);
    } else {
      push_back(b);
    }
  }
  // The un-hashed ones go to the front keeping their order: the first of them is reused first.
  for (auto it = front.rbegin(); it != front.rend(); ++it) push_front(*it);
  counts_.release(freed);
}

void VllmBlockPool::touch(const std::vector<int64_t>& blocks) {
  for (const int64_t b : blocks) {
    const size_t i = static_cast<size_t>(b);
    if (ref_[i] == 0) {
      unlink(b);
      if (!counts_.try_allocate(1)) throw std::logic_error("VllmBlockPool: touch");
    }
    ++ref_[i];
  }
}

int64_t VllmBlockPool::cached(uint64_t hash) const {
  const auto it = by_hash_.find(hash);
  return it == by_hash_.end() ? -1 : it->second.front();
}

void VllmBlockPool::insert(uint64_t hash, int64_t b) {
  const size_t i = static_cast<size_t>(b);
  if (hash_[i] != 0) return;
  hash_[i] = hash;
  // A history recomputed after its prefix was evicted caches its later blocks a second time.
  by_hash_[hash].push_back(b);
}

}  // namespace metronome
