// engine.exhaustion = "stall": the frame waits for blocks; nothing is evicted (the cliff: once the
// pool is full the engine produces nothing until sessions end).
#pragma once

#include "sim/exhaustion/exhaustion_policy.h"

namespace metronome {

class StallOnExhaustion final : public ExhaustionPolicy {
 public:
  std::string type() const override { return "stall"; }
  bool preempts() const override { return false; }
  Refused on_refused(ExhaustionSite&, int64_t, bool, Time) const override { return Refused::kWait; }
  static std::shared_ptr<const ExhaustionPolicy> parse(JsonSection&) {
    return std::make_shared<StallOnExhaustion>();
  }
};

}  // namespace metronome
