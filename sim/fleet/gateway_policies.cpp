// The gateway admission policies: one line each. The fields lists are the keys each type reads.
#include "sim/fleet/fleet_aimd.h"
#include "sim/fleet/fleet_cap.h"
#include "sim/fleet/gateway.h"
#include "sim/fleet/open_gateway.h"
#include "sim/fleet/shed.h"
#include "sim/fleet/token_bucket.h"

namespace metronome {

PolicyRegistry<GatewayPolicy>& gateway_policies() {
  static PolicyRegistry<GatewayPolicy> r = [] {
    PolicyRegistry<GatewayPolicy> p;
    p.add("none", {}, &OpenGatewayPolicy::parse);
    p.add("token_bucket", {"rate_per_s", "burst"}, &TokenBucketPolicy::parse);
    p.add("shed", {"max_queue_depth", "max_kv_usage"}, &ShedPolicy::parse);
    p.add("static", {"cap"}, &FleetCapPolicy::parse);
    std::vector<std::string> aimd(std::begin(ControlLoop::kFields), std::end(ControlLoop::kFields));
    aimd.insert(aimd.end(),
                {"increase", "decrease_factor", "low_fraction", "high_fraction", "over_replicas"});
    p.add("aimd", aimd, &FleetAimdPolicy::parse);
    return p;
  }();
  return r;
}

}  // namespace metronome
