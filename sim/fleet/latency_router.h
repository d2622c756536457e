// fleet.router.type = "latency": the replica whose own latency signal (ReplicaView::latency_s) is
// lowest, fewer live sessions on a tie. With windowed KV a replica's step time rises smoothly with
// its load, so this is the fleet-scale form of the paper's point: a faithful signal to act on.
// With unbounded KV it stays flat until that replica's cliff.
#pragma once

#include <utility>

#include "sim/fleet/router.h"

namespace metronome {

class LatencyRouter : public Router {
 public:
  size_t choose(std::span<const ReplicaView> replicas) override {
    return argmin(replicas,
                  [](const ReplicaView& r) { return std::make_pair(r.latency_s, r.live); });
  }
};

class LatencyRouterPolicy final : public RouterPolicy {
 public:
  std::string type() const override { return "latency"; }
  void write(nlohmann::json&) const override {}
  std::unique_ptr<Router> make_router(uint64_t) const override {
    return std::make_unique<LatencyRouter>();
  }
  static std::shared_ptr<const RouterPolicy> parse(JsonSection&) {
    return std::make_shared<LatencyRouterPolicy>();
  }
};

}  // namespace metronome
