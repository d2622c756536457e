// Admission at the gateway (fleet.gateway): after the router chooses a replica, the gateway may
// turn the call away, and says why. A turned-away call is counted as rejected under that reason,
// never as silent (sim/fleet/fleet_result.h). The replicas' own admission (the scenario's
// admission section: AIMD, a static cap, the memory guard) still applies behind it, per replica.
// Chosen by fleet.gateway.type through gateway_policies(), one file per policy. A gateway may
// also run a control loop over the replicas' measured latency (sim/fleet/fleet_aimd.h).
#pragma once

#include <cstdint>
#include <limits>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "base/time.h"
#include "sim/admission/admission_policy.h"
#include "sim/fleet/replica_view.h"
#include "sim/policy/policy_registry.h"

namespace metronome {

class Gateway {
 public:
  virtual ~Gateway() = default;
  // Null to let the call through to `chosen`; else the reason (a static string) it is refused.
  // `fleet_live`: sessions live over every replica.
  virtual const char* refuse(Time now, const ReplicaView& chosen, int64_t fleet_live) = 0;
  // A gateway with a control loop (GatewayPolicy::control_loop): one reading, at the end of each
  // of its intervals, of every ready replica that holds sessions (its engine's measurement of the
  // interval, in s; may be +inf), in any order; it may reorder them. `fleet_live` as above.
  // Returns the fleet's signal it acted on (NaN: there was none, and it held).
  virtual double on_reading(Time /*now*/, std::vector<double>& /*replica_signals*/,
                            int64_t /*fleet_live*/) {
    return std::numeric_limits<double>::quiet_NaN();
  }
  // The cap its control loop keeps on the sessions live over the fleet, now; none for a gateway
  // without one. The fleet reports it after each reading (FleetResult::gateway_readings).
  virtual std::optional<int64_t> control_cap() const { return std::nullopt; }
};

class GatewayPolicy {
 public:
  virtual ~GatewayPolicy() = default;
  virtual std::string type() const = 0;
  virtual void write(nlohmann::json& section) const = 0;  // its fields (`type` is the caller's)
  // `deadline_s`: the frame deadline (workload.deadline_s).
  virtual std::unique_ptr<Gateway> make_gateway(double deadline_s) const = 0;
  // The loop a gateway that reads the replicas' latency runs: every replica's engine measures it
  // (sim/fleet/measured_admission.h) and the fleet calls Gateway::on_reading every interval_s.
  // Null: the gateway reads only the chosen replica's gauges at each call.
  virtual const ControlLoop* control_loop() const { return nullptr; }
};

// The registry (sim/fleet/gateway_policies.cpp); tests may add to it.
PolicyRegistry<GatewayPolicy>& gateway_policies();

}  // namespace metronome
