// The controller's periodic-regime forecast (sim/admission/settled_forecast.h) against closed
// forms: with a fixed step cost every latency is a whole number of steps after a release, and with
// a cost that grows with attention, settled contexts must cost more than fresh ones.
#include "sim/admission/settled_forecast.h"

#include <gtest/gtest.h>

#include "sim/cost/fixed_cost_model.h"

namespace metronome {
namespace {

constexpr Time kPeriod = 80'000'000;  // 80 ms
const kv::Window kWindow{480, 16};

ForecastShape shape(int64_t max_batch) { return {kPeriod, 1, 1, max_batch, kWindow}; }

TEST(SettledForecast, EvenlySpreadCallersWithShortStepsWaitForNothing) {
  // 8 callers 10 ms apart and 2 ms steps: each frame finds the engine idle.
  FixedCostModel cost(0.002);
  std::vector<ForecastCaller> c;
  for (int i = 0; i < 8; ++i) c.push_back({i * kPeriod / 8, 1, 100});
  EXPECT_NEAR(periodic_latency_quantile(c, shape(64), cost, 0.95), 0.002, 1e-9);
}

TEST(SettledForecast, ACohortSplitByTheBatchCapWaitsWholeSteps) {
  // 10 callers at one phase, 4 per step: steps end at 1, 2, 3 steps after the release for 4, 4
  // and 2 of them, every period (3 steps of 2 ms fit in 80 ms).
  FixedCostModel cost(0.002);
  const std::vector<ForecastCaller> c{{5'000'000, 10, 0}};
  EXPECT_NEAR(periodic_latency_quantile(c, shape(4), cost, 0.40), 0.002, 1e-9);
  EXPECT_NEAR(periodic_latency_quantile(c, shape(4), cost, 0.50), 0.004, 1e-9);
  EXPECT_NEAR(periodic_latency_quantile(c, shape(4), cost, 0.95), 0.006, 1e-9);
}

TEST(SettledForecast, AFrameReleasedDuringAStepWaitsForItsEnd) {
  // Two callers 1 ms apart, 3 ms steps: the second waits 2 ms, then its own step.
  FixedCostModel cost(0.003);
  const std::vector<ForecastCaller> c{{0, 1, 0}, {1'000'000, 1, 0}};
  EXPECT_NEAR(periodic_latency_quantile(c, shape(64), cost, 0.5), 0.003, 1e-9);
  EXPECT_NEAR(periodic_latency_quantile(c, shape(64), cost, 1.0), 0.005, 1e-9);
}

// A pass costs 1 ms plus 1 us per query-key pair: attention is what settling adds.
class AttentionCost : public CostModel {
 public:
  double pass_seconds(const PassShape& p) const override { return 1e-3 + 1e-6 * p.qk_pairs; }
  std::string label() const override { return "test: 1 ms + 1 us per query-key pair"; }
  bool measured() const override { return false; }
};

TEST(SettledForecast, SettledContextsAndMoreCallersCostMore) {
  AttentionCost cost;
  std::vector<ForecastCaller> fresh, settled, more;
  for (int i = 0; i < 20; ++i) {
    fresh.push_back({i * kPeriod / 20, 1, 10});
    settled.push_back({i * kPeriod / 20, 1, 496});
  }
  more = settled;
  for (int i = 0; i < 20; ++i) more.push_back({i * kPeriod / 20, 1, 496});  // pairs share a step
  const double a = periodic_latency_quantile(fresh, shape(512), cost, 0.95);
  const double b = periodic_latency_quantile(settled, shape(512), cost, 0.95);
  const double c = periodic_latency_quantile(more, shape(512), cost, 0.95);
  // One caller per 4 ms slot with a fresh context: 1 ms + (10 + 1) us per frame.
  EXPECT_NEAR(a, 1e-3 + 11e-6, 1e-9);
  EXPECT_GT(b, a);
  EXPECT_GT(c, b);
}

// Callers at one phase are served in the order given (a stable sort), and that order shows when
// the batch cap splits them: the first step takes all 3 of A (cached 400, 401 pairs each) and 1
// of B (cached 10, 11 pairs), 2.214 ms; B's other 2 wait for a second step, 1.022 ms more (to the
// nanosecond: steps are timed in whole nanoseconds). The order the replay sorts into and the same
// callers given in that order give the same bits.
TEST(SettledForecast, CallersAtOnePhaseKeepTheirOrder) {
  AttentionCost cost;
  const ForecastCaller a{0, 3, 400}, b{0, 3, 10}, far{kPeriod / 2, 1, 10};
  const std::vector<ForecastCaller> sorted{a, b, far}, unsorted{far, a, b}, swapped{b, a, far};
  const double median = periodic_latency_quantile(unsorted, shape(4), cost, 0.5);
  EXPECT_NEAR(median, 2.214e-3, 1e-8);
  EXPECT_NEAR(periodic_latency_quantile(unsorted, shape(4), cost, 1.0), 3.236e-3, 1e-8);
  EXPECT_EQ(periodic_latency_quantile(sorted, shape(4), cost, 0.5), median);
  // B first: its 3 frames and 1 of A's take the first step, 1.434 ms.
  EXPECT_NEAR(periodic_latency_quantile(swapped, shape(4), cost, 0.5), 1.434e-3, 1e-8);
}

TEST(SettledForecast, StepsThatOutgrowThePeriodShowAsGrowingLatency) {
  // One frame per step (max_batch 1), 4 callers, 30 ms steps: 120 ms of work per 80 ms period,
  // so the backlog grows by 40 ms a period; by the last recorded frame (period 4) a frame waits
  // far more than a period, against 60 ms at most (two steps) if the regime were stable.
  FixedCostModel cost(0.030);
  std::vector<ForecastCaller> c;
  for (int i = 0; i < 4; ++i) c.push_back({i * kPeriod / 4, 1, 0});
  EXPECT_GT(periodic_latency_quantile(c, shape(1), cost, 1.0), 0.080);
  // With batching the same callers are served in time: 20 ms apart, one 30 ms step takes the
  // frame released during the previous one.
  EXPECT_LE(periodic_latency_quantile(c, shape(64), cost, 1.0), 0.060 + 1e-9);
}

TEST(SettledForecast, NoCallersNoLatency) {
  FixedCostModel cost(0.002);
  EXPECT_EQ(periodic_latency_quantile({}, shape(4), cost, 0.95), 0.0);
}

}  // namespace
}  // namespace metronome
