#include "kernels/block_table.h"

#include <algorithm>
#include <stdexcept>
#include <string>

namespace metronome::kernels {

BlockPool::BlockPool(int32_t num_blocks) : num_blocks_(num_blocks) {
  if (num_blocks < 0) throw std::invalid_argument("BlockPool: negative num_blocks");
  free_.reserve(static_cast<size_t>(num_blocks));
  // Highest id at the bottom so that the first allocations return 0, 1, 2, ...
  for (int32_t b = num_blocks - 1; b >= 0; --b) free_.push_back(b);
  in_use_.assign(static_cast<size_t>(num_blocks), 0);
}

int32_t BlockPool::allocate() {
  if (free_.empty()) return -1;
  const int32_t b = free_.back();
  free_.pop_back();
  in_use_[static_cast<size_t>(b)] = 1;
  return b;
}

void BlockPool::release(int32_t block) {
  if (block < 0 || block >= num_blocks_) {
    throw std::logic_error("BlockPool::release: block " + std::to_string(block) + " not in pool");
  }
  if (!in_use_[static_cast<size_t>(block)]) {
    throw std::logic_error("BlockPool::release: double free of block " + std::to_string(block));
  }
  in_use_[static_cast<size_t>(block)] = 0;
  free_.push_back(block);
}

SessionBlocks::SessionBlocks(kv::Window window, int32_t block_size)
    : window_(window), block_size_(block_size) {
  if (block_size < 1) throw std::invalid_argument("SessionBlocks: block_size must be >= 1");
  if (!window.unbounded() && window.sinks < 0) {
    throw std::invalid_argument("SessionBlocks: negative sinks");
  }
}

bool SessionBlocks::append(BlockPool& pool, int64_t n) {
  if (n < 0) throw std::invalid_argument("SessionBlocks::append: negative n");
  const int64_t have = static_cast<int64_t>(table_.size());
  const int64_t need = kv::ceil_div(tokens_ + n, block_size_);
  if (need - have > pool.free_blocks()) return false;
  for (int64_t b = have; b < need; ++b) {
    table_.push_back(pool.allocate());
    ++held_;
  }
  tokens_ += n;
  return true;
}

int32_t SessionBlocks::release_outside_window(BlockPool& pool) {
  if (window_.unbounded() || tokens_ == 0) return 0;
  const int64_t q =
      tokens_;  // the next query's position; later queries see a subset of what it sees
  int32_t freed = 0;
  const int64_t nblocks = static_cast<int64_t>(table_.size());
  for (int64_t b = first_unreleased_; b < nblocks; ++b) {
    const int64_t first = b * block_size_;
    const int64_t last = std::min(first + block_size_, tokens_) - 1;
    // The visible set is [0, S) u [q - W, q]: a block meets it iff its first position is a sink or
    // its last position is in the window, so two calls of the shared rule decide the whole block.
    // A partial last block also stays: the next append writes into it (this matters only when
    // W = 0, and is what kv::resident_blocks counts).
    const bool partial_last = last == tokens_ - 1 && tokens_ % block_size_ != 0;
    if (kv::key_visible(q, first, window_) || kv::key_visible(q, last, window_) || partial_last) {
      if (first >= window_.sinks) break;  // first block in the window: all later ones are too
      continue;                           // a pinned sink block
    }
    if (table_[static_cast<size_t>(b)] >= 0) {
      pool.release(table_[static_cast<size_t>(b)]);
      table_[static_cast<size_t>(b)] = -1;
      --held_;
      ++freed;
    }
    first_unreleased_ = b + 1;
  }
  return freed;
}

void SessionBlocks::release_all(BlockPool& pool) {
  for (int32_t& b : table_) {
    if (b >= 0) pool.release(b);
    b = -1;
  }
  held_ = 0;
}

int32_t SessionBlocks::physical_block(int64_t pos) const {
  if (pos < 0 || pos >= tokens_) throw std::out_of_range("SessionBlocks::physical_block");
  return table_[static_cast<size_t>(pos / block_size_)];
}

std::vector<int32_t> dense_block_tables(std::span<const SessionBlocks* const> sessions,
                                        int32_t max_blocks) {
  std::vector<int32_t> out(sessions.size() * static_cast<size_t>(max_blocks), -1);
  for (size_t s = 0; s < sessions.size(); ++s) {
    const auto& t = sessions[s]->table();
    if (static_cast<int64_t>(t.size()) > max_blocks) {
      throw std::invalid_argument("dense_block_tables: session " + std::to_string(s) + " has " +
                                  std::to_string(t.size()) + " blocks > max_blocks " +
                                  std::to_string(max_blocks));
    }
    for (size_t b = 0; b < t.size(); ++b) out[s * static_cast<size_t>(max_blocks) + b] = t[b];
  }
  return out;
}

}  // namespace metronome::kernels
