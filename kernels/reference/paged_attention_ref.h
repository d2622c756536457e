// CPU references (plain C++, double accumulation) for the paged-KV kernels: append and attention.
//
// They are the ground truth of the GPU tests and, through HostKvCache, the attention of the CPU
// real-time engine, so they are written to be read first and to be reasonably fast second:
// attention loops only over the keys a query can see (sinks, then the window), never over the whole
// context.
//
// Formula, per session s, new query i (position p = seq_len - q_len + i), query head h, KV head
// g = h / (q_heads / kv_heads):
//     out[t, h, :] = sum_k softmax_k(scale * q[t, h, :] . K[k, g, :]) V[k, g, :]
// over keys k with kv::key_visible(p, k, window); t = q_start[s] + i.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "core/kv_window.h"
#include "kernels/paged_kv.h"

namespace metronome::kernels::reference {

// A host-memory paged cache of one layer (float storage; tests store bf16-rounded values in it).
class HostKvCache {
 public:
  HostKvCache(int32_t num_blocks, int32_t block_size, int32_t kv_heads, int32_t head_dim);

  PagedKv<float> view();
  PagedKv<const float> view() const;
  std::vector<float>& k() { return k_; }
  std::vector<float>& v() { return v_; }
  const std::vector<float>& k() const { return k_; }
  const std::vector<float>& v() const { return v_; }

 private:
  int32_t num_blocks_, block_size_, kv_heads_, head_dim_;
  std::vector<float> k_;  // [num_blocks, block_size, kv_heads, head_dim]
  std::vector<float> v_;  // [num_blocks, block_size, kv_heads, head_dim]
};

// Writes each session's new tokens into its blocks: position p = seq_len - q_len + i goes to block
// table[p / block_size], slot p % block_size. Throws if that block is released (-1).
//   k_new, v_new: [total_q, kv_heads, head_dim]
void append_kv_ref(PagedKv<float> kv, const FrameBatch& batch, std::span<const float> k_new,
                   std::span<const float> v_new);

struct AttentionShape {
  int32_t q_heads = 0;  // a multiple of kv.kv_heads (grouped-query attention)
  float scale = 0.f;    // usually 1 / sqrt(head_dim)
};

// Paged attention for one frame.
//   q:   [total_q, q_heads, head_dim]
//   out: [total_q, q_heads, head_dim]
// Throws std::logic_error if a visible key lives in a released block.
void paged_attention_ref(PagedKv<const float> kv, const FrameBatch& batch, kv::Window window,
                         AttentionShape shape, std::span<const float> q, std::span<float> out);

// Dense single-head attention under an explicit mask, the check on the paged version:
//   q: [nq, d], k, v: [nk, d], mask: [nq, nk] (nonzero = visible), out: [nq, d].
// A row with no visible key is an error (throws).
void masked_attention_ref(std::span<const float> q, std::span<const float> k,
                          std::span<const float> v, std::span<const uint8_t> mask, int32_t nq,
                          int32_t nk, int32_t d, float scale, std::span<float> out);

}  // namespace metronome::kernels::reference
