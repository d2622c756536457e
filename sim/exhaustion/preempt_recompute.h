// engine.exhaustion = "preempt_recompute": vLLM's answer to a full pool: evict the newest admitted
// sessions holding blocks until the frame fits; if none is newer, the frame's own session is the
// newest that holds blocks, and it is evicted. An evicted session recomputes its visible context
// when it next runs; its frame is retried at every step.
#pragma once

#include "sim/exhaustion/exhaustion_policy.h"

namespace metronome {

class PreemptRecompute final : public ExhaustionPolicy {
 public:
  std::string type() const override { return "preempt_recompute"; }
  bool preempts() const override { return true; }
  bool make_room(ExhaustionSite& site, int64_t id, int64_t need, Time now) const override {
    return site.evict_newer_than(id, need, now);
  }
  Refused on_refused(ExhaustionSite& site, int64_t id, bool holds_blocks, Time now) const override {
    if (holds_blocks) site.evict(id, now);
    return Refused::kRetry;
  }
  static std::shared_ptr<const ExhaustionPolicy> parse(JsonSection&) {
    return std::make_shared<PreemptRecompute>();
  }
};

}  // namespace metronome
