// The exhaustion policies: one line each.
#include "sim/exhaustion/exhaustion_policy.h"
#include "sim/exhaustion/preempt_recompute.h"
#include "sim/exhaustion/stall.h"

namespace metronome {

PolicyRegistry<ExhaustionPolicy>& exhaustion_policies() {
  static PolicyRegistry<ExhaustionPolicy> r = [] {
    PolicyRegistry<ExhaustionPolicy> p;
    p.add("stall", {}, &StallOnExhaustion::parse);
    p.add("preempt_recompute", {}, &PreemptRecompute::parse);
    return p;
  }();
  return r;
}

}  // namespace metronome
