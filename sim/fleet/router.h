// A router: the gateway's placement of each new call on one replica (fleet.router). A call is
// placed once, when it arrives, and stays (its KV is pinned there). Chosen by fleet.router.type
// through router_policies(), one file per policy, as sim/admission/ does for admission.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <nlohmann/json.hpp>
#include <span>
#include <string>

#include "sim/fleet/replica_view.h"
#include "sim/policy/policy_registry.h"

namespace metronome {

class Router {
 public:
  virtual ~Router() = default;
  // The replica (an index into `replicas`, never empty) for the call arriving now. Ties go to the
  // lowest index, so a placement never depends on anything but the views and the router's state.
  virtual size_t choose(std::span<const ReplicaView> replicas) = 0;
};

class RouterPolicy {
 public:
  virtual ~RouterPolicy() = default;
  virtual std::string type() const = 0;
  // Its fields into the resolved section (`type` is written by the caller).
  virtual void write(nlohmann::json& section) const = 0;
  // `seed`: the scenario's; a router that draws makes its own stream from it (base/rng.h).
  virtual std::unique_ptr<Router> make_router(uint64_t seed) const = 0;
};

// The registry (sim/fleet/router_policies.cpp); tests may add to it.
PolicyRegistry<RouterPolicy>& router_policies();

// The index of the smallest key(replica), the lowest index among equals.
template <class Key>
size_t argmin(std::span<const ReplicaView> replicas, Key key) {
  size_t best = 0;
  for (size_t i = 1; i < replicas.size(); ++i) {
    if (key(replicas[i]) < key(replicas[best])) best = i;
  }
  return best;
}

}  // namespace metronome
