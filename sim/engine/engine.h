// One serving engine running real-time sessions over a paged KV block pool: the discrete-event
// core.
//
// Events are arrivals, departures, engine steps, engine wakes and control instants, never tokens.
// The engine admits callers through its AdmissionGate (sim/admission/admission_gate.h), keeps their
// sessions in an EngineCore (sim/engine/engine_core.h) and has the step scheduler that
// engine.scheduler names (sim/scheduler/step_scheduler.h) make its steps: Metronome's frame
// scheduler or vLLM V1's. The serving layer pads any frame without output by silence_after_s with
// silence, so the reported latency stays bounded while users hear nothing.
#pragma once

#include <memory>

#include "base/rng.h"
#include "sim/admission/admission_gate.h"
#include "sim/config/scenario.h"
#include "sim/cost/cost_model.h"
#include "sim/engine/engine_core.h"
#include "sim/output/run_observer.h"
#include "sim/output/run_result.h"
#include "sim/pool/pool_sizing.h"
#include "sim/scheduler/step_scheduler.h"
#include "sim/workload/arrivals.h"
#include "sim/workload/durations.h"

namespace metronome {

class Engine final {
 public:
  // `cost` and `observer` (which may be null) must outlive the engine.
  Engine(const Scenario& s, const CostModel& cost, RunObserver* observer = nullptr);
  // On a pool the caller sized already (size_pool(s), e.g. the first-order prediction's).
  Engine(const Scenario& s, const CostModel& cost, const PoolSizing& pool,
         RunObserver* observer = nullptr);
  RunResult run();

  // Several engines on one clock (sim/fleet/fleet.h): the fleet draws the arrivals and each call's
  // length from the scenario's streams and places each call on one engine, which then draws
  // neither. place_arrivals() before begin(); then advance() and place() in time order; then end().
  // run() is begin() and end() on the engine's own arrivals, so both paths share one loop.
  void place_arrivals() { placed_ = true; }
  void begin();
  // Handles every event before `until`, and at `until` those that come before an arrival (the
  // fleet is about to place one there) or, without `arrival_at_until`, all of them.
  void advance(Time until, bool arrival_at_until);
  using Placement = AdmissionGate::Verdict;
  // A call arriving at `now`, after advance(now, true); its drawn length in seconds.
  Placement place(Time now, double duration_s);
  RunResult end();
  // What a gateway's router and shedder read.
  EngineGauges gauges() const;
  int64_t pool_blocks() const { return core_.pool.capacity(); }
  Time last_step() const { return last_step_; }  // the duration of the last step that ended
  // When the last call admitted so far hangs up (kNever: one outlives the run; 0: none yet): a
  // replica that takes no more calls is empty from then on.
  Time last_hang_up() const { return last_hang_up_; }

  // Cohorts are an exact optimisation of the frame scheduler (tests compare runs with and
  // without); on by default where they apply. Set before run().
  void set_cohorts(bool on) { scheduler_->set_cohorts(on); }
  // So is the frame scheduler's usual ring (sim/scheduler/usual_ring.h).
  void set_usual_ring(bool on) { scheduler_->set_usual_ring(on); }

 private:
  void on_arrival(Time now);
  Placement admit(Time now, double duration_s);
  // True once nothing else can happen at instant t: no event is queued there, and no arrival will
  // be placed there (advance's `until` and `arrival_at_until`).
  bool instant_over(Time t) const {
    return (core_.events.empty() || core_.events.top().time != t) && t != external_at_;
  }
  void on_departure(int64_t id);
  void on_step_done(Time now);
  void on_control(Time now);
  void try_start_step(Time now);
  void finish();

  const StepSchedulerKind& kind_;  // engine.scheduler
  AdmissionGate gate_;
  EngineCore core_;
  std::unique_ptr<StepScheduler> scheduler_;

  Rng arrival_rng_, duration_rng_;
  std::unique_ptr<ArrivalProcess> arrivals_;
  std::unique_ptr<DurationDistribution> durations_;

  bool busy_ = false;  // a step is running
  Time step_start_ = 0;
  Time last_step_ = 0;
  Time last_hang_up_ = 0;
  bool step_wanted_ = false;  // try a step once this instant's events are all handled
  // Placed arrivals (place_arrivals): the instant of the arrival the fleet may place next (kNever:
  // none pending), and the instant last handled.
  bool placed_ = false;
  Time external_at_ = kNever;
  Time now_ = 0;
};

// Convenience: size the pool, build the cost model the scenario names, run one seed.
RunResult simulate(const Scenario& s, RunObserver* observer = nullptr);
// The same on a cost model the caller built (once for many runs: a sweep, a capacity search).
RunResult simulate(const Scenario& s, const CostModel& cost, RunObserver* observer = nullptr);
RunResult simulate(const Scenario& s, const CostModel& cost, const PoolSizing& pool,
                   RunObserver* observer = nullptr);

}  // namespace metronome
