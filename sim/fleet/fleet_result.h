// What a fleet run reports: the gateway's counts, each replica's own RunResult (what `simulate`
// reports for one engine), and the fleet's totals summed from them.
//
// Conservation, by construction of Fleet::offer: every call offered is placed on a replica or
// rejected for exactly one reason, so offered = placed + the sum of `rejected`; a replica's row
// adds up the same way (routed = gateway-rejected + replica-rejected + placed).
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "sim/output/run_result.h"

namespace metronome {

struct ReplicaOutcome {
  std::string group;
  int64_t index_in_group = 0;
  int64_t routed = 0;            // calls the router chose it for
  int64_t gateway_rejected = 0;  // of those, turned away by the gateway
  RunResult run;                 // its engine's own; run.sessions_arrived = what reached it
  int64_t gpus = 1;              // engine.tensor_parallel
  // Its life: asked for (0 s for the replicas the run starts with), ready to take calls, drained
  // (taking no new call) and gone (its last call hung up); unset: never, it served to the end.
  double started_s = 0, ready_s = 0;
  std::optional<double> drained_s, gone_s;
  std::optional<double> first_call_s, last_call_s;  // calls routed to it
  int64_t placed() const { return run.sessions_arrived - run.sessions_rejected; }
  // Seconds it was provisioned (paid for): from its start to when it left or the horizon.
  double seconds(double horizon_s) const { return gone_s.value_or(horizon_s) - started_s; }
};

// The replicas provisioned (started and not gone) and ready (taking calls) from time_s on.
struct ReplicaCount {
  double time_s = 0;
  int64_t provisioned = 0;
  int64_t ready = 0;
};

// One reading of a gateway's control loop (fleet.gateway.type aimd), at the end of one of its
// intervals: the sessions live over the fleet then, the fleet's signal it read (NaN: no replica
// held a session, and it held) and the cap it set, in force until the next reading.
struct GatewayReading {
  double time_s = 0;
  int64_t cap = 0;
  int64_t live = 0;
  double signal_s = 0;
};

struct FleetResult {
  int64_t offered = 0;  // calls that arrived at the gateway within the horizon
  int64_t placed = 0;   // admitted by a replica
  // By reason: the gateway's (token_bucket, queue_depth, kv_usage, fleet_cap) and the replicas'
  // own admission (replica_cap: its controller's cap; memory_guard: its worst case did not fit).
  std::map<std::string, int64_t> rejected;
  std::vector<ReplicaOutcome> replicas;
  double horizon_s = 0;
  int64_t scale_ups = 0, drains = 0;  // autoscaling decisions (replicas started, drained)
  // A gateway with a control loop: its cap from 0 s to the first reading, and each reading in
  // time order (one per interval while calls come). Unset and empty for any other gateway.
  std::optional<int64_t> gateway_initial_cap;
  std::vector<GatewayReading> gateway_readings;

  // What the fleet cost: the sum of its replicas' provisioned seconds, and x their GPUs.
  double replica_seconds() const;
  double gpu_seconds() const;
  // The counts over time, one entry per instant either changes (the first at 0 s).
  std::vector<ReplicaCount> replica_counts() const;

  int64_t rejected_total() const {
    int64_t n = 0;
    for (const auto& [reason, count] : rejected) n += count;
    return n;
  }
  // The replicas' frames and latencies summed (histograms merged); sessions and steps summed too.
  RunResult totals() const;
};

}  // namespace metronome
