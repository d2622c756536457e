// fleet.gateway.type = "static": a fixed cap on the sessions live over the whole fleet; a call
// past it is refused ("fleet_cap"), wherever the router would have put it.
#pragma once

#include "sim/config/config_limits.h"
#include "sim/fleet/gateway.h"

namespace metronome {

class FleetCap : public Gateway {
 public:
  explicit FleetCap(int64_t cap) : cap_(cap) {}
  const char* refuse(Time, const ReplicaView&, int64_t fleet_live) override {
    return fleet_live >= cap_ ? "fleet_cap" : nullptr;
  }

 private:
  int64_t cap_;
};

class FleetCapPolicy final : public GatewayPolicy {
 public:
  explicit FleetCapPolicy(int64_t cap) : cap_(cap) {}
  std::string type() const override { return "static"; }
  void write(nlohmann::json& section) const override { section["cap"] = cap_; }
  std::unique_ptr<Gateway> make_gateway(double) const override {
    return std::make_unique<FleetCap>(cap_);
  }
  static std::shared_ptr<const GatewayPolicy> parse(JsonSection& g) {
    return std::make_shared<FleetCapPolicy>(g.integer("cap", std::nullopt, 0, kMaxCount));
  }

 private:
  int64_t cap_;
};

}  // namespace metronome
