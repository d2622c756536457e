// fleet.gateway.type = "none": every call goes to the replica the router chose.
#pragma once

#include "sim/fleet/gateway.h"

namespace metronome {

class OpenGateway : public Gateway {
 public:
  const char* refuse(Time, const ReplicaView&, int64_t) override { return nullptr; }
};

class OpenGatewayPolicy final : public GatewayPolicy {
 public:
  std::string type() const override { return "none"; }
  void write(nlohmann::json&) const override {}
  std::unique_ptr<Gateway> make_gateway(double) const override {
    return std::make_unique<OpenGateway>();
  }
  static std::shared_ptr<const GatewayPolicy> parse(JsonSection&) {
    return std::make_shared<OpenGatewayPolicy>();
  }
};

}  // namespace metronome
