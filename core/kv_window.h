// The KV visibility rule and paged-block arithmetic, shared by the CUDA kernels, their CPU
// references and the simulator's pool accounting so that the three cannot drift apart.
//
// Positions are absolute token indices within a session, 0-based. A query at position q sees key k
// iff
//     k <= q  and  (unbounded  or  k < S  or  q - k <= W)
// i.e. the S attention-sink tokens, the W tokens before the query, and the query itself. After a
// session has cached ctx tokens, the next query (at ctx) needs keys [0, S) and [ctx - W, ctx):
// resident KV is at most S + W tokens, plus the frame being ingested while a step runs.
//
// Plain C++ (no CUDA headers) so that sim/ can include it; the macro only decorates under nvcc.
#pragma once

#include <cstdint>

#if defined(__CUDACC__)
#define METRONOME_HD __host__ __device__
#else
#define METRONOME_HD
#endif

namespace metronome::kv {

// A window of W tokens with S sinks; window < 0 means unbounded (all context visible).
struct Window {
  int64_t window = -1;  // W, tokens before the query; < 0: unbounded
  int64_t sinks = 0;    // S, pinned first tokens of the session

  constexpr METRONOME_HD bool unbounded() const { return window < 0; }
};

constexpr METRONOME_HD int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

// A block size with its division precomputed: a power of two (the usual 16) divides by shifting.
// The simulator's pool accounting divides several times per frame, millions of frames per run.
class BlockSize {
 public:
  constexpr METRONOME_HD BlockSize(int64_t v)
      : value_(v), shift_(-1) {  // NOLINT: implicit on purpose
    for (int s = 0; s < 62; ++s) {
      if ((int64_t{1} << s) == v) shift_ = s;
    }
  }
  constexpr METRONOME_HD int64_t value() const { return value_; }
  // floor(a / value) for a >= 0.
  constexpr METRONOME_HD int64_t div(int64_t a) const {
    return shift_ >= 0 ? a >> shift_ : a / value_;
  }
  constexpr METRONOME_HD int64_t ceil_div(int64_t a) const { return div(a + value_ - 1); }

 private:
  int64_t value_;
  int shift_;
};

// Number of tokens in the last (possibly partial) block of a run of `tokens` tokens; 0 when empty.
constexpr METRONOME_HD int64_t last_block_len(int64_t tokens, int64_t block_size) {
  return tokens <= 0 ? 0 : tokens - (ceil_div(tokens, block_size) - 1) * block_size;
}

constexpr METRONOME_HD bool key_visible(int64_t q, int64_t k, Window w) {
  return k <= q && (w.unbounded() || k < w.sinks || q - k <= w.window);
}

// First key position a query at q sees outside the sinks (the window's left edge).
constexpr METRONOME_HD int64_t window_start(int64_t q, Window w) {
  if (w.unbounded() || q <= w.window) return 0;
  return q - w.window;
}

// The most keys any query sees under a window: its S sinks, the W keys before it and itself. The
// cap on per-query attention work wherever a pass is costed (sim/cost/pass_shape.h).
constexpr METRONOME_HD int64_t max_visible_keys(Window w) { return w.sinks + w.window + 1; }

// Keys a query at q attends to: min(q+1, S + W + 1) for a window, q + 1 unbounded.
constexpr METRONOME_HD int64_t visible_keys(int64_t q, Window w) {
  const int64_t start = window_start(q, w);
  const int64_t sinks = start > w.sinks ? w.sinks : start;  // sinks left of the window
  return sinks + (q + 1 - start);
}

// Blocks covering positions [0, min(S, end)) U [max(0, start), end): the blocks a session must
// hold.
constexpr METRONOME_HD int64_t blocks_covering(int64_t start, int64_t end, int64_t sinks,
                                               BlockSize block_size) {
  if (end <= 0) return 0;
  if (start < 0) start = 0;
  const int64_t sink_blocks = block_size.ceil_div(sinks < end ? sinks : end);
  const int64_t first = block_size.div(start);
  const int64_t last = block_size.div(end - 1);
  const int64_t from = first > sink_blocks ? first : sink_blocks;
  return sink_blocks + (last >= from ? last - from + 1 : 0);
}

// Blocks held between steps by a session that has cached ctx tokens.
constexpr METRONOME_HD int64_t resident_blocks(int64_t ctx, Window w, BlockSize block_size) {
  return blocks_covering(window_start(ctx, w), ctx, w.unbounded() ? 0 : w.sinks, block_size);
}

// Blocks held while a step appends n tokens to a context of ctx: the window of the step's first
// query plus every new token.
constexpr METRONOME_HD int64_t step_blocks(int64_t ctx, int64_t n, Window w, BlockSize block_size) {
  return blocks_covering(window_start(ctx, w), ctx + n, w.unbounded() ? 0 : w.sinks, block_size);
}

// Once a session has cached settled_from(w) tokens (the sinks, the window and one block; unbounded,
// one token) its window's left edge is past the sinks' blocks, so a step's block counts move only
// with the block boundaries its tokens cross. The simulator serves most frames there, so it uses
// these closed forms of the two differences (tests check them against the functions above):
//   settled_new_blocks   = step_blocks(ctx, n) - resident_blocks(ctx)       (the step allocates)
//   settled_freed_blocks = step_blocks(ctx, n) - resident_blocks(ctx + n)   (the step frees)
//   settled_resident_blocks = resident_blocks(ctx)                             (held between steps)
//   settled_cached_cap   : visible_keys(ctx) - 1 = min(ctx, settled_cached_cap(w))
constexpr METRONOME_HD int64_t settled_from(Window w, BlockSize block_size) {
  return w.unbounded() ? 1 : w.sinks + w.window + block_size.value();
}
constexpr METRONOME_HD int64_t settled_new_blocks(int64_t ctx, int64_t n, BlockSize block_size) {
  return block_size.div(ctx + n - 1) - block_size.div(ctx - 1);
}
constexpr METRONOME_HD int64_t settled_freed_blocks(int64_t ctx, int64_t n, Window w,
                                                    BlockSize block_size) {
  return w.unbounded() ? 0 : block_size.div(ctx + n - w.window) - block_size.div(ctx - w.window);
}
// The sinks' blocks and those of the window's W keys before the next query (unbounded: all).
constexpr METRONOME_HD int64_t settled_resident_blocks(int64_t ctx, Window w,
                                                       BlockSize block_size) {
  return w.unbounded() ? block_size.div(ctx - 1) + 1
                       : block_size.ceil_div(w.sinks) + block_size.div(ctx - 1) -
                             block_size.div(ctx - w.window) + 1;
}
constexpr METRONOME_HD int64_t settled_cached_cap(Window w) {
  return w.unbounded() ? INT64_MAX : w.sinks + w.window;
}

}  // namespace metronome::kv
