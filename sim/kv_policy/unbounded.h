// kv_policy.type = "unbounded": every token stays resident and visible (the engine default).
#pragma once

#include "sim/kv_policy/kv_policy.h"

namespace metronome {

class UnboundedKv final : public KvPolicy {
 public:
  std::string type() const override { return "unbounded"; }
  void write(nlohmann::json&) const override {}
  std::string describe() const override { return "unbounded"; }
  int64_t resident_from(int64_t, const kv::FrameGrowth&) const override { return 0; }
  bool bounded() const override { return false; }
  std::optional<kv::Window> window() const override { return kv::Window{}; }

  static std::shared_ptr<const KvPolicy> parse(JsonSection&) {
    return std::make_shared<UnboundedKv>();
  }
};

}  // namespace metronome
