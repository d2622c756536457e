// fleet.router.type = "p2c": power of two choices (Mitzenmacher). Two distinct replicas drawn
// uniformly from the router's own stream ("router", base/rng.h), the better of the two by
// fleet.router.by: "sessions" (fewer live) or "free_blocks" (more free); the first drawn on a tie.
// It reads two replicas' state, not all of them, which is its point at a large gateway.
#pragma once

#include <algorithm>

#include "base/rng.h"
#include "sim/fleet/router.h"

namespace metronome {

class PowerOfTwo : public Router {
 public:
  PowerOfTwo(uint64_t seed, bool by_sessions) : rng_(seed, "router"), by_sessions_(by_sessions) {}
  size_t choose(std::span<const ReplicaView> replicas) override {
    const uint64_t n = replicas.size();
    if (n == 1) return 0;
    // Uniform over [0, m): 53 random bits scaled, exact in a double for any fleet size here.
    const auto draw = [&](uint64_t m) {
      return std::min<size_t>(m - 1, static_cast<size_t>(rng_.uniform() * static_cast<double>(m)));
    };
    const size_t a = draw(n);
    size_t b = draw(n - 1);
    if (b >= a) ++b;  // distinct from a, uniform over the others
    const ReplicaView& x = replicas[a];
    const ReplicaView& y = replicas[b];
    const bool b_better = by_sessions_ ? y.live < x.live : y.free_blocks > x.free_blocks;
    return b_better ? b : a;
  }

 private:
  Rng rng_;
  bool by_sessions_;
};

class PowerOfTwoPolicy final : public RouterPolicy {
 public:
  explicit PowerOfTwoPolicy(std::string by) : by_(std::move(by)) {}
  std::string type() const override { return "p2c"; }
  void write(nlohmann::json& section) const override { section["by"] = by_; }
  std::unique_ptr<Router> make_router(uint64_t seed) const override {
    return std::make_unique<PowerOfTwo>(seed, by_ == "sessions");
  }
  static std::shared_ptr<const RouterPolicy> parse(JsonSection& r) {
    return std::make_shared<PowerOfTwoPolicy>(
        r.one_of("by", "sessions", {"sessions", "free_blocks"}));
  }

 private:
  std::string by_;
};

}  // namespace metronome
