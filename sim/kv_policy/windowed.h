// kv_policy.type = "windowed": the last window_tokens (W) tokens plus the first sink_tokens (S)
// attention sinks stay resident; resident KV is bounded by S + W plus the frame being ingested.
#pragma once

#include <algorithm>
#include <cstdint>
#include <string>

#include "sim/config/config_limits.h"
#include "sim/kv_policy/kv_policy.h"

namespace metronome {

class WindowedKv final : public KvPolicy {
 public:
  WindowedKv(int64_t window_tokens, int64_t sink_tokens) : w_{window_tokens, sink_tokens} {}
  std::string type() const override { return "windowed"; }
  void write(nlohmann::json& section) const override {
    section["window_tokens"] = w_.window;
    section["sink_tokens"] = w_.sinks;
  }
  std::string describe() const override {
    return "windowed W=" + std::to_string(w_.window) + " S=" + std::to_string(w_.sinks);
  }
  int64_t resident_from(int64_t ctx, const kv::FrameGrowth&) const override {
    return kv::window_start(ctx, w_);
  }
  int64_t sinks() const override { return w_.sinks; }
  bool bounded() const override { return true; }
  int64_t max_resident_tokens(const kv::FrameGrowth&) const override {
    return w_.window + w_.sinks;
  }
  int64_t max_step_blocks(const kv::FrameGrowth& g, kv::BlockSize bs) const override {
    // Once the window is full the holding cycles with the block alignment: scanning that far is
    // exact.
    const int64_t settle =
        (w_.window + w_.sinks + g.prompt) / std::max<int64_t>(1, g.per_frame) + 2 * bs.value() + 4;
    if (settle > 2'000'000) {  // too far to scan: the bound, sinks + window + frame 0, rounded up
      return kv::ceil_div(w_.sinks, bs.value()) +
             kv::ceil_div(w_.window + g.appended(0), bs.value()) + 1;
    }
    int64_t most = 0;
    for (int64_t m = 0; m <= settle; ++m) most = std::max(most, g.step_blocks_at(m, w_, bs));
    return most;
  }
  std::optional<kv::Window> window() const override { return w_; }

  static std::shared_ptr<const KvPolicy> parse(JsonSection& k) {
    return std::make_shared<WindowedKv>(k.integer("window_tokens", std::nullopt, 0, kMaxCount),
                                        k.integer("sink_tokens", 0, 0, kMaxCount));
  }

 private:
  kv::Window w_;
};

}  // namespace metronome
