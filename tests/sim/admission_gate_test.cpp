// The admission gate on its own, without an engine: the memory guard's reserve, the cap's order
// against it, spread joins' phases and the step schedulers' registry.
#include "sim/admission/admission_gate.h"

#include <gtest/gtest.h>

#include <stdexcept>

#include "sim/engine/engine_core.h"
#include "sim/pool/pool_sizing.h"
#include "sim/scheduler/step_scheduler.h"
#include "tests/sim/test_scenarios.h"

namespace metronome {
namespace {

AdmissionGate gate_for(const Scenario& s, const CostModel& cost, int64_t pool_blocks) {
  return AdmissionGate(s, frame_rule(s), cost, pool_blocks, frame_period(s),
                       from_seconds(s.horizon_s), true);
}

Session admitted(const AdmissionGate::Entry& e) {
  Session s;
  s.arrival = e.start;
  s.reserve = e.reserve;
  return s;
}

}  // namespace

// Windowed KV with the guard: each caller reserves the window's bound, so a pool of 3.5 bounds
// admits exactly three; a departure gives its reserve back and the next caller fits again.
TEST(AdmissionGate, MemoryGuardReservesTheWindowBound) {
  const Scenario s = testing::moshi(1, "windowed", {"admission.memory_guard=\"on\""});
  const auto cost = make_cost_model(s);
  const int64_t bound = max_blocks_per_session(s);
  ASSERT_GT(bound, 0);
  AdmissionGate gate = gate_for(s, *cost, 3 * bound + bound / 2);
  std::vector<Session> live;
  for (int i = 0; i < 3; ++i) {
    const AdmissionGate::Entry e = gate.admit(0, 60, static_cast<int64_t>(live.size()));
    ASSERT_EQ(e.verdict, AdmissionGate::Verdict::kAdmitted) << i;
    EXPECT_EQ(e.reserve, bound);
    live.push_back(admitted(e));
  }
  EXPECT_TRUE(gate.turns_away_any_caller(3));
  EXPECT_EQ(gate.admit(0, 60, 3).verdict, AdmissionGate::Verdict::kNoMemory);
  gate.depart(live.back());
  EXPECT_FALSE(gate.turns_away_any_caller(2));
  EXPECT_EQ(gate.admit(0, 60, 2).verdict, AdmissionGate::Verdict::kAdmitted);
}

// A call shorter than the window's fill reserves what its tokens cover at hang-up (2 s of Moshi:
// 25 frames, 25 tokens, 2 blocks of 16), not the window's bound; a call that outlives the run
// reserves for its whole length (the bound), as a guard that cannot know where a run ends must.
TEST(AdmissionGate, MemoryGuardReservesWhatTheCallCanHold) {
  const Scenario s = testing::moshi(1, "windowed", {"admission.memory_guard=\"on\""});
  const auto cost = make_cost_model(s);
  const int64_t bound = max_blocks_per_session(s);
  AdmissionGate gate = gate_for(s, *cost, 100 * bound);
  EXPECT_EQ(gate.admit(0, 2.0, 0).reserve, 2);
  EXPECT_EQ(gate.admit(0, 60, 0).reserve, bound);  // 750 frames: the window is full
  // 2 s before the 240 s horizon, a 60 s call: 26 frames fall in the run, all 750 in the call.
  EXPECT_EQ(gate.admit(from_seconds(238), 60, 0).reserve, bound);
}

// The cap turns a caller away before the guard looks: a capped caller reserves nothing.
TEST(AdmissionGate, CapComesBeforeTheGuard) {
  const Scenario s = testing::moshi(
      1, "windowed", {"admission={\"type\":\"static\",\"cap\":1,\"memory_guard\":\"on\"}"});
  const auto cost = make_cost_model(s);
  const int64_t bound = max_blocks_per_session(s);
  AdmissionGate gate = gate_for(s, *cost, 2 * bound);
  ASSERT_EQ(gate.admit(0, 60, 0).verdict, AdmissionGate::Verdict::kAdmitted);
  const AdmissionGate::Entry capped = gate.admit(0, 60, 1);
  EXPECT_EQ(capped.verdict, AdmissionGate::Verdict::kCapped);
  EXPECT_EQ(capped.reserve, 0);
  // One bound is still free: under the cap the next caller is admitted.
  EXPECT_EQ(gate.admit(0, 60, 0).verdict, AdmissionGate::Verdict::kAdmitted);
}

// Spread joins: callers arriving together take the period's slots in bit-reversed order (0, 1/2,
// 1/4, 3/4 of the period), and the summary reports their waits.
TEST(AdmissionGate, SpreadJoinsStartAtTheWidestGaps) {
  const Scenario s = testing::moshi(1, "windowed", {"admission.join=\"spread\""});
  const auto cost = make_cost_model(s);
  AdmissionGate gate = gate_for(s, *cost, 1 << 20);
  const Time period = frame_period(s);
  const Time now = 3 * period;  // at a period boundary: waits equal phases
  const int64_t k = PhaseSpread::kSlots;
  const Time expected[] = {0, (k / 2 * period + k - 1) / k, (k / 4 * period + k - 1) / k,
                           (3 * k / 4 * period + k - 1) / k};
  for (int i = 0; i < 4; ++i) {
    const AdmissionGate::Entry e = gate.admit(now, 60, i);
    ASSERT_EQ(e.verdict, AdmissionGate::Verdict::kAdmitted);
    EXPECT_EQ(e.start - now, expected[i]) << i;
  }
  RunResult r;
  r.sessions_arrived = 4;
  FrameLedger ledger(s, r, nullptr, false);
  gate.summarise(r, ledger, 4);
  EXPECT_TRUE(r.admission.join_spread);
  EXPECT_DOUBLE_EQ(r.admission.join_delay_max_ms, 1e3 * to_seconds(expected[3]));
  EXPECT_DOUBLE_EQ(r.admission.join_delay_mean_ms,
                   1e3 * to_seconds(expected[1] + expected[2] + expected[3]) / 4);
}

// engine.scheduler's values are the registry's, and only vLLM keeps a block out of the pool.
TEST(StepSchedulers, RegistryNamesBothSchedulers) {
  EXPECT_EQ(step_scheduler_names(), (std::vector<std::string>{"frame", "vllm_v1"}));
  EXPECT_EQ(step_scheduler("frame").reserved_blocks, 0);
  EXPECT_EQ(step_scheduler("vllm_v1").reserved_blocks, 1);
  EXPECT_TRUE(step_scheduler("frame").periodic_forecast);
  EXPECT_FALSE(step_scheduler("vllm_v1").periodic_forecast);
  EXPECT_THROW(step_scheduler("sarathi"), std::logic_error);
}

}  // namespace metronome
