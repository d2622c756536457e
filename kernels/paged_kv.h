// Plain views of a paged KV cache and of one frame's batch, shared by the CUDA kernels and the CPU
// references (the pointers are device or host memory depending on who runs).
//
// Layout follows vLLM/FlashInfer "NHD" paging: the cache of one layer is a pool of blocks, each
// holding block_size consecutive token positions of one session for every KV head. A session's
// block table maps its logical block (position / block_size) to a physical block of the pool; -1
// marks a block never allocated or released by the windowed policy (it must never be read).
#pragma once

#include <cstdint>

#include "core/kv_window.h"

namespace metronome::kernels {

// One layer's K and V pools. T: __nv_bfloat16 / __half on the GPU, float in the CPU reference.
template <typename T>
struct PagedKv {
  T* k = nullptr;           // [num_blocks, block_size, kv_heads, head_dim]
  T* v = nullptr;           // [num_blocks, block_size, kv_heads, head_dim]
  int32_t num_blocks = 0;   // blocks in the pool
  int32_t block_size = 16;  // token positions per block, any value >= 1
  int32_t kv_heads = 0;
  int32_t head_dim = 0;

  // Element offset of (block, slot, head, 0) in k or v.
  constexpr METRONOME_HD int64_t offset(int64_t block, int64_t slot, int64_t head) const {
    return ((block * block_size + slot) * kv_heads + head) * head_dim;
  }
};

// The sessions stepped together in one frame. Session s brings q_len(s) = q_start[s+1] - q_start[s]
// new tokens at positions [seq_lens[s] - q_len(s), seq_lens[s]); they are appended to the cache
// before attention runs, so a query attends to the cached context and, causally, to its own frame.
struct FrameBatch {
  int32_t num_sessions = 0;
  const int32_t* q_start = nullptr;       // [num_sessions + 1] prefix sums of q_len; q_start[0] = 0
  const int32_t* seq_lens = nullptr;      // [num_sessions] tokens cached after this frame's append
  const int32_t* block_tables = nullptr;  // [num_sessions, max_blocks] physical block or -1
  int32_t max_blocks = 0;                 // row stride of block_tables
  int32_t max_q_len = 0;                  // max over sessions of q_len (sizes GPU grids)
  int32_t max_seq_len = 0;                // max over sessions of seq_lens (sizes the split-KV grid)

  constexpr METRONOME_HD int32_t q_len(int32_t s) const { return q_start[s + 1] - q_start[s]; }
  constexpr METRONOME_HD int32_t total_q() const { return q_start[num_sessions]; }
  // Physical block holding position pos of session s (-1 if released).
  constexpr METRONOME_HD int32_t physical_block(int32_t s, int64_t pos, int32_t block_size) const {
    return block_tables[static_cast<int64_t>(s) * max_blocks + pos / block_size];
  }
};

}  // namespace metronome::kernels
