// kv_policy.type = "windowed": the last window_tokens (W) tokens plus the first sink_tokens (S)
// attention sinks stay resident; resident KV is bounded by S + W plus the frame being ingested.
#pragma once

#include <cstdint>
#include <string>

#include "sim/config_limits.h"
#include "sim/kv_policy/kv_policy.h"

namespace metronome {

class WindowedKv final : public KvPolicy {
 public:
  WindowedKv(int64_t window_tokens, int64_t sink_tokens) : w_{window_tokens, sink_tokens} {}
  std::string type() const override { return "windowed"; }
  kv::Window window() const override { return w_; }
  void write(nlohmann::json& section) const override {
    section["window_tokens"] = w_.window;
    section["sink_tokens"] = w_.sinks;
  }
  std::string describe() const override {
    return "windowed W=" + std::to_string(w_.window) + " S=" + std::to_string(w_.sinks);
  }

  static std::shared_ptr<const KvPolicy> parse(JsonSection& k) {
    return std::make_shared<WindowedKv>(k.integer("window_tokens", std::nullopt, 0, kMaxCount),
                                        k.integer("sink_tokens", 0, 0, kMaxCount));
  }

 private:
  kv::Window w_;
};

}  // namespace metronome
