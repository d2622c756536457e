// fleet.router.type = "round_robin": replicas in turn, whatever their load. N calls over R
// replicas give each floor(N / R) or ceil(N / R) (tests/sim/fleet/router_test.cpp).
#pragma once

#include "sim/fleet/router.h"

namespace metronome {

class RoundRobin : public Router {
 public:
  size_t choose(std::span<const ReplicaView> replicas) override {
    const size_t i = next_ % replicas.size();
    next_ = i + 1;
    return i;
  }

 private:
  size_t next_ = 0;
};

class RoundRobinPolicy final : public RouterPolicy {
 public:
  std::string type() const override { return "round_robin"; }
  void write(nlohmann::json&) const override {}
  std::unique_ptr<Router> make_router(uint64_t) const override {
    return std::make_unique<RoundRobin>();
  }
  static std::shared_ptr<const RouterPolicy> parse(JsonSection&) {
    return std::make_shared<RoundRobinPolicy>();
  }
};

}  // namespace metronome
