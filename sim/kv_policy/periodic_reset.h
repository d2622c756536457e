// kv_policy.type = "periodic_reset": a session's KV is cleared every reset_frames (K) frames, as
// one omni model's reference code clears its audio KV every 1,500 steps (about 30 s). Frames 0,
// K, 2K, ... start from nothing: the model forgets everything before them, its prompt too. A
// session's blocks climb for K frames and all go back once frame K - 1 is served, so its peak is
// what it holds while frame K - 1 is served: ceil(context_at(K) / block) blocks (positions start
// again from 0 after a reset, so a cycle's blocks fill from the first).
#pragma once

#include <cstdint>
#include <string>

#include "sim/config/config_limits.h"
#include "sim/kv_policy/kv_policy.h"

namespace metronome {

class PeriodicResetKv final : public KvPolicy {
 public:
  explicit PeriodicResetKv(int64_t reset_frames) : k_(reset_frames) {}
  std::string type() const override { return "periodic_reset"; }
  void write(nlohmann::json& section) const override { section["reset_frames"] = k_; }
  std::string describe() const override {
    return "periodic_reset every " + std::to_string(k_) + " frames";
  }
  // ctx = context_at(m) for the frame m about to run; the last reset was before frame m - m % K.
  int64_t resident_from(int64_t ctx, const kv::FrameGrowth& g) const override {
    const int64_t m = ctx <= 0 ? 0 : (ctx - g.prompt) / g.per_frame;
    return g.context_at(m - m % k_);
  }
  // The cleared KV starts again at position 0, in a fresh block table.
  bool restarts_positions() const override { return true; }
  bool bounded() const override { return true; }
  // Between steps: what frames 0..K-2 appended, once frame K - 2 is served.
  int64_t max_resident_tokens(const kv::FrameGrowth& g) const override {
    return g.context_at(k_ - 1);
  }
  int64_t max_step_blocks(const kv::FrameGrowth& g, kv::BlockSize bs) const override {
    return bs.ceil_div(g.context_at(k_));
  }
  std::string check(const kv::FrameGrowth& g, int64_t) const override {
    if (g.per_frame > 0) return {};
    return "reset_frames: a reset counts frames by the KV they append, and a frame appends none "
           "(workload.kv_tokens_per_frame is 0); expected a workload whose frames append KV";
  }

  static std::shared_ptr<const KvPolicy> parse(JsonSection& k) {
    return std::make_shared<PeriodicResetKv>(k.integer("reset_frames", std::nullopt, 1, kMaxCount));
  }

 private:
  int64_t k_;
};

}  // namespace metronome
