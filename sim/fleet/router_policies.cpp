// The routers: one line each. The fields lists are the keys each type reads (besides type).
#include "sim/fleet/latency_router.h"
#include "sim/fleet/least_sessions.h"
#include "sim/fleet/most_free_blocks.h"
#include "sim/fleet/power_of_two.h"
#include "sim/fleet/round_robin.h"
#include "sim/fleet/router.h"

namespace metronome {

PolicyRegistry<RouterPolicy>& router_policies() {
  static PolicyRegistry<RouterPolicy> r = [] {
    PolicyRegistry<RouterPolicy> p;
    p.add("round_robin", {}, &RoundRobinPolicy::parse);
    p.add("least_sessions", {}, &LeastSessionsPolicy::parse);
    p.add("most_free_blocks", {}, &MostFreeBlocksPolicy::parse);
    p.add("p2c", {"by"}, &PowerOfTwoPolicy::parse);
    p.add("latency", {}, &LatencyRouterPolicy::parse);
    return p;
  }();
  return r;
}

}  // namespace metronome
