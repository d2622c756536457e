#include "sim/fleet/fleet_config.h"

#include <fmt/format.h>

#include "base/config_error.h"
#include "sim/fleet/measured_admission.h"

namespace metronome {

// Replicas in one run: each is a whole engine with its own pool and session slots.
constexpr int64_t kMaxReplicas = 100'000;

std::shared_ptr<const FleetConfig> parse_fleet(JsonSection& f, const nlohmann::json& scenario,
                                               const std::string& source) {
  auto c = std::make_shared<FleetConfig>();
  const nlohmann::json& groups = f.raw("groups");
  if (!groups.is_array() || groups.empty()) {
    f.fail("groups", "a non-empty array of replica groups ({\"count\": N, ...})");
  }
  nlohmann::json base = scenario;
  base.erase("fleet");
  for (size_t i = 0; i < groups.size(); ++i) {
    const std::string path = f.field("groups") + "[" + std::to_string(i) + "]";
    JsonSection g(groups[i], source, path);
    ReplicaGroup group;
    group.name = g.string("name", "group" + std::to_string(i));
    for (const auto& other : c->groups) {
      if (other.name == group.name) g.fail("name", "a name no other group has");
    }
    group.count = g.integer("count", std::nullopt, 1, kMaxReplicas);
    // The replica keeps the scenario's name (its group is named beside it in every output), so
    // a one-replica fleet of an unchanged group runs the scenario itself, byte for byte.
    nlohmann::json r = base;
    for (const char* key : kGroupOverrides) {
      if (!g.has(key)) continue;
      const nlohmann::json& v = g.raw(key);
      if (!v.is_object()) g.fail(key, "an object (model and gpu: a name or path, resolved)");
      if (std::string_view(key) == "engine" && r.contains("engine") && r["engine"].is_object()) {
        // A field the group sets under one name replaces the scenario's under its alias.
        for (const auto& [a, b] : kEngineAliases) {
          if (v.contains(a)) r["engine"].erase(b);
          if (v.contains(b)) r["engine"].erase(a);
        }
        r["engine"].merge_patch(v);
      } else {
        r[key] = v;
      }
    }
    g.finish();
    group.replica = std::make_shared<const Scenario>(parse_scenario(r, source + " " + path));
    c->groups.push_back(std::move(group));
  }
  if (c->replicas() > kMaxReplicas) {
    f.fail("groups", "at most " + std::to_string(kMaxReplicas) + " replicas over all groups");
  }
  JsonSection router = f.section("router");
  c->router = router_policies().parse(router, "round_robin");
  JsonSection gateway = f.section("gateway");
  c->gateway = gateway_policies().parse(gateway, "none");
  if (const ControlLoop* loop = c->gateway->control_loop()) {
    // One controller over the fleet: each replica measures for it and decides nothing itself.
    for (auto& group : c->groups) {
      const std::string own = group.replica->admission.type();
      if (own != "none") {
        gateway.fail("type", fmt::format("a gateway without a control loop where the replicas "
                                         "run their own admission.type \"{}\" (one controller "
                                         "decides: set admission.type to none, or choose "
                                         "another gateway)",
                                         own));
      }
      auto measured = std::make_shared<Scenario>(*group.replica);
      measured->admission.policy =
          std::make_shared<const MeasuredAdmissionPolicy>(group.replica->admission.policy, *loop);
      group.replica = std::move(measured);
    }
  }
  if (f.has("autoscale")) {
    if (c->groups.size() != 1) {
      f.fail("autoscale", "one replica group to scale, got " + std::to_string(c->groups.size()));
    }
    JsonSection a = f.section("autoscale", true);
    const auto h = scenario.find("horizon_s");
    c->autoscale = parse_autoscale(a, c->groups[0].count,
                                   h != scenario.end() && h->is_number() ? h->get<double>() : 0);
  }
  f.finish();
  return c;
}

nlohmann::json to_json(const FleetConfig& f) {
  nlohmann::json groups = nlohmann::json::array();
  for (const auto& g : f.groups) {
    const nlohmann::json r = to_json(*g.replica);
    nlohmann::json j = {{"name", g.name}, {"count", g.count}};
    for (const char* key : kGroupOverrides) j[key] = r[key];
    groups.push_back(std::move(j));
  }
  nlohmann::json router = {{"type", f.router->type()}};
  f.router->write(router);
  nlohmann::json gateway = {{"type", f.gateway->type()}};
  f.gateway->write(gateway);
  nlohmann::json j = {{"groups", groups}, {"router", router}, {"gateway", gateway}};
  if (f.autoscale) j["autoscale"] = to_json(*f.autoscale);
  return j;
}

void refuse_fleet(const Scenario& s, std::string_view command) {
  if (!s.fleet) return;
  throw ConfigError(fmt::format(
      "{}: fleet: `metronome {}` answers for one engine, and this scenario is a fleet of {} "
      "replicas; expected a scenario without a fleet section. For the fleet, `metronome "
      "simulate` runs it (every replica's summary) and `metronome plan` finds the fewest "
      "replicas for its traffic; for one engine, --set fleet=null drops the section and runs "
      "the scenario's own model, gpu, engine and kv_policy (a group may override them) under "
      "the whole fleet's arrivals (divide a rate by {} for one replica's share)",
      s.source, command, s.fleet->replicas(), s.fleet->replicas()));
}

}  // namespace metronome
