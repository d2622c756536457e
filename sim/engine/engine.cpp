#include "sim/engine/engine.h"

#include <algorithm>

#include "sim/engine/call_span.h"

namespace metronome {

Engine::Engine(const Scenario& s, const CostModel& cost, RunObserver* observer)
    : Engine(s, cost, size_pool(s), observer) {}

Engine::Engine(const Scenario& s, const CostModel& cost, const PoolSizing& pool,
               RunObserver* observer)
    : kind_(step_scheduler(s.engine.scheduler)),
      gate_(s, frame_rule(s), cost, pool.num_blocks - kind_.reserved_blocks, frame_period(s),
            from_seconds(s.horizon_s), kind_.periodic_forecast),
      core_(s, cost, observer, pool.num_blocks - kind_.reserved_blocks, gate_.adaptive()),
      scheduler_(kind_.make(core_)),
      arrival_rng_(s.seed, "arrivals"),
      duration_rng_(s.seed, "durations"),
      arrivals_(make_arrival_process(s.workload.arrival)),
      durations_(make_duration_distribution(s.workload.duration)) {
  if (s.kv_policy.policy->context_cap()) core_.result.sessions_context_capped = 0;
}

RunResult Engine::run() {
  begin();
  return end();
}

void Engine::begin() {
  if (!placed_) {
    if (auto t = arrivals_->next(arrival_rng_); t && *t <= core_.horizon) {
      core_.events.push(*t, EventKind::kArrival);
    }
  }
  if (gate_.adaptive() && gate_.control_period() <= core_.horizon)
    core_.events.push(gate_.control_period(), EventKind::kControl);
}

void Engine::advance(Time until, bool arrival_at_until) {
  external_at_ = arrival_at_until ? until : kNever;
  // A step wanted at the instant of a placed arrival, once nothing else can happen there.
  if (step_wanted_ && instant_over(now_)) {
    step_wanted_ = false;
    try_start_step(now_);
  }
  EventQueue& events = core_.events;
  while (!events.empty() && (events.top().time < until ||
                             (events.top().time == until &&
                              (!arrival_at_until || events.top().kind() < EventKind::kArrival)))) {
    const Event e = events.pop();
    now_ = e.time;
    if (e.kind() == EventKind::kArrival || e.kind() == EventKind::kDeparture) {
      scheduler_->flush();
    } else if (e.kind() == EventKind::kControl || core_.ledger.sample_due(e.time)) {
      scheduler_->sync();
    }
    core_.ledger.sample_until(e.time, core_.sessions, [this] { return gauges(); });
    switch (e.kind()) {
      case EventKind::kDeparture:
        if (core_.sessions[e.target].incarnation == e.incarnation) on_departure(e.target);
        break;
      case EventKind::kStepDone:
        on_step_done(e.time);
        break;
      case EventKind::kControl:
        on_control(e.time);
        break;
      case EventKind::kArrival:
        on_arrival(e.time);
        break;
      case EventKind::kEngineWake:
        if (e.time == core_.wake_at) {
          core_.wake_at = kNever;
          step_wanted_ = true;
        }
        break;
    }
    // The engine looks for ready frames once all events of this instant are handled, so that what
    // it serves does not depend on the order of simultaneous departures and arrivals.
    if (step_wanted_ && instant_over(e.time)) {
      step_wanted_ = false;
      try_start_step(e.time);
    }
  }
}

Engine::Placement Engine::place(Time now, double duration_s) {
  now_ = now;
  scheduler_->flush();
  core_.ledger.sample_until(now, core_.sessions, [this] { return gauges(); });
  return admit(now, duration_s);
}

RunResult Engine::end() {
  advance(core_.horizon, false);
  finish();
  return core_.result;
}

void Engine::on_arrival(Time now) {
  if (auto t = arrivals_->next(arrival_rng_); t && *t <= core_.horizon) {
    core_.events.push(*t, EventKind::kArrival);
  }
  // The duration is drawn even for a rejected caller, so the controller never shifts the streams.
  admit(now, durations_->sample(duration_rng_));
}

Engine::Placement Engine::admit(Time now, double duration_s) {
  RunResult& r = core_.result;
  ++r.sessions_arrived;
  const AdmissionGate::Entry entry = gate_.admit(now, duration_s, core_.live);
  if (entry.context_capped) ++*r.sessions_context_capped;
  if (entry.verdict != Placement::kAdmitted) {
    ++r.sessions_rejected;
    if (entry.verdict == Placement::kNoMemory) ++r.admission.rejected_by_memory;
    core_.ledger.note_rejected();
    return entry.verdict;
  }
  const int64_t id = core_.new_slot();
  Session& s = core_.sessions[id];
  s.arrival = entry.start;
  s.reserve = entry.reserve;
  // A call that outlives the run never departs; its frame count only needs to exceed the horizon.
  s.frames_total = entry.call.frames;
  s.end = entry.call.end;
  if (s.end != kNever) core_.events.push(s.end, EventKind::kDeparture, id, s.incarnation);
  last_hang_up_ = std::max(last_hang_up_, s.end);
  s.admit_order = core_.next_admit_order++;
  s.next_release = core_.release_time(s, 0);
  ++core_.live;
  r.peak_live_sessions = std::max(r.peak_live_sessions, core_.live);
  scheduler_->open(id);
  step_wanted_ = true;
  return Placement::kAdmitted;
}

void Engine::on_departure(int64_t id) {
  Session& s = core_.sessions[id];
  gate_.depart(s);
  core_.pool.release(s.held * s.count);
  s.held = 0;
  s.state = Session::State::kGone;
  core_.next_incarnation(id);  // its tickets and step membership are stale from now
  core_.ledger.depart(s);
  core_.live -= s.count;
  core_.result.sessions_departed += s.count;
  core_.free_slots.push_back(id);
  scheduler_->close(id);
  step_wanted_ = true;
}

void Engine::try_start_step(Time now) {
  if (busy_) return;
  const std::optional<Time> end = scheduler_->start_step(now);
  AdmissionSummary& a = core_.result.admission;
  if (core_.result.first_stall_s && !a.cap_at_first_stall) {  // the step met the first stall
    a.cap_at_first_stall = gate_.cap();
    a.live_at_first_stall = core_.live;
  }
  if (!end) return;
  busy_ = true;
  step_start_ = now;
  core_.events.push(*end, EventKind::kStepDone);
}

void Engine::on_step_done(Time now) {
  busy_ = false;
  last_step_ = now - step_start_;
  ++core_.result.engine_steps;
  core_.result.busy_s += to_seconds(now - step_start_);
  scheduler_->end_step(now);
  if (core_.observer) {
    core_.observer->on_step(step_start_, now, scheduler_->step_members(), core_.pool.used());
  }
  step_wanted_ = true;
}

// One control interval ends: the gate reads the interval's frames
// (FrameLedger::close_control_interval) and may move the cap.
void Engine::on_control(Time now) {
  LatencyHistogram& hist =
      core_.ledger.close_control_interval(now, core_.sessions, gate_.true_signal());
  gate_.control(now, hist, core_.live, core_.sessions);
  hist.clear();
  if (const Time next = now + gate_.control_period(); next <= core_.horizon) {
    core_.events.push(next, EventKind::kControl);
  }
}

EngineGauges Engine::gauges() const {
  return {core_.pool.used(), core_.pool.occupancy(), core_.live, core_.stalled,
          gate_.cap(),       gate_.last_signal_s()};
}

void Engine::finish() {
  scheduler_->flush();
  RunResult& r = core_.result;
  core_.ledger.finish(core_.sessions, [this] { return gauges(); });
  r.end_s = to_seconds(core_.horizon);
  r.peak_pool_blocks = core_.pool.peak();
  r.final_pool_blocks = core_.pool.used();
  r.blocks_allocated = core_.pool.allocated_total();
  r.blocks_released = core_.pool.released_total();
  gate_.summarise(r, core_.ledger, core_.live);
}

RunResult simulate(const Scenario& s, RunObserver* observer) {
  return simulate(s, *make_cost_model(s), observer);
}

RunResult simulate(const Scenario& s, const CostModel& cost, RunObserver* observer) {
  Engine engine(s, cost, observer);
  return engine.run();
}

RunResult simulate(const Scenario& s, const CostModel& cost, const PoolSizing& pool,
                   RunObserver* observer) {
  Engine engine(s, cost, pool, observer);
  return engine.run();
}

}  // namespace metronome
