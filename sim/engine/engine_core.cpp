#include "sim/engine/engine_core.h"

#include <algorithm>

namespace metronome {

Time frame_period(const Scenario& s) {
  return std::max<Time>(1, from_seconds(s.workload.frame_period_s));
}

FrameRule frame_rule(const Scenario& s) {
  return {s.workload.growth(), s.workload.input_tokens_per_frame,
          s.workload.output_tokens_per_frame, s.kv_rule()};
}

EngineCore::EngineCore(const Scenario& s, const CostModel& cost_model, RunObserver* run_observer,
                       int64_t pool_blocks, bool control_on)
    : scenario(s),
      cost(cost_model),
      observer(run_observer),
      period(frame_period(s)),
      horizon(from_seconds(s.horizon_s)),
      jitter(from_seconds(s.workload.frame_jitter_s)),
      rule(frame_rule(s)),
      pool(pool_blocks),
      jitter_rng(s.seed, "jitter"),
      ledger(s, result, run_observer, control_on) {}

int64_t EngineCore::new_slot() {
  int64_t id;
  if (!free_slots.empty()) {
    id = free_slots.back();
    free_slots.pop_back();
  } else {
    id = static_cast<int64_t>(sessions.size());
    if (id == std::numeric_limits<int32_t>::max()) {  // tickets name slots in 32 bits
      throw std::length_error("Engine: more than 2^31 - 1 session slots");
    }
    sessions.emplace_back();
  }
  const uint32_t incarnation = sessions[id].incarnation;
  sessions[id] = Session{};
  sessions[id].incarnation = incarnation;
  next_incarnation(id);
  return id;
}

void EngineCore::wake_at_next_release(Time now) {
  purge_ready_front();
  if (!ready.empty()) wake_at_release(ready.front().release, now);
}

void EngineCore::wake_at_release(Time release, Time now) {
  if (release > now && release < wake_at) {
    wake_at = release;
    events.push(wake_at, EventKind::kEngineWake);
  }
}

}  // namespace metronome
