// Append kernel: writes one frame's new K and V into each session's paged blocks.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "kernels/cuda_check.h"
#include "kernels/dtype.h"
#include "kernels/paged_kv.h"

namespace metronome::kernels {

struct AppendKvParams {
  Dtype dtype = Dtype::kBF16;  // of the cache and of k_new / v_new (2-byte elements)
  PagedKv<void> kv;            // device pools
  FrameBatch batch;            // device arrays; host fields (num_sessions, max_q_len) size the grid
  const void* k_new = nullptr;  // [total_q, kv_heads, head_dim], rows new_row_stride apart
  const void* v_new = nullptr;  // [total_q, kv_heads, head_dim], rows new_row_stride apart
  int64_t new_row_stride = 0;   // elements between tokens; 0: kv_heads * head_dim. Lets the append
                                // read K and V in place from a fused QKV projection. Multiple of 8.
  int32_t* error_flag = nullptr;  // optional device int: set to 1 if a target block is released
};

Status append_kv(const AppendKvParams& p, cudaStream_t stream);

}  // namespace metronome::kernels
