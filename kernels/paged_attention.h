// Paged attention for one frame of a batch of sessions (decode when every q_len is 1), unbounded or
// windowed with sinks; the same contract as reference::paged_attention_ref.
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

#include "core/kv_window.h"
#include "kernels/cuda_check.h"
#include "kernels/dtype.h"
#include "kernels/paged_kv.h"

namespace metronome::kernels {

struct PagedAttentionParams {
  Dtype dtype = Dtype::kBF16;  // of q, the cache and out
  PagedKv<const void> kv;      // device pools; head_dim 64 or 128
  FrameBatch batch;            // device arrays; its host fields (num_sessions, max_q_len,
                               // max_seq_len) size the grid and must bound the device values
  int32_t total_q = 0;         // host copy of batch.q_start[num_sessions]
  kv::Window window{};         // window < 0 selects the unbounded kernel, else the windowed one
  int32_t q_heads = 0;         // a multiple of kv.kv_heads
  float scale = 0.f;           // softmax scale, usually 1 / sqrt(head_dim)
  const void* q = nullptr;     // [total_q, q_heads, head_dim], rows q_row_stride elements apart
  int64_t q_row_stride = 0;    // elements between tokens of q; 0: q_heads * head_dim (dense). A
                               // fused QKV projection's output is read in place with its row width.
  void* out = nullptr;         // [total_q, q_heads, head_dim], dense
  int32_t num_splits = 0;      // split-KV factor; 0 picks one that fills the device
  void* workspace = nullptr;   // device scratch of paged_attention_workspace_bytes() (if > 0)
  size_t workspace_bytes = 0;
  int32_t* error_flag = nullptr;  // optional device int: set to 1 if a visible key is released
};

// The split-KV factor the launcher will use (resolves num_splits = 0 from the device's SM count).
int32_t paged_attention_splits(const PagedAttentionParams& p);
// Scratch the launcher needs for partial results; 0 when it does not split.
size_t paged_attention_workspace_bytes(const PagedAttentionParams& p);

Status paged_attention(const PagedAttentionParams& p, cudaStream_t stream);

}  // namespace metronome::kernels
