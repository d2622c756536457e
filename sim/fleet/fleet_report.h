// A fleet run's outputs: the summary (JSON and text) and one row per replica (CSV, and the JSON's
// "replicas" array). The per-replica rows are each replica's own RunResult; the fleet's frames and
// latencies are their sums (FleetResult::totals).
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "sim/config/scenario.h"
#include "sim/fleet/fleet_result.h"

namespace metronome {

nlohmann::json fleet_json(const Scenario& s, const FleetResult& r);
std::string fleet_text(const Scenario& s, const FleetResult& r);
// A header and one row per replica, the columns of fleet_json's "replicas" rows.
std::string replicas_csv(const Scenario& s, const FleetResult& r);
// An autoscaled fleet's replica counts over time (FleetResult::replica_counts).
std::string replica_counts_csv(const FleetResult& r);
// A gateway's control loop over time (FleetResult::gateway_readings), one row per reading: time_s,
// the cap it set, the sessions live over the fleet at the reading, and the signal it read in ms
// (empty where not finite).
std::string gateway_control_csv(const FleetResult& r);

}  // namespace metronome
