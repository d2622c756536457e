// The service-rate check against the simulator: where the engine cannot serve a period's frames
// within the period, the first-order t_sat is early and the service-limited estimate is not.
#include "sim/closed_form/service_rate.h"

#include <gtest/gtest.h>

#include <cmath>

#include "sim/analysis/capacity.h"
#include "sim/engine/engine.h"
#include "tests/sim/test_scenarios.h"

namespace metronome {
namespace {

TEST(ServiceRate, KeepingUpLeavesTheFirstOrderAlone) {
  const Scenario s = testing::moshi(300);
  const auto p = predict_first_order(s);
  const ServiceCheck c = check_service(s, p, *make_cost_model(s));
  EXPECT_TRUE(c.keeps_up);
  EXPECT_LT(c.work_s, c.period_s);
  EXPECT_FALSE(c.t_sat_service_limited_s.has_value());
  EXPECT_EQ(c.context, p.pool.num_blocks * 16 / 300);
}

// A batch cap of 8 or 16 sessions per step makes one period's frames take longer than the period:
// the pool fills 4-90% later than the first-order model says, and within 2% of the estimate that
// serves frames at the cost model's rate.
TEST(ServiceRate, OverloadedEngineFillsThePoolAtTheServiceRate) {
  for (const int batch : {8, 16}) {
    const Scenario s =
        testing::moshi(300, "unbounded",
                       {"engine.max_sessions_per_step=" + std::to_string(batch), "horizon_s=300",
                        "workload.duration={\"type\":\"fixed\",\"seconds\":300}"});
    const auto p = predict_first_order(s);
    const ServiceCheck c = check_service(s, p, *make_cost_model(s));
    EXPECT_FALSE(c.keeps_up) << batch;
    ASSERT_TRUE(c.t_sat_service_limited_s.has_value()) << batch;
    const RunResult r = simulate(s);
    ASSERT_TRUE(r.first_stall_s.has_value()) << batch;
    EXPECT_GT(*r.first_stall_s, 1.04 * *p.t_sat_blocks_s) << batch;
    EXPECT_NEAR(*r.first_stall_s, *c.t_sat_service_limited_s, 0.02 * *r.first_stall_s) << batch;
  }
}

// Callers evenly spread over the period, calls outlasting the run, 8 sessions a step: the line
// where full steps stop keeping pace is where the engine stops keeping up. At the line every frame
// is on time; one caller more and frames fall further behind every period (most are late).
Scenario spread_callers(int64_t n, double horizon_s) {
  return testing::moshi(
      n, "windowed",
      {"engine.max_sessions_per_step=8", "horizon_s=" + std::to_string(horizon_s),
       "workload.arrival={\"type\":\"fixed_interval\",\"sessions\":" + std::to_string(n) +
           ",\"interval_s\":" + std::to_string(0.08 / static_cast<double>(n)) + "}",
       "workload.duration={\"type\":\"fixed\",\"seconds\":1000}"});
}

int64_t full_step_line(const Scenario& s, const CostModel& cost) {
  const int64_t cached = kv::settled_cached_cap(s.kv_policy.window());
  const int64_t line = full_step_sessions(s, cached, cost);
  EXPECT_LE(full_step_utilisation(s, line, cached, cost), 1);
  EXPECT_GT(full_step_utilisation(s, line + 1, cached, cost), 1);
  return line;
}

TEST(ServiceRate, FullStepPaceIsTheLineWhereTheEngineStopsKeepingUp) {
  const Scenario s = spread_callers(1, 120);
  const auto cost = make_cost_model(s);
  const int64_t line = full_step_line(s, *cost);
  ASSERT_GT(line, 8);  // several steps per period: the batch cap, not one step, sets the line
  const RunResult at = simulate(spread_callers(line, 120));
  // All on time but the frames still in flight at the horizon (at most one per caller).
  EXPECT_LE(at.frames_silent, line) << line;
  EXPECT_GE(at.frames_on_time + line, at.frames_due) << line;
  const RunResult past = simulate(spread_callers(line + 1, 120));
  EXPECT_GT(past.frames_due - past.frames_on_time, past.frames_due / 4) << line + 1;
}

// Callers that share a phase release each period's frames at once. At the full-step line their
// period's frames need one more step than full steps would (whole steps take longer than the
// period), yet the engine keeps pace: the next period's frames fill the late steps, so the lag
// stays bounded (some frames miss the deadline by a few ms), and the check says they keep up (it
// said they could not, where capacity put its pace cap at the same callers). One caller more and
// frames fall further behind every period.
TEST(ServiceRate, CallersInPhaseKeepUpAtTheFullStepPace) {
  auto cohort = [](int64_t n) {
    return testing::moshi(n, "windowed",
                          {"engine.max_sessions_per_step=8", "horizon_s=120",
                           "workload.duration={\"type\":\"fixed\",\"seconds\":1000}"});
  };
  const auto cost = make_cost_model(cohort(1));
  const int64_t line = full_step_line(cohort(1), *cost);
  const Scenario at = cohort(line);
  // Whole steps: what a period's frames take when nothing of the next period is ready.
  double whole_s = 0;
  for (int64_t left = line; left > 0; left -= 8) {
    FramePasses p;
    p.add(std::min<int64_t>(left, 8), 1, kv::settled_cached_cap(at.kv_policy.window()), 1,
          at.kv_rule().pricing());
    whole_s += p.seconds(*cost);
  }
  ASSERT_GT(whole_s, 0.08) << line << " callers: whole steps fit the period, nothing to show";
  EXPECT_TRUE(check_service(at, predict_first_order(at), *cost).keeps_up) << line;
  const RunResult r = simulate(at);
  // Over 120 s the last steps' frames stay within a few ms of the period (p99.9 87 ms against
  // 393 ms at p99 one caller more).
  EXPECT_LT(r.true_latency.percentile(0.999), 0.1) << line << ": the lag stays bounded";
  const Scenario past = cohort(line + 1);
  EXPECT_FALSE(check_service(past, predict_first_order(past), *cost).keeps_up) << line + 1;
  const RunResult behind = simulate(past);
  EXPECT_GT(behind.frames_due - behind.frames_on_time, behind.frames_due / 4) << line + 1;
}

// A capacity probe lasts a few seconds, too short to show a slow overload; its deadline cap must
// still stop at the line (before, a 24 s probe put Qwen2.5-Omni-7B's cap at 1041 callers, where
// 1005 already missed 20% of frames over 1000 s).
TEST(ServiceRate, CapacityStopsAtTheLine) {
  const Scenario s = testing::moshi(
      1, "windowed",
      {"model=qwen2.5-omni-7b", "workload.frame_period_s=1", "workload.input_tokens_per_frame=30",
       "workload.output_tokens_per_frame=10", "kv_policy.sink_tokens=0"});
  const auto cost = make_cost_model(s);
  const int64_t line = full_step_line(s, *cost);
  const CapacityReport c = compute_capacity(s, 0.9);
  EXPECT_LE(c.deadline_cap, line);
  EXPECT_GE(c.deadline_cap, line * 9 / 10) << "the deadline, not the line, binds only near it";
}

}  // namespace
}  // namespace metronome
