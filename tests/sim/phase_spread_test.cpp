// Phase-aware joining (sim/admission/phase_spread.h): new callers take slots of the period in
// bit-reversed order, so 2^k callers are exactly evenly spread and any n within a factor of two,
// and a departure gives its slot back first. In the engine, callers all arriving at once and spread
// this way run exactly as callers arriving at those phases do.
#include "sim/admission/phase_spread.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <vector>

#include "base/rng.h"
#include "sim/engine/engine.h"
#include "test_scenarios.h"

namespace metronome {
namespace {

constexpr Time kPeriod = 80'000'000;  // 80 ms

void expect_same(const LatencyHistogram& a, const LatencyHistogram& b) {
  EXPECT_EQ(a.count(), b.count());
  EXPECT_EQ(a.censored(), b.censored());
  EXPECT_TRUE(a == b) << "the histograms' bins differ";
  for (double p : {0.1, 0.5, 0.9, 0.99, 1.0}) EXPECT_EQ(a.percentile(p), b.percentile(p)) << p;
}

TEST(PhaseSpread, SlotsFillInBitReversedOrder) {
  PhaseSpread p(kPeriod);
  const Time now = 3 * kPeriod + 7'000'000;  // 7 ms into a period
  // Phase 0 first: the rest of this period, 73 ms on.
  EXPECT_EQ(p.place(now), 4 * kPeriod);
  for (Time phase : {Time{0}, kPeriod / 2, kPeriod / 4, 3 * kPeriod / 4, kPeriod / 8}) {
    EXPECT_EQ(p.place(now) % kPeriod, phase);
    p.add(p.place(now), 1);
  }
  EXPECT_EQ(p.target(), 5 * kPeriod / 8);
}

// The walk down the tree picks what a scan of every slot in fill order picks: the first of the
// least loaded, through joins, departures and cohorts at random phases.
TEST(PhaseSpread, TargetIsTheFirstLeastLoadedSlotInFillOrder) {
  PhaseSpread p(kPeriod);
  std::vector<int64_t> load(PhaseSpread::kSlots, 0);
  std::vector<Time> live;
  const auto slot = [](Time t) { return (t % kPeriod) * PhaseSpread::kSlots / kPeriod; };
  const auto reversed = [](int64_t i) {
    int64_t r = 0;
    for (int b = 0; b < PhaseSpread::kBits; ++b)
      r |= ((i >> b) & 1) << (PhaseSpread::kBits - 1 - b);
    return r;
  };
  Rng rng(12345, "phase_spread_test");
  const auto draw = [&rng](uint64_t n) { return rng.next() % n; };

  for (int step = 0; step < 20000; ++step) {
    int64_t best = reversed(0);
    for (int64_t i = 0; i < PhaseSpread::kSlots; ++i) {
      if (load[static_cast<size_t>(reversed(i))] < load[static_cast<size_t>(best)])
        best = reversed(i);
    }
    ASSERT_EQ(slot(p.target()), best) << "step " << step;
    if (live.empty() || draw(3) != 0) {  // a join: at the target, or (a cohort) anywhere
      const Time at = draw(4) == 0 ? static_cast<Time>(draw(kPeriod)) : p.target();
      const int64_t n = draw(4) == 0 ? 3 : 1;
      for (int64_t j = 0; j < n; ++j) live.push_back(at);
      p.add(at, n);
      load[static_cast<size_t>(slot(at))] += n;
    } else {  // a departure
      const size_t k = draw(live.size());
      p.remove(live[k], 1);
      --load[static_cast<size_t>(slot(live[k]))];
      live.erase(live.begin() + static_cast<ptrdiff_t>(k));
    }
    ASSERT_EQ(p.load_at(live.empty() ? 0 : live.back()),
              live.empty() ? load[0] : load[static_cast<size_t>(slot(live.back()))]);
  }
}

TEST(PhaseSpread, AnyFirstNAreSpreadWithinAFactorOfTwoWhateverTheArrivals) {
  for (int n : {16, 24, 100, 156, 1000}) {
    PhaseSpread p(kPeriod);
    std::vector<Time> phases;
    Time now = 0;
    for (int i = 0; i < n; ++i) {
      now += 1'234'567 * (i % 7 + 1);  // arrivals at irregular instants
      const Time start = p.place(now);
      EXPECT_GE(start, now);
      EXPECT_LT(start - now, kPeriod);  // the join delay stays under one period
      p.add(start, 1);
      phases.push_back(start % kPeriod);
    }
    std::sort(phases.begin(), phases.end());
    Time widest = phases.front() + kPeriod - phases.back(), narrowest = widest;
    for (size_t k = 1; k < phases.size(); ++k) {
      widest = std::max(widest, phases[k] - phases[k - 1]);
      narrowest = std::min(narrowest, phases[k] - phases[k - 1]);
    }
    EXPECT_LE(widest, 2 * narrowest + 1) << n;  // 1 ns: slot starts are rounded up
    if ((n & (n - 1)) == 0) EXPECT_EQ(widest, kPeriod / n) << n;  // powers of two: evenly
  }
}

TEST(PhaseSpread, ADepartureGivesItsSlotBackInFillOrder) {
  PhaseSpread p(kPeriod);
  for (Time t : {Time{0}, kPeriod / 2, kPeriod / 4, 3 * kPeriod / 4}) p.add(t, 1);
  p.remove(kPeriod / 4, 1);
  EXPECT_EQ(p.target(), kPeriod / 4);  // before 1/8, which comes next in fill order
  // A slot held by two callers stays loaded until both leave.
  p.add(kPeriod / 4, 2);
  p.remove(kPeriod / 4, 1);
  EXPECT_EQ(p.load_at(kPeriod / 4), 1);
  EXPECT_EQ(p.target(), kPeriod / 8);
}

// 8 callers arriving together at t = 0 and spread land at k x T/8, each in its first period: the
// same starts as 8 callers arriving every T/8, so every frame is served at the same instant.
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
