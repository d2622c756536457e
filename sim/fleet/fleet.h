// Replicas on one clock behind a gateway: the fleet's discrete-event loop.
//
// The fleet owns the arrival and call-length streams, drawn from the scenario's seed under the
// same stream names an engine uses ("arrivals", "durations"), so a one-replica fleet sees exactly
// the calls the single engine would. Each replica is an unchanged Engine told to take placed
// arrivals (Engine::place_arrivals). For each call, in time order:
//   1. every replica handles its events before the call's instant, and those at the instant that
//      come before an arrival (Engine::advance(t, true)): the event order of
//      sim/engine/event_queue.h holds across the fleet, and no replica starts a step at t before
//      the call is placed;
//   2. the router chooses a replica from each replica's gauges at t (ReplicaView);
//   3. the gateway may refuse the call (a reason); else the replica admits it or its own
//      admission turns it away (Engine::place).
// The replicas share nothing else, so between calls each runs on alone; after the last call, to
// the horizon, they run on `threads` threads, and the result does not depend on how many.
//
// With fleet.autoscale (sim/fleet/autoscale.h) the router sees only the ready replicas. At each
// reading (every interval_s, before a call at the same instant) every replica is brought up to
// the instant as for a call, the signal is read over the ready ones, and the rule may start
// replicas (a new engine, ready startup_s later) or drain one (out of the router's sight from
// then; it leaves when its last call hangs up, Engine::last_hang_up). Readings continue after
// the last call, on one thread, until the horizon.
//
// A gateway with a control loop (fleet.gateway.type aimd: one controller over the fleet) reads
// every ready replica's measured latency at the end of each of its intervals (at multiples of
// interval_s, when the replicas' engines close their own intervals), before a call or an
// autoscale reading at the same instant. Readings stop with the last call: there is nothing left
// for the gateway to decide.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

#include "base/progress.h"
#include "base/rng.h"
#include "sim/cost/cost_model.h"
#include "sim/engine/engine.h"
#include "sim/fleet/fleet_config.h"
#include "sim/fleet/fleet_result.h"
#include "sim/output/run_observer.h"
#include "sim/pool/pool_sizing.h"
#include "sim/workload/arrivals.h"
#include "sim/workload/durations.h"

namespace metronome {

class Fleet {
 public:
  // `s` must have a fleet section and outlive the fleet. `observers`: empty, or one per replica
  // (any may be null), in group order; each must outlive the fleet.
  explicit Fleet(const Scenario& s, std::vector<RunObserver*> observers = {});
  // The observer of replica i, asked when the replica is created (an autoscaled fleet creates
  // replicas as it runs); it may return null.
  using ObserverFor = std::function<RunObserver*(size_t)>;
  Fleet(const Scenario& s, ObserverFor observer_for);
  FleetResult run(int threads = 1, Progress* progress = nullptr);

  // The scenario replica i runs: its group's, with its own jitter stream (replica 0 keeps the
  // scenario's seed; the others derive theirs from it and their index).
  static Scenario replica_scenario(const Scenario& group_replica, uint64_t seed, size_t i);

 private:
  void offer(Time now, double duration_s);
  void advance_all(Time until, bool arrival_at_until);
  ReplicaView view(size_t i) const;
  // A replica of group g (its k-th), asked for at `at`, taking calls from `ready_at`.
  void add_replica(size_t g, int64_t k, Time at, Time ready_at);
  // The fleet's control instants up to `until` in time order (the gateway's readings, then the
  // autoscaler's at one instant); `calls_left`: false after the last call (autoscaling only).
  void control_until(Time until, bool calls_left);
  void read_gateway(Time now);
  // Autoscaling: one reading at `at`, and the starting replicas ready by `now`.
  void scale_at(Time at);
  void note_ready(Time now);
  double read_signal() const;
  void drain_one(Time now);

  const Scenario& scenario_;
  const FleetConfig& config_;
  Time horizon_;
  std::vector<std::unique_ptr<const CostModel>> costs_;     // one per group
  std::vector<std::unique_ptr<const Scenario>> scenarios_;  // one per replica: engines refer to it
  std::vector<std::unique_ptr<Engine>> engines_;
  std::vector<bool> control_loop_;  // replica i's admission runs a control loop
  std::vector<PoolSizing> pools_;   // one per group
  bool begun_ = false;
  // The replicas the router sees, in index order (every replica, without autoscale), and those
  // started but not ready yet (in order of readiness).
  std::vector<size_t> ready_;
  std::vector<size_t> starting_;
  std::vector<size_t> draining_;
  std::vector<Time> ready_at_;  // per replica
  int64_t readings_ = 0;        // autoscale readings taken
  Time gateway_period_ = 0;     // the gateway's control interval (0: it has none)
  int64_t gateway_readings_ = 0;
  std::vector<double> signals_;  // scratch for the gateway's readings
  std::unique_ptr<Router> router_;
  std::unique_ptr<Gateway> gateway_;
  Rng arrival_rng_, duration_rng_;
  std::unique_ptr<ArrivalProcess> arrivals_;
  std::unique_ptr<DurationDistribution> durations_;
  ObserverFor observer_for_;
  std::vector<ReplicaView> views_;  // scratch, one per replica
  FleetResult result_;
};

}  // namespace metronome
