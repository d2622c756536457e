// Cohorts (identical callers simulated as one) are an exact optimisation: every output, summary and
// time series, must be the same with them and without.
#include <gtest/gtest.h>

#include "base/rng.h"
#include "sim/engine/engine.h"
#include "tests/sim/run_recorder.h"
#include "tests/sim/test_scenarios.h"

namespace metronome {
namespace {

std::pair<std::string, std::string> run(const Scenario& s, bool cohorts) {
  const testing::RecordedRun r = testing::record_run(s, [&](Engine& e) { e.set_cohorts(cohorts); });
  return {r.summary, r.trace};
}

}  // namespace

TEST(Cohorts, SameResultsWithAndWithout) {
  using testing::moshi;
  const std::vector<Scenario> cases = {
      moshi(300, "unbounded"),
      moshi(300, "windowed"),
      moshi(500, "windowed"),  // more than fit: partial fits split cohorts
      moshi(300, "unbounded", {"engine.max_sessions_per_step=7", "workload.prompt_tokens=40"}),
      moshi(300, "unbounded",
            {"engine.block_size=5", "workload.kv_tokens_per_frame=3",
             "workload.duration={\"type\":\"fixed\",\"seconds\":70}"}),
      moshi(200, "windowed",
            {"engine.num_blocks=3000", "kv_policy.window_tokens=40", "kv_policy.sink_tokens=4",
             "engine.block_size=4"}),
      moshi(0, "unbounded",
            {"workload.arrival={\"type\":\"fixed_interval\",\"interval_s\":0.5,\"sessions\":300}"}),
      moshi(300, "unbounded", {"workload.duration={\"type\":\"exponential\",\"mean_s\":60}"}),
      moshi(400, "windowed", {"admission={\"type\":\"aimd\"}", "workload.deadline_s=0.01"}),
  };
  for (size_t i = 0; i < cases.size(); ++i) {
    SCOPED_TRACE("case " + std::to_string(i));
    const auto with = run(cases[i], true);
    const auto without = run(cases[i], false);
    EXPECT_EQ(with.first, without.first);
    EXPECT_TRUE(with.second == without.second)
        << "time series or steps differ at "
        << testing::first_difference(with.second, without.second);
    EXPECT_GT(with.second.size(), 100u);
  }
}

// Random all-at-once populations (the case cohorts exist for) against batch caps, partial fits and
// multi-block frames: the shapes where a cohort is split and rejoined.
TEST(Cohorts, RandomPopulationsMatch) {
  Rng rng(5, "cohorts");
  for (int i = 0; i < 40; ++i) {
    const int64_t n = 1 + static_cast<int64_t>(rng.uniform() * 600);
    const std::vector<std::string> sets = {
        "engine.max_sessions_per_step=" +
            std::to_string(1 + static_cast<int64_t>(rng.uniform() * 300)),
        "engine.num_blocks=" + std::to_string(500 + static_cast<int64_t>(rng.uniform() * 20000)),
        "engine.block_size=" + std::to_string(1 + static_cast<int64_t>(rng.uniform() * 32)),
        "workload.kv_tokens_per_frame=" +
            std::to_string(1 + static_cast<int64_t>(rng.uniform() * 80)),
        "workload.prompt_tokens=" + std::to_string(static_cast<int64_t>(rng.uniform() * 100)),
        "workload.duration={\"type\":\"fixed\",\"seconds\":" +
            std::to_string(5 + 60 * rng.uniform()) + "}",
        "horizon_s=60",
        "output.sample_period_s=0.5"};
    const Scenario s = testing::moshi(n, rng.uniform() < 0.5 ? "windowed" : "unbounded", sets);
    SCOPED_TRACE("case " + std::to_string(i));
    const auto with = run(s, true);
    const auto without = run(s, false);
    EXPECT_EQ(with.first, without.first);
    EXPECT_TRUE(with.second == without.second)
        << "time series or steps differ at "
        << testing::first_difference(with.second, without.second);
  }
}

}  // namespace metronome
