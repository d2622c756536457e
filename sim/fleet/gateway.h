// Admission at the gateway (fleet.gateway): after the router chooses a replica, the gateway may
// turn the call away, and says why. A turned-away call is counted as rejected under that reason,
// never as silent (sim/fleet/fleet_result.h). The replicas' own admission (the scenario's
// admission section: AIMD, a static cap, the memory guard) still applies behind it, per replica.
// Chosen by fleet.gateway.type through gateway_policies(), one file per policy.
#pragma once

#include <cstdint>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>

#include "base/time.h"
#include "sim/fleet/replica_view.h"
#include "sim/policy/policy_registry.h"

namespace metronome {

class Gateway {
 public:
  virtual ~Gateway() = default;
  // Null to let the call through to `chosen`; else the reason (a static string) it is refused.
  // `fleet_live`: sessions live over every replica.
  virtual const char* refuse(Time now, const ReplicaView& chosen, int64_t fleet_live) = 0;
};

class GatewayPolicy {
 public:
  virtual ~GatewayPolicy() = default;
  virtual std::string type() const = 0;
  virtual void write(nlohmann::json& section) const = 0;  // its fields (`type` is the caller's)
  virtual std::unique_ptr<Gateway> make_gateway() const = 0;
};

// The registry (sim/fleet/gateway_policies.cpp); tests may add to it.
PolicyRegistry<GatewayPolicy>& gateway_policies();

}  // namespace metronome
