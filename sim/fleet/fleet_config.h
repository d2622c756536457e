// A scenario's `fleet` section (docs/fleet.md): replica groups behind one gateway, which routes
// each new call to one replica (fleet.router) and may turn it away (fleet.gateway).
//
//   "fleet": {"groups": [{"name": "h200", "count": 4, "gpu": "h200",
//                         "kv_policy": {"type": "windowed", ...}}],
//             "router": {"type": "least_sessions"},
//             "gateway": {"type": "shed", "max_kv_usage": 0.8}}
//
// Each group's replicas are the scenario's engine with the group's overrides: model, gpu and
// kv_policy replace the scenario's sections; engine is merged key by key over the scenario's
// (unset keys keep the scenario's). Workload, horizon, seed, cost model and admission (applied per
// replica, behind the gateway) are the scenario's. parse_fleet validates every group as a whole
// scenario (parse_scenario), so a bad override is reported with its group's field.
#pragma once

#include <cstdint>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "base/json_section.h"
#include "sim/config/scenario.h"
#include "sim/fleet/autoscale.h"
#include "sim/fleet/gateway.h"
#include "sim/fleet/router.h"

namespace metronome {

struct ReplicaGroup {
  std::string name;
  int64_t count = 1;
  // The scenario each of the group's replicas runs: the overrides applied, no fleet section.
  std::shared_ptr<const Scenario> replica;
};

struct FleetConfig {
  std::vector<ReplicaGroup> groups;
  std::shared_ptr<const RouterPolicy> router;
  std::shared_ptr<const GatewayPolicy> gateway;
  // Null: the groups' replicas serve the whole run. Else the one group's replica is scaled
  // (sim/fleet/autoscale.h).
  std::shared_ptr<const AutoscaleConfig> autoscale;

  // Replicas at 0 s (an autoscaled fleet's count then changes).
  int64_t replicas() const {
    int64_t n = 0;
    for (const auto& g : groups) n += g.count;
    return n;
  }
};

// The keys a group may override.
inline constexpr const char* kGroupOverrides[] = {"model", "gpu", "engine", "kv_policy"};

// `f`: the fleet section of `scenario` (the whole resolved scenario JSON, model and GPU names of
// the groups resolved to objects); `source` names the file for messages.
std::shared_ptr<const FleetConfig> parse_fleet(JsonSection& f, const nlohmann::json& scenario,
                                               const std::string& source);
// The resolved section: every group's model, GPU, engine and KV policy written out in full.
nlohmann::json to_json(const FleetConfig& f);

// For a command that answers for one engine (`command`: its name): a ConfigError (exit 2) where
// `s` is a fleet, saying what to run instead, rather than an answer for one replica as if it were
// the fleet.
void refuse_fleet(const Scenario& s, std::string_view command);

}  // namespace metronome
