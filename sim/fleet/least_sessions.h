// fleet.router.type = "least_sessions": the replica holding the fewest live sessions (least
// outstanding requests, for sessions). With equal calls that all stay, counts never differ by more
// than one (tests/sim/fleet/router_test.cpp).
#pragma once

#include "sim/fleet/router.h"

namespace metronome {

class LeastSessions : public Router {
 public:
  size_t choose(std::span<const ReplicaView> replicas) override {
    return argmin(replicas, [](const ReplicaView& r) { return r.live; });
  }
};

class LeastSessionsPolicy final : public RouterPolicy {
 public:
  std::string type() const override { return "least_sessions"; }
  void write(nlohmann::json&) const override {}
  std::unique_ptr<Router> make_router(uint64_t) const override {
    return std::make_unique<LeastSessions>();
  }
  static std::shared_ptr<const RouterPolicy> parse(JsonSection&) {
    return std::make_shared<LeastSessionsPolicy>();
  }
};

}  // namespace metronome
