// kv_policy.type = "context_cap": every token stays resident, as unbounded, until the session's
// context reaches cap_tokens, and there the call ends: one speech model's reference server keeps a
// fixed buffer of 3,000 steps (240 s at 12.5 Hz) and stops when it is full. A call serves
// frames_within(cap) = floor((cap - prompt) / tokens per frame) frames unless it hangs up first;
// the summary counts the calls the cap ended (sessions_context_capped) apart from hang-ups.
#pragma once

#include <cstdint>
#include <string>

#include "sim/config/config_limits.h"
#include "sim/kv_policy/kv_policy.h"

namespace metronome {

class ContextCapKv final : public KvPolicy {
 public:
  explicit ContextCapKv(int64_t cap_tokens) : cap_(cap_tokens) {}
  std::string type() const override { return "context_cap"; }
  void write(nlohmann::json& section) const override { section["cap_tokens"] = cap_; }
  std::string describe() const override {
    return "context_cap " + std::to_string(cap_) + " tokens";
  }
  int64_t resident_from(int64_t, const kv::FrameGrowth&) const override { return 0; }
  // The call's context is its bound: what its frames append before the cap.
  bool bounded() const override { return true; }
  int64_t max_resident_tokens(const kv::FrameGrowth& g) const override {
    return g.context_at(g.frames_within(cap_));
  }
  int64_t max_step_blocks(const kv::FrameGrowth& g, kv::BlockSize bs) const override {
    return bs.ceil_div(max_resident_tokens(g));
  }
  std::optional<int64_t> context_cap() const override { return cap_; }
  // Unbounded residency, so the window's closed forms (and the fast paths) apply.
  std::optional<kv::Window> window() const override { return kv::Window{}; }
  std::string check(const kv::FrameGrowth& g, int64_t) const override {
    if (g.per_frame > 0 && g.frames_within(cap_) >= 1) return {};
    return "cap_tokens: expected at least one frame's context, workload.prompt_tokens + "
           "kv_tokens_per_frame = " +
           std::to_string(g.context_at(1)) + " tokens (and frames that append KV), got " +
           std::to_string(cap_);
  }

  static std::shared_ptr<const KvPolicy> parse(JsonSection& k) {
    return std::make_shared<ContextCapKv>(k.integer("cap_tokens", std::nullopt, 1, kMaxCount));
  }

 private:
  int64_t cap_;
};

}  // namespace metronome
