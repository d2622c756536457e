#include "sim/fleet/fleet_result.h"

namespace metronome {

RunResult FleetResult::totals() const {
  RunResult t;
  for (const ReplicaOutcome& o : replicas) {
    const RunResult& r = o.run;
    t.sessions_arrived += r.sessions_arrived;
    t.sessions_departed += r.sessions_departed;
    t.sessions_rejected += r.sessions_rejected;
    t.preemptions += r.preemptions;
    t.peak_live_sessions += r.peak_live_sessions;  // an upper bound: peaks need not coincide
    t.frames_due += r.frames_due;
    t.frames_served += r.frames_served;
    t.frames_on_time += r.frames_on_time;
    t.frames_silent += r.frames_silent;
    t.frames_reported_late += r.frames_reported_late;
    t.tokens_produced += r.tokens_produced;
    t.reported_latency.merge(r.reported_latency);
    t.true_latency.merge(r.true_latency);
    t.engine_steps += r.engine_steps;
    t.busy_s += r.busy_s;
    if (r.first_stall_s && (!t.first_stall_s || *r.first_stall_s < *t.first_stall_s)) {
      t.first_stall_s = r.first_stall_s;
    }
  }
  t.end_s = horizon_s;
  return t;
}

}  // namespace metronome
