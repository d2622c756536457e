// fleet.router.type = "most_free_blocks": the replica with the most free KV blocks. On replicas of
// different pools it favours the larger; with unbounded KV it follows the fill the paper warns of.
#pragma once

#include "sim/fleet/router.h"

namespace metronome {

class MostFreeBlocks : public Router {
 public:
  size_t choose(std::span<const ReplicaView> replicas) override {
    return argmin(replicas, [](const ReplicaView& r) { return -r.free_blocks; });
  }
};

class MostFreeBlocksPolicy final : public RouterPolicy {
 public:
  std::string type() const override { return "most_free_blocks"; }
  void write(nlohmann::json&) const override {}
  std::unique_ptr<Router> make_router(uint64_t) const override {
    return std::make_unique<MostFreeBlocks>();
  }
  static std::shared_ptr<const RouterPolicy> parse(JsonSection&) {
    return std::make_shared<MostFreeBlocksPolicy>();
  }
};

}  // namespace metronome
