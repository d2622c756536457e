// The duration policies: one line each.
#include "sim/workload/durations.h"
#include "sim/workload/exponential_duration.h"
#include "sim/workload/fixed_duration.h"
#include "sim/workload/lognormal_duration.h"

namespace metronome {

PolicyRegistry<DurationPolicy>& duration_policies() {
  static PolicyRegistry<DurationPolicy> r = [] {
    PolicyRegistry<DurationPolicy> p;
    p.add("fixed", {"seconds"}, &FixedDuration::parse);
    p.add("exponential", {"mean_s"}, &ExponentialDuration::parse);
    p.add("lognormal", {"median_s", "sigma"}, &LogNormalDuration::parse);
    return p;
  }();
  return r;
}

}  // namespace metronome
