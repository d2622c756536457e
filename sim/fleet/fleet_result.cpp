#include "sim/fleet/fleet_result.h"

#include <algorithm>
#include <limits>

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

double FleetResult::replica_seconds() const {
  double sum = 0;
  for (const ReplicaOutcome& o : replicas) sum += o.seconds(horizon_s);
  return sum;
}

double FleetResult::gpu_seconds() const {
  double sum = 0;
  for (const ReplicaOutcome& o : replicas)
    sum += o.seconds(horizon_s) * static_cast<double>(o.gpus);
  return sum;
}

std::vector<ReplicaCount> FleetResult::replica_counts() const {
  // Each replica adds to both counts while it is up: provisioned over [started, gone), ready over
  // [ready, drained) (ready never after the horizon).
  struct Change {
    double t;
    int provisioned, ready;
  };
  std::vector<Change> changes;
  for (const ReplicaOutcome& o : replicas) {
    changes.push_back({o.started_s, +1, 0});
    if (o.gone_s) changes.push_back({*o.gone_s, -1, 0});
    const double drained = o.drained_s.value_or(std::numeric_limits<double>::infinity());
    if (o.ready_s < std::min(drained, horizon_s)) {
      changes.push_back({o.ready_s, 0, +1});
      if (o.drained_s) changes.push_back({*o.drained_s, 0, -1});
    }
  }
  std::stable_sort(changes.begin(), changes.end(),
                   [](const Change& a, const Change& b) { return a.t < b.t; });
  std::vector<ReplicaCount> out;
  ReplicaCount now;
  for (size_t i = 0; i < changes.size(); ++i) {
    now.provisioned += changes[i].provisioned;
    now.ready += changes[i].ready;
    // One entry per instant, after every change at it.
    if (i + 1 < changes.size() && changes[i + 1].t == changes[i].t) continue;
    now.time_s = changes[i].t;
    if (!out.empty() && out.back().provisioned == now.provisioned &&
        out.back().ready == now.ready) {
      continue;
    }
    out.push_back(now);
  }
  return out;
}

}  // namespace metronome
