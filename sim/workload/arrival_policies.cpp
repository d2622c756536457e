// The arrival policies: one line each.
#include "sim/workload/all_at_once_arrivals.h"
#include "sim/workload/arrivals.h"
#include "sim/workload/fixed_interval_arrivals.h"
#include "sim/workload/poisson_arrivals.h"
#include "sim/workload/rate_profile.h"
#include "sim/workload/uniform_arrivals.h"

namespace metronome {

PolicyRegistry<ArrivalPolicy>& arrival_policies() {
  static PolicyRegistry<ArrivalPolicy> r = [] {
    PolicyRegistry<ArrivalPolicy> p;
    p.add("all_at_once", {"start_s", "sessions"}, &AllAtOnceArrivals::parse);
    p.add("fixed_interval", {"start_s", "sessions", "interval_s"}, &FixedIntervalArrivals::parse);
    p.add("poisson", {"start_s", "rate_per_s", "max_sessions"}, &PoissonArrivals::parse);
    p.add("profile", {"start_s", "profile", "profile_file"}, &ProfileArrivals::parse);
    p.add("uniform", {"start_s", "sessions", "within_s"}, &UniformArrivals::parse);
    return p;
  }();
  return r;
}

}  // namespace metronome
