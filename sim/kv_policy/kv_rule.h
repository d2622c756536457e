// A KV policy on a workload's growth and block size: the blocks a session holds and frees at each
// frame and the cached keys a pass reads for it, which the engine, the first-order prediction,
// pool sizing and the service bounds all ask here so that none of them can disagree. Where the
// policy is a window, the window's closed forms (core/kv_window.h); otherwise its resident_from.
#pragma once

#include <algorithm>
#include <cstdint>
#include <optional>

#include "core/frame_growth.h"
#include "core/kv_window.h"
#include "sim/kv_policy/kv_policy.h"

namespace metronome {

class KvRule {
 public:
  // `p` must outlive the rule.
  KvRule(const KvPolicy& p, kv::FrameGrowth g, kv::BlockSize bs)
      : general_(p.window() ? nullptr : &p),
        w_(p.window().value_or(kv::Window{})),
        g_(g),
        bs_(bs),
        sinks_(p.sinks()),
        restarts_(p.restarts_positions()),
        cap_frames_(p.context_cap() ? std::optional<int64_t>(g.frames_within(*p.context_cap()))
                                    : std::nullopt),
        bound_(p.bounded() ? p.max_step_blocks(g, bs) : 0) {}

  // Whether the policy is a kv::Window, whose closed forms the fast paths may use.
  bool is_window() const { return general_ == nullptr; }
  // The window passes are priced under: the policy's, or unbounded for a rule that drops tokens
  // only between steps (within a step every query sees every resident key and the step's own).
  kv::Window pricing() const { return w_; }
  const kv::FrameGrowth& growth() const { return g_; }
  kv::BlockSize block_size() const { return bs_; }

  // kWindow: the caller has seen is_window() (the engine's per-frame loops test it once a step,
  // not once a call).
  // Blocks held between steps by a session that has cached ctx tokens.
  template <bool kWindow = false>
  int64_t resident_blocks(int64_t ctx) const {
    if (kWindow || !general_) return kv::resident_blocks(ctx, w_, bs_);
    return blocks(from(ctx), ctx);
  }
  // Blocks held while a step appends n tokens to a context of ctx.
  template <bool kWindow = false>
  int64_t step_blocks(int64_t ctx, int64_t n) const {
    if (kWindow || !general_) return kv::step_blocks(ctx, n, w_, bs_);
    return blocks(from(ctx), ctx + n);
  }
  // Blocks held while frame m is served: its peak over that frame.
  int64_t step_blocks_at(int64_t m) const { return step_blocks(g_.context_at(m), g_.appended(m)); }
  // The most blocks a session holds over its first `frames` frames, or more (never less: the
  // memory guard reserves it, capacity divides the pool by it). No policy holds more blocks than
  // all its tokens cover, nor more than its bound: the lesser of the two is exact while the
  // session still holds every token (a call shorter than a window's fill holds what unbounded KV
  // would) and once its blocks reach the bound; between, from a policy's first drop to its
  // top (a window full but not yet straddling a block, a saw-tooth's rise), it may be above the
  // most held, never above the bound.
  int64_t most_blocks_through(int64_t frames) const {
    // (A call of 1e15 frames would overflow the token count: 2^62 tokens is past any bound.)
    const int64_t m = std::min(
        frames - 1, ((int64_t{1} << 62) - g_.prompt) / std::max<int64_t>(1, g_.per_frame) - 1);
    const int64_t all = bs_.ceil_div(g_.context_at(m) + g_.appended(m));
    return bound_ > 0 ? std::min(bound_, all) : step_blocks_at(m);
  }
  // KvPolicy::max_step_blocks for a bounded policy, else 0.
  int64_t bound() const { return bound_; }
  // Cached keys visible to the next query of a session that has cached ctx tokens.
  template <bool kWindow = false>
  int64_t cached(int64_t ctx) const {
    if (kWindow || !general_) return kv::visible_keys(ctx, w_) - 1;
    const int64_t start = from(ctx);
    return (start > sinks_ ? sinks_ : start) + (ctx - start);
  }
  // Tokens held between steps at a context of ctx.
  int64_t resident_tokens(int64_t ctx) const { return cached(ctx); }
  // Where the policy caps the context: the frames a call serves before its context would pass
  // the cap, the most m with context_at(m) <= cap (KvPolicy::check keeps it at least 1).
  std::optional<int64_t> cap_frames() const { return cap_frames_; }

 private:
  int64_t from(int64_t ctx) const { return general_->resident_from(ctx, g_); }
  // Blocks covering the sinks and positions [start, end), counted from where the session's
  // positions begin: at start, for a rule that restarts them there.
  int64_t blocks(int64_t start, int64_t end) const {
    const int64_t origin = restarts_ ? start : 0;
    return kv::blocks_covering(start - origin, end - origin, sinks_, bs_);
  }

  const KvPolicy* general_;  // null where the policy is a window
  kv::Window w_;
  kv::FrameGrowth g_;
  kv::BlockSize bs_;
  int64_t sinks_;
  bool restarts_;
  std::optional<int64_t> cap_frames_;
  int64_t bound_;  // KvPolicy::max_step_blocks where the policy is bounded, else 0
};

}  // namespace metronome
