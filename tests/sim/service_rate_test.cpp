// The service-rate check against the simulator: where the engine cannot serve a period's frames
// within the period, the first-order t_sat is early and the service-limited estimate is not.
#include "sim/service_rate.h"

#include <gtest/gtest.h>

#include <cmath>

#include "sim/engine.h"
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

}  // namespace
}  // namespace metronome
