// Hostile numbers: each is either a correct run (accounting holds, no NaN or infinity in the JSON)
// or a ConfigError naming the field; never undefined behaviour, overflow or a hang.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>

#include "base/config_error.h"
#include "sim/analysis/report.h"
#include "sim/closed_form/first_order.h"
#include "sim/engine/engine.h"
#include "tests/sim/test_scenarios.h"

namespace metronome {
namespace {

using testing::moshi;

// No NaN or infinity anywhere in the output (JSON null stands for "never" and "censored").
void expect_finite(const nlohmann::json& j, const std::string& path = "") {
  if (j.is_number_float()) {
    EXPECT_TRUE(std::isfinite(j.get<double>())) << path;
  } else if (j.is_object()) {
    for (auto it = j.begin(); it != j.end(); ++it) expect_finite(it.value(), path + "/" + it.key());
  } else if (j.is_array()) {
    for (size_t i = 0; i < j.size(); ++i) expect_finite(j[i], path + "/" + std::to_string(i));
  }
}

RunResult run_checked(const Scenario& s) {
  const auto p = predict_first_order(s);
  const RunResult r = simulate(s);
  const auto j = run_json(s, p, r, "test");
  expect_finite(j);
  EXPECT_EQ(r.blocks_allocated - r.blocks_released, r.final_pool_blocks);
  EXPECT_LE(r.peak_pool_blocks, p.pool.num_blocks);
  EXPECT_LE(r.frames_served, r.frames_due);
  EXPECT_GE(r.frames_due, 0);
  return r;
}

void expect_config_error(const std::function<void()>& f, const std::string& field) {
  try {
    f();
    ADD_FAILURE() << "expected a ConfigError naming " << field;
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find(field), std::string::npos) << e.what();
  }
}

}  // namespace

TEST(Hostile, AMillionSessions) {
  const RunResult r = run_checked(moshi(1'000'000, "unbounded", {"horizon_s=20"}));
  EXPECT_EQ(r.sessions_arrived, 1'000'000);
  EXPECT_TRUE(r.crashed());  // a million callers cannot fit 13,053 blocks
  expect_config_error([] { moshi(20'000'000, "unbounded"); }, "workload.arrival.sessions");
}

TEST(Hostile, HorizonOfDaysAt80ms) {
  // Two days, 50 windowed callers for the whole run, one sample a minute.
  const RunResult r =
      run_checked(moshi(50, "windowed",
                        {"horizon_s=172800", "output.sample_period_s=60",
                         "workload.duration={\"type\":\"fixed\",\"seconds\":172800}"}));
  EXPECT_FALSE(r.crashed());
  EXPECT_EQ(r.frames_served, 50 * (172800 * 25 / 2));  // 12.5 frames/s, all served
  // 1e8 s of 80 ms frames is 1.25e9 frame periods, each an engine step: refused.
  expect_config_error([] { moshi(50, "windowed", {"horizon_s=1e8"}); },
                      "horizon_s: expected at most 1e8 frame periods");
  expect_config_error(
      [] {
        moshi(50, "windowed", {"horizon_s=2e7", "workload.frame_period_s=1"});
      },
      "output.sample_period_s");
}

TEST(Hostile, FramePeriodsOfOneNanosecondAndOfAYear) {
  const RunResult fast = run_checked(
      moshi(3, "unbounded",
            {"workload.frame_period_s=1e-9", "horizon_s=0.01", "output.sample_period_s=0.001"}));
  EXPECT_GT(fast.frames_due, 1'000'000);  // frames pile up faster than any step
  const RunResult slow = run_checked(
      moshi(3, "unbounded",
            {"workload.frame_period_s=31536000", "horizon_s=1e8", "output.sample_period_s=1e5",
             "workload.duration={\"type\":\"fixed\",\"seconds\":1e8}"}));
  EXPECT_EQ(slow.frames_due, 3 * 4);  // t = 0, 1, 2, 3 years
  EXPECT_FALSE(slow.crashed());
}

TEST(Hostile, ZeroTokensPerFrame) {
  const RunResult r =
      run_checked(moshi(300, "unbounded",
                        {"workload.kv_tokens_per_frame=0", "workload.input_tokens_per_frame=0",
                         "workload.output_tokens_per_frame=0"}));
  EXPECT_FALSE(r.crashed());
  EXPECT_EQ(r.peak_pool_blocks, 0);
  EXPECT_EQ(r.tokens_produced, 0);
}

TEST(Hostile, DegenerateWindows) {
  // W = 0 and S = 0: each session keeps only the block it is writing.
  const RunResult none =
      run_checked(moshi(300, "windowed", {"kv_policy.window_tokens=0", "kv_policy.sink_tokens=0"}));
  EXPECT_FALSE(none.crashed());
  EXPECT_LE(none.max_resident_blocks_per_session, 1);
  // Sinks larger than the window.
  const RunResult sinks = run_checked(
      moshi(300, "windowed", {"kv_policy.window_tokens=10", "kv_policy.sink_tokens=100"}));
  EXPECT_FALSE(sinks.crashed());
  EXPECT_LE(sinks.max_resident_blocks_per_session,
            7 + 2);  // 100 sink tokens = 7 blocks, window 1-2
}

TEST(Hostile, OddBlockSizes) {
  for (const char* bs : {"engine.block_size=1", "engine.block_size=7", "engine.block_size=1000"}) {
    const Scenario s = moshi(300, "unbounded", {bs});
    const auto p = predict_first_order(s);
    const RunResult r = run_checked(s);
    ASSERT_TRUE(r.crashed()) << bs;
    // Within 1% (a pool of 1000-token blocks is full at t = 0, where both are 0).
    EXPECT_NEAR(*r.first_stall_s, *p.t_sat_blocks_s, 0.01 * *p.t_sat_blocks_s + 1e-6) << bs;
  }
}

TEST(Hostile, PoolSmallerThanOneSessionsSinks) {
  expect_config_error(
      [] {
        size_pool(moshi(1, "windowed", {"engine.num_blocks=4", "kv_policy.sink_tokens=100"}));
      },
      "cannot hold one windowed session");
}

TEST(Hostile, HeavyTailedDurations) {
  const RunResult r = run_checked(
      moshi(0, "unbounded",
            {"workload.arrival={\"type\":\"poisson\",\"rate_per_s\":5}",
             "workload.duration={\"type\":\"lognormal\",\"median_s\":5,\"sigma\":10}"}));
  EXPECT_GT(r.sessions_arrived, 900);
  EXPECT_GT(r.sessions_departed, 0);
}

TEST(Hostile, ArrivalRatesOfZeroAndABillion) {
  const RunResult none = run_checked(
      moshi(0, "unbounded", {"workload.arrival={\"type\":\"poisson\",\"rate_per_s\":0}"}));
  EXPECT_EQ(none.sessions_arrived, 0);
  EXPECT_EQ(none.frames_due, 0);
  expect_config_error(
      [] { moshi(0, "unbounded", {"workload.arrival={\"type\":\"poisson\",\"rate_per_s\":1e9}"}); },
      "workload.arrival.rate_per_s");
  // A billion per second is fine when the run is capped.
  const RunResult capped = run_checked(
      moshi(0, "unbounded",
            {"workload.arrival={\"type\":\"poisson\",\"rate_per_s\":1e9,\"max_sessions\":1000}"}));
  EXPECT_EQ(capped.sessions_arrived, 1000);
}

}  // namespace metronome
