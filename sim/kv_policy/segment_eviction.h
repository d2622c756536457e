// kv_policy.type = "segment_eviction": a streaming session keeps its KV as whole segments of
// segment_tokens (G) tokens, at most `segments` (N) of them counting the one being filled; when a
// step has started segment N + 1 the oldest whole segment is dropped, positions kept (the tokens
// are gone, not renumbered), as a vLLM RFC proposes for bounded-memory streaming input. G is a
// whole number of blocks, so blocks go back a segment at a time and a session's memory is a
// saw-tooth instead of flat: between steps, once N - 1 segments are full, it holds
// (N - 1) G + (ctx mod G) tokens, from (N - 1) G up to (N - 1) G + r_max, where
//   r_max = G - gcd(n, G) + (prompt mod gcd(n, G))        (n: tokens per frame)
// is the largest remainder the frames' contexts prompt + m n reach. Within a step every query sees
// every resident key and the step's own.
#pragma once

#include <algorithm>
#include <cstdint>
#include <numeric>
#include <string>

#include "sim/config/config_limits.h"
#include "sim/kv_policy/kv_policy.h"

namespace metronome {

class SegmentEvictionKv final : public KvPolicy {
 public:
  SegmentEvictionKv(int64_t segment_tokens, int64_t segments) : g_(segment_tokens), n_(segments) {}
  std::string type() const override { return "segment_eviction"; }
  void write(nlohmann::json& section) const override {
    section["segment_tokens"] = g_;
    section["segments"] = n_;
  }
  std::string describe() const override {
    return "segment_eviction " + std::to_string(n_) + " x " + std::to_string(g_) + " tokens";
  }
  // The next token starts or fills segment ctx / G; the N - 1 before it stay.
  int64_t resident_from(int64_t ctx, const kv::FrameGrowth&) const override {
    return std::max<int64_t>(0, (ctx / g_ - (n_ - 1)) * g_);
  }
  bool bounded() const override { return true; }
  // The saw-tooth's top between steps.
  int64_t max_resident_tokens(const kv::FrameGrowth& g) const override {
    return (n_ - 1) * g_ + r_max(g);
  }
  // A step holds the resident tokens and its own; frame 0 holds the prompt and its frame.
  int64_t max_step_blocks(const kv::FrameGrowth& g, kv::BlockSize bs) const override {
    return std::max(bs.ceil_div(g.appended(0)), bs.ceil_div(max_resident_tokens(g) + g.per_frame));
  }
  std::string check(const kv::FrameGrowth&, int64_t block_size) const override {
    if (g_ % block_size == 0) return {};
    return "segment_tokens: expected a whole number of blocks (engine.block_size " +
           std::to_string(block_size) + " tokens), so that a segment frees whole blocks; got " +
           std::to_string(g_);
  }

  static std::shared_ptr<const KvPolicy> parse(JsonSection& k) {
    return std::make_shared<SegmentEvictionKv>(
        k.integer("segment_tokens", std::nullopt, 1, kMaxCount),
        k.integer("segments", std::nullopt, 1, 1'000'000));
  }

 private:
  // The largest ctx mod G over the contexts prompt + m n (m >= 1).
  int64_t r_max(const kv::FrameGrowth& g) const {
    const int64_t d = std::gcd(g.per_frame, g_);  // gcd(0, G) = G: every context is the prompt's
    return g_ - d + g.prompt % d;
  }

  int64_t g_, n_;
};

}  // namespace metronome
