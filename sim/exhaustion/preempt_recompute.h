// engine.exhaustion = "preempt_recompute": vLLM's answer to a full pool: evict the newest admitted
// sessions holding blocks until the frame fits; an evicted session recomputes its visible context
// when it next runs.
#pragma once

#include "sim/exhaustion/exhaustion_policy.h"

namespace metronome {

class PreemptRecompute final : public ExhaustionPolicy {
 public:
  std::string type() const override { return "preempt_recompute"; }
  Response response() const override { return Response::kPreemptNewest; }
  static std::shared_ptr<const ExhaustionPolicy> parse(JsonSection&) {
    return std::make_shared<PreemptRecompute>();
  }
};

}  // namespace metronome
