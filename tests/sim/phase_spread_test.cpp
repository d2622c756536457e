// Phase-aware joining (sim/phase_spread.h): each new caller goes to the middle of the widest gap
// between live phases, so 2^k callers are exactly evenly spread, and a departure reopens its gap.
// In the engine, callers all arriving at once and spread this way run exactly as callers arriving
// at those phases do.
#include "sim/phase_spread.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <vector>

#include "sim/engine.h"
#include "test_scenarios.h"

namespace metronome {
namespace {

constexpr Time kPeriod = 80'000'000;  // 80 ms

void expect_same(const LatencyHistogram& a, const LatencyHistogram& b) {
  EXPECT_EQ(a.count(), b.count());
  EXPECT_EQ(a.censored(), b.censored());
  EXPECT_DOUBLE_EQ(a.mean_observed(), b.mean_observed());
  for (double p : {0.1, 0.5, 0.9, 0.99, 1.0}) EXPECT_EQ(a.percentile(p), b.percentile(p)) << p;
}

TEST(PhaseSpread, TheFirstCallerStartsOnArrivalAndTheNextHalveTheWidestGap) {
  PhaseSpread p(kPeriod);
  const Time now = 3 * kPeriod + 7'000'000;  // 7 ms into a period
  EXPECT_EQ(p.place(now), now);
  p.add(now, 1);
  // One phase: the widest gap is the whole period, its middle half a period on.
  EXPECT_EQ(p.place(now), now + kPeriod / 2);
  p.add(now + kPeriod / 2, 1);
  // Two gaps of T/2: the earlier-starting one (at 7 ms) is split, at 27 ms.
  EXPECT_EQ(p.place(now) % kPeriod, 27'000'000);
}

TEST(PhaseSpread, PowersOfTwoAreEvenlySpreadWhateverTheArrivals) {
  PhaseSpread p(kPeriod);
  std::vector<Time> phases;
  Time now = 0;
  for (int i = 0; i < 16; ++i) {
    now += 1'234'567 * (i + 1);  // arrivals at irregular instants
    const Time start = p.place(now);
    EXPECT_GE(start, now);
    EXPECT_LT(start - now, kPeriod);  // the join delay stays under one period
    p.add(start, 1);
    phases.push_back(start % kPeriod);
  }
  std::sort(phases.begin(), phases.end());
  for (size_t k = 1; k < phases.size(); ++k) EXPECT_EQ(phases[k] - phases[k - 1], kPeriod / 16);
}

TEST(PhaseSpread, ADepartureReopensItsGap) {
  PhaseSpread p(kPeriod);
  for (Time t : {Time{0}, kPeriod / 2, kPeriod / 4, 3 * kPeriod / 4}) p.add(t, 1);
  p.remove(kPeriod / 4, 1);
  // The gap from 0 to T/2 is whole again and the widest: the next caller goes back to T/4.
  EXPECT_EQ(p.place(kPeriod) % kPeriod, kPeriod / 4);
  // A phase held by two callers stays until both leave.
  p.add(kPeriod / 4, 2);
  p.remove(kPeriod / 4, 1);
  EXPECT_EQ(p.phases(), 4u);
  p.remove(kPeriod / 4, 1);
  EXPECT_EQ(p.phases(), 3u);
}

// 8 callers arriving together and spread land at k x T/8, each in its first period: the same
// starts as 8 callers arriving every T/8, so every frame is served at the same instant.
TEST(PhaseSpread, SpreadCallersRunAsCallersArrivingAtThosePhases) {
  const std::vector<std::string> common = {
      "horizon_s=20", "workload.duration={\"type\":\"fixed\",\"seconds\":100}"};
  auto with = [&](std::vector<std::string> sets) {
    sets.insert(sets.end(), common.begin(), common.end());
    return simulate(testing::moshi(8, "windowed", sets));
  };
  const RunResult spread =
      with({"workload.arrival={\"type\":\"all_at_once\",\"sessions\":8}", "admission.join=spread"});
  const RunResult staggered =
      with({"workload.arrival={\"type\":\"fixed_interval\",\"sessions\":8,\"interval_s\":0.01}"});
  EXPECT_EQ(spread.frames_due, staggered.frames_due);
  EXPECT_EQ(spread.frames_on_time, staggered.frames_on_time);
  expect_same(spread.reported_latency, staggered.reported_latency);
  expect_same(spread.true_latency, staggered.true_latency);
  ASSERT_TRUE(spread.admission.join_spread);
  // Delays 0, 4, 2, 6, 1, 5, 3, 7 eighths of 80 ms: mean 35 ms, max 70 ms.
  EXPECT_DOUBLE_EQ(spread.admission.join_delay_mean_ms, 35.0);
  EXPECT_DOUBLE_EQ(spread.admission.join_delay_max_ms, 70.0);
  // Arriving together, unspread, they share one phase: one batch, and a later p99 than spread.
  const RunResult together = with({"workload.arrival={\"type\":\"all_at_once\",\"sessions\":8}"});
  EXPECT_GT(together.reported_latency.percentile(0.99), spread.reported_latency.percentile(0.99));
}

}  // namespace
}  // namespace metronome
