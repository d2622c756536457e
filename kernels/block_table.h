// Host-side block bookkeeping for a paged KV cache: a pool of fixed-size blocks and, per session, a
// block table mapping logical blocks (position / block_size) to physical ones.
//
// Windowed policy (kv::Window with window >= 0): after each frame, blocks that no future query can
// see are returned to the pool, except a partial last block (the next append writes into it). Sink
// blocks (those holding any of the first S positions) stay pinned; a
// block straddling the window's left edge stays until its last position leaves the window. Which
// positions are visible is decided by kv::key_visible alone, the rule the kernels and the simulator
// use.
//
// Lifecycle of a session per frame of n tokens:
//   append(pool, n)            allocate blocks for positions [tokens, tokens + n); tokens += n
//   ... run the kernels with seq_len = tokens() ...
//   release_outside_window(pool)
// Between frames a session holds kv::resident_blocks(tokens, w, block_size) blocks; during a frame
// kv::step_blocks(ctx, n, w, block_size). Tests pin both.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "core/kv_window.h"

namespace metronome::kernels {

class BlockPool {
 public:
  explicit BlockPool(int32_t num_blocks);

  int32_t num_blocks() const { return num_blocks_; }
  int32_t free_blocks() const { return static_cast<int32_t>(free_.size()); }
  int32_t used_blocks() const { return num_blocks_ - free_blocks(); }

  // A free block id, or -1 when the pool is exhausted.
  int32_t allocate();
  // Returns a block; throws std::logic_error on a double free or a foreign id.
  void release(int32_t block);

 private:
  int32_t num_blocks_;
  std::vector<int32_t> free_;    // LIFO: a just-released block is reused first (warm in L2)
  std::vector<uint8_t> in_use_;  // [num_blocks] double-free check
};

class SessionBlocks {
 public:
  SessionBlocks(kv::Window window, int32_t block_size);

  // Allocates the blocks that positions [tokens, tokens + n) need and advances tokens by n. All or
  // nothing: returns false and changes nothing when the pool has too few free blocks.
  bool append(BlockPool& pool, int64_t n);
  // Frees blocks no query at position >= tokens() can see. Returns how many were freed.
  int32_t release_outside_window(BlockPool& pool);
  // Frees every block (session end).
  void release_all(BlockPool& pool);

  int64_t tokens() const { return tokens_; }
  int32_t held_blocks() const { return held_; }
  kv::Window window() const { return window_; }
  int32_t block_size() const { return block_size_; }
  // Logical block -> physical block, -1 where released; size ceil_div(tokens, block_size).
  const std::vector<int32_t>& table() const { return table_; }
  // Physical block of position pos, -1 if released. pos must be < tokens().
  int32_t physical_block(int64_t pos) const;

 private:
  kv::Window window_;
  int32_t block_size_;
  int64_t tokens_ = 0;
  int32_t held_ = 0;
  int64_t first_unreleased_ = 0;  // logical blocks below this (outside sinks) are already released
  std::vector<int32_t> table_;
};

// Row-major [sessions.size(), max_blocks] table for a FrameBatch, padded with -1.
// max_blocks must cover every session's table (throws otherwise).
std::vector<int32_t> dense_block_tables(std::span<const SessionBlocks* const> sessions,
                                        int32_t max_blocks);

}  // namespace metronome::kernels
