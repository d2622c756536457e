// vLLM V1's block pool (vllm/v1/core/block_pool.py, 0.33.0) by block identity: a free queue whose
// order decides which block is reused next, and the prefix cache that keeps freed full blocks
// findable until they are reused. Block 0 is vLLM's null block and never free. The counts are
// mirrored into a BlockCounter so the engine's statistics read the same numbers.
#pragma once

#include <cstdint>
#include <unordered_map>
#include <vector>

#include "sim/pool/block_counter.h"

namespace metronome {

class VllmBlockPool {
 public:
  // `counts` has capacity num_gpu_blocks - 1 and must outlive this.
  VllmBlockPool(int64_t num_gpu_blocks, BlockCounter& counts);

  int64_t free() const { return free_count_; }  // includes free blocks still in the prefix cache
  int64_t ref(int64_t b) const { return ref_[static_cast<size_t>(b)]; }
  // Pops k blocks from the front of the free queue; a popped cached block leaves the cache.
  void take(int64_t k, std::vector<int64_t>& into);
  // Drops one reference to each block, in order; those left unreferenced return to the queue:
  // un-hashed ones to the front (reused first), cached ones to the back (evicted last).
  void release(const std::vector<int64_t>& ordered);
  // Adopts cache hits: a free one leaves the queue.
  void touch(const std::vector<int64_t>& blocks);
  int64_t cached(uint64_t hash) const;  // the block holding `hash`, or -1
  void insert(uint64_t hash, int64_t b);

 private:
  void unlink(int64_t b);
  void push_back(int64_t b);
  void push_front(int64_t b);

  BlockCounter& counts_;
  std::vector<int64_t> ref_, prev_, next_;  // the free queue: a list through prev_/next_
  std::vector<uint64_t> hash_;              // 0: not cached
  std::vector<bool> queued_;
  int64_t head_ = -1, tail_ = -1, free_count_ = 0;
  std::unordered_map<uint64_t, std::vector<int64_t>> by_hash_;  // in insertion order
};

}  // namespace metronome
