// Attention of one step's queries over a paged KV cache under each sequence's kv::Window, in float,
// with the positions a streaming cache gives its tokens.
//
// Which keys a query at position p sees is decided by kv::key_visible alone. Positions for RoPE:
//   kOriginal: every token keeps its position in the text.
//   kCache (StreamingLLM): positions are slots in the cache, so a query sits at
//     kv::visible_keys(p, w) - 1 and the sinks at 0..S-1, the window right before the query.
// Keys are cached rotated at their original positions. A window key is at the same distance from
// the query in both schemes (RoPE scores depend on the distance only), so only a sink that the
// window has left behind (k < S and k < kv::window_start(p, w)) differs: its score uses the query
// rotated at its cache position (q_sink) instead of its original one (q_orig). In kOriginal mode,
// or before the window leaves the sinks, q_sink equals q_orig.
//
// Formula per sequence s, query t at position p, head h, KV head g = h / (q_heads / kv_heads):
//     score(k) = scale * q(t, h) . K[k, g],  q = q_sink for a left-behind sink, else q_orig
//     out[t, h] = sum over visible k of softmax(score)(k) V[k, g]
// Keys of one step are gathered once per sequence and KV head (sinks left of the first query's
// window, then that window to the last query), scored as one matrix product for the step's queries
// and masked key by key with the rule.
#pragma once

#include <cstdint>
#include <span>

#include "core/kv_window.h"
#include "kernels/paged_kv.h"

namespace metronome::quality {

class Workers;

enum class PositionMode { kCache, kOriginal };

// RoPE position of the query at p: its cache slot (kCache) or p (kOriginal).
constexpr int64_t query_rope_position(int64_t p, kv::Window w, PositionMode mode) {
  return mode == PositionMode::kCache ? kv::visible_keys(p, w) - 1 : p;
}

// q_orig, q_sink, out: [total_q, q_heads, head_dim]; windows: [num_sessions].
// Throws std::logic_error if a visible key is in a released block. The (sequence, KV head) tasks
// are shared among `workers` when given (each task writes only its own heads' outputs, so the
// result is the same bytes for any number of workers).
void window_attention(kernels::PagedKv<const float> kv, const kernels::FrameBatch& batch,
                      std::span<const kv::Window> windows, int32_t q_heads, float scale,
                      std::span<const float> q_orig, std::span<const float> q_sink,
                      std::span<float> out, Workers* workers = nullptr);

}  // namespace metronome::quality
