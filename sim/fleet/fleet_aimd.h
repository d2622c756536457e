// fleet.gateway.type = "aimd": one AIMD controller over the whole fleet. It caps the sessions live
// over every replica ("fleet_aimd" past it, wherever the router would have put the call) and
// moves the cap by the rule of sim/admission/aimd.h, read from the fleet's latency signal:
//   every interval_s, each ready replica with live sessions reports the admission.quantile
//   (default p95) of that interval's frame latency, reported or true (`signal`), measured by the
//   replica's engine as its own AIMD would (sim/fleet/measured_admission.h); the fleet's signal
//   is the `over_replicas` quantile of those readings (nearest rank; default 1: the worst
//   replica). A reading with no replica holding a session holds.
// Its fields are AIMD's (interval_s, signal, quantile, initial_cap, floor, max_cap, increase,
// decrease_factor, low_fraction, high_fraction), for the fleet's total: a fleet of R replicas
// matches R per-replica controllers' starting cap and growth with R times their initial_cap and
// increase. Unlike the per-replica AIMD it has no settled-latency forecast (the engine's forecast
// is one replica's): it raises the cap on the measured signal alone. The replicas' own admission
// must be `none`: one controller decides.
#pragma once

#include <algorithm>
#include <cmath>
#include <limits>
#include <optional>
#include <vector>

#include "sim/admission/aimd.h"
#include "sim/fleet/gateway.h"

namespace metronome {

// The p quantile (nearest rank) of `values`, which must not be empty; reorders them.
inline double nearest_rank(std::vector<double>& values, double p) {
  const auto n = static_cast<int64_t>(values.size());
  const int64_t rank =
      std::clamp<int64_t>(static_cast<int64_t>(std::ceil(p * static_cast<double>(n))), 1, n);
  std::nth_element(values.begin(), values.begin() + (rank - 1), values.end());
  return values[static_cast<size_t>(rank - 1)];
}

class FleetAimd : public Gateway {
 public:
  FleetAimd(const AimdParams& p, double over_replicas, double deadline_s)
      : aimd_(p, deadline_s), over_(over_replicas) {}
  const char* refuse(Time, const ReplicaView&, int64_t fleet_live) override {
    return fleet_live >= aimd_.cap() ? "fleet_aimd" : nullptr;
  }
  double on_reading(Time now, std::vector<double>& replica_signals, int64_t fleet_live) override {
    ControlSignal s;
    s.now = now;
    s.live = fleet_live;
    s.frames = static_cast<int64_t>(replica_signals.size());  // zero: nobody to hear, hold
    s.latency_s = replica_signals.empty() ? 0 : nearest_rank(replica_signals, over_);
    aimd_.on_interval(s);
    return replica_signals.empty() ? std::numeric_limits<double>::quiet_NaN() : s.latency_s;
  }
  int64_t cap() const { return aimd_.cap(); }
  std::optional<int64_t> control_cap() const override { return cap(); }

 private:
  Aimd aimd_;
  double over_;
};

class FleetAimdPolicy final : public GatewayPolicy {
 public:
  FleetAimdPolicy(const AimdParams& p, double over_replicas) : p_(p), over_(over_replicas) {}
  std::string type() const override { return "aimd"; }
  void write(nlohmann::json& section) const override {
    AimdPolicy(p_).write(section);
    section["over_replicas"] = over_;
  }
  std::unique_ptr<Gateway> make_gateway(double deadline_s) const override {
    return std::make_unique<FleetAimd>(p_, over_, deadline_s);
  }
  const ControlLoop* control_loop() const override { return &p_.loop; }
  static std::shared_ptr<const GatewayPolicy> parse(JsonSection& g) {
    // AIMD's own parse: one set of fields, defaults and checks for both controllers.
    const AimdParams p = std::static_pointer_cast<const AimdPolicy>(AimdPolicy::parse(g))->params();
    const double over = g.number("over_replicas", 1.0);
    if (!(over > 0 && over <= 1)) g.fail("over_replicas", "a quantile in (0, 1] (1: the worst)");
    return std::make_shared<FleetAimdPolicy>(p, over);
  }

 private:
  AimdParams p_;
  double over_;
};

}  // namespace metronome
