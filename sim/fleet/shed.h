// fleet.gateway.type = "shed": load shedding as a production gateway does it. A call is refused
// when the replica the router chose has more than max_queue_depth sessions waiting ("queue_depth";
// default 5) or more than max_kv_usage of its KV pool in use ("kv_usage"; default 0.8, a fraction
// in (0, 1]; 1 never sheds on KV). With unbounded KV the usage climbs with every frame and sheds
// long before latency moves; with windowed KV it settles at the windows' bound.
#pragma once

#include "sim/config/config_limits.h"
#include "sim/fleet/gateway.h"

namespace metronome {

class Shed : public Gateway {
 public:
  Shed(int64_t max_queue_depth, double max_kv_usage)
      : max_queue_depth_(max_queue_depth), max_kv_usage_(max_kv_usage) {}
  const char* refuse(Time, const ReplicaView& r, int64_t) override {
    if (r.queue_depth > max_queue_depth_) return "queue_depth";
    if (r.kv_usage() > max_kv_usage_) return "kv_usage";
    return nullptr;
  }

 private:
  int64_t max_queue_depth_;
  double max_kv_usage_;
};

class ShedPolicy final : public GatewayPolicy {
 public:
  ShedPolicy(int64_t depth, double usage) : depth_(depth), usage_(usage) {}
  std::string type() const override { return "shed"; }
  void write(nlohmann::json& section) const override {
    section["max_queue_depth"] = depth_;
    section["max_kv_usage"] = usage_;
  }
  std::unique_ptr<Gateway> make_gateway(double) const override {
    return std::make_unique<Shed>(depth_, usage_);
  }
  static std::shared_ptr<const GatewayPolicy> parse(JsonSection& g) {
    const int64_t depth = g.integer("max_queue_depth", 5, 0, kMaxCount);
    const double usage = g.number("max_kv_usage", 0.8);
    if (!(usage > 0 && usage <= 1)) g.fail("max_kv_usage", "a fraction in (0, 1]");
    return std::make_shared<ShedPolicy>(depth, usage);
  }

 private:
  int64_t depth_;
  double usage_;
};

}  // namespace metronome
