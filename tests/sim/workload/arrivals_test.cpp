// The arrival and duration registries (sim/workload/): every shipped type loads from its section,
// writes back the section it read (the resolved scenario reads back to the same draws), accepts
// another type's keys so a --set flips the type, and answers what the rest of the simulator asks
// of it (callers live at once, a fixed call length) in closed form.
#include "sim/workload/arrivals.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <vector>

#include "sim/config/scenario.h"
#include "sim/workload/durations.h"
#include "tests/expect_error.h"
#include "tests/sim/test_scenarios.h"

namespace metronome {
namespace {

Scenario with(const std::string& arrival, const std::string& duration) {
  return testing::moshi(1, "unbounded",
                        {"workload.arrival=" + arrival, "workload.duration=" + duration});
}

std::vector<Time> instants(const Scenario& s, uint64_t seed, size_t most = 1000) {
  auto a = make_arrival_process(s.workload.arrival);
  Rng rng(seed, "arrivals");
  std::vector<Time> t;
  while (t.size() < most) {
    const auto next = a->next(rng);
    if (!next) break;
    t.push_back(*next);
  }
  return t;
}

std::vector<double> lengths(const Scenario& s, uint64_t seed) {
  auto d = make_duration_distribution(s.workload.duration);
  Rng rng(seed, "durations");
  std::vector<double> v;
  for (int i = 0; i < 100; ++i) v.push_back(d->sample(rng));
  return v;
}

const std::vector<std::string> kArrivals = {
    R"({"type":"all_at_once","sessions":5,"start_s":2})",
    R"({"type":"fixed_interval","sessions":4,"interval_s":0.5})",
    R"({"type":"poisson","rate_per_s":3,"max_sessions":20,"start_s":1})",
    R"({"type":"profile","profile":[[0,2],[10,0],[20,5]]})",
    R"({"type":"uniform","sessions":6,"within_s":3,"start_s":1})"};
const std::vector<std::string> kDurations = {R"({"type":"fixed","seconds":30})",
                                             R"({"type":"exponential","mean_s":40})",
                                             R"({"type":"lognormal","median_s":20,"sigma":0.5})"};

// Each section's resolved form is the section itself, and the re-read scenario draws the same
// instants and lengths as the first: what a write forgets would change one of them.
TEST(WorkloadRegistries, EveryTypeWritesWhatItReadsAndDrawsTheSameAfterARoundTrip) {
  for (size_t i = 0; i < kArrivals.size(); ++i) {
    const std::string& d = kDurations[i % kDurations.size()];
    const Scenario s = with(kArrivals[i], d);
    const nlohmann::json resolved = to_json(s);
    nlohmann::json want = nlohmann::json::parse(kArrivals[i]);
    if (!want.contains("start_s")) want["start_s"] = 0.0;
    if (want["type"] == "poisson" && !want.contains("max_sessions")) want["max_sessions"] = 0;
    EXPECT_EQ(resolved["workload"]["arrival"], want) << kArrivals[i];
    EXPECT_EQ(resolved["workload"]["duration"], nlohmann::json::parse(d)) << d;
    const Scenario again = parse_scenario(resolved, "resolved");
    EXPECT_EQ(to_json(again), resolved);
    EXPECT_EQ(instants(again, 7), instants(s, 7)) << kArrivals[i];
    EXPECT_FALSE(instants(s, 7).empty()) << kArrivals[i];
    EXPECT_EQ(lengths(again, 7), lengths(s, 7)) << d;
  }
}

// The registry's order is the message's: "expected one of" lists every type, and a key only
// another type reads is accepted (so --set workload.arrival.type=... flips a scenario) while a key
// no type reads is an error naming it.
TEST(WorkloadRegistries, TypesAreListedAndOtherTypesKeysAccepted) {
  expect_error([] { with(R"({"type":"poison"})", kDurations[0]); },
               {"workload.arrival.type", R"(one of "all_at_once" "fixed_interval" "poisson")"});
  expect_error([] { with(kArrivals[0], R"({"type":"gamma"})"); },
               {"workload.duration.type", R"(one of "fixed" "exponential" "lognormal")"});
  const Scenario flipped = testing::moshi(
      300, "unbounded", {"workload.arrival.type=poisson", "workload.arrival.rate_per_s=2"});
  EXPECT_EQ(flipped.workload.arrival.type(), "poisson");
  EXPECT_FALSE(to_json(flipped)["workload"]["arrival"].contains("sessions"));
  // The name follows the type, not the count the old type left behind.
  EXPECT_NE(flipped.name.find("-poisson-"), std::string::npos) << flipped.name;
  EXPECT_EQ(flipped.name.find("-300-"), std::string::npos) << flipped.name;
  expect_error([] { with(R"({"type":"poisson","rate_per_s":1,"rate_per_S":3})", kDurations[0]); },
               {"workload.arrival.rate_per_S", "unknown field"});
  expect_error([] { with(R"({"type":"poisson"})", kDurations[0]); },
               {"workload.arrival.rate_per_s", "expected"});
}

// What recommend and the memory guard ask: callers live at once (the count; Little's law, capped
// by max_sessions; the profile's peak rate) and whether call lengths are fixed.
TEST(WorkloadRegistries, LiveCallersAndFixedLengthsInClosedForm) {
  auto live = [](const std::string& a, double call_s) {
    return with(a, kDurations[0]).workload.arrival.policy->live_callers(call_s);
  };
  EXPECT_DOUBLE_EQ(live(kArrivals[0], 1e6), 5);
  EXPECT_DOUBLE_EQ(live(kArrivals[1], 1.0), 2);     // min(4, 1 / 0.5)
  EXPECT_DOUBLE_EQ(live(kArrivals[1], 100.0), 4);   // every caller
  EXPECT_DOUBLE_EQ(live(kArrivals[2], 2.0), 6);     // 3/s x 2 s
  EXPECT_DOUBLE_EQ(live(kArrivals[2], 100.0), 20);  // max_sessions
  EXPECT_DOUBLE_EQ(live(kArrivals[3], 2.0), 10);    // peak 5/s x 2 s
  EXPECT_EQ(with(kArrivals[0], kDurations[0]).workload.duration.fixed_s(), 30.0);
  EXPECT_EQ(with(kArrivals[0], kDurations[1]).workload.duration.fixed_s(), std::nullopt);
  EXPECT_DOUBLE_EQ(with(kArrivals[0], kDurations[2]).workload.duration.policy->typical_s(), 20);
  EXPECT_FALSE(with(kArrivals[0], kDurations[0]).workload.arrival.random());
  EXPECT_TRUE(with(kArrivals[2], kDurations[0]).workload.arrival.random());
}

// uniform: exactly N callers, in order, inside [start_s, start_s + within_s], and spread uniformly
// there: the Kolmogorov-Smirnov distance of 2000 instants to the uniform CDF stays under 0.05 (the
// 0.1% critical value is 1.95 / sqrt(2000) = 0.044) for each of 5 seeds. Spacings drawn with one
// exponent for every caller (V^(1/N)) bunch them at the start: a distance past 0.3.
TEST(WorkloadRegistries, UniformArrivalsAreNSortedUniformDraws) {
  const Scenario s =
      with(R"({"type":"uniform","sessions":2000,"within_s":100,"start_s":5})", kDurations[0]);
  for (uint64_t seed = 1; seed <= 5; ++seed) {
    const std::vector<Time> t = instants(s, seed, 5000);
    ASSERT_EQ(t.size(), 2000u);
    const double n = static_cast<double>(t.size());
    double ks = 0;
    for (size_t i = 0; i < t.size(); ++i) {
      ASSERT_TRUE(i == 0 || t[i] >= t[i - 1]);
      const double x = (to_seconds(t[i]) - 5) / 100;
      ASSERT_GE(x, 0);
      ASSERT_LE(x, 1);
      ks = std::max({ks, std::fabs(x - static_cast<double>(i) / n),
                     std::fabs(x - static_cast<double>(i + 1) / n)});
    }
    EXPECT_LT(ks, 0.05) << "seed " << seed;
  }
  EXPECT_NE(instants(s, 1), instants(s, 2));
  EXPECT_DOUBLE_EQ(s.workload.arrival.policy->live_callers(10), 200);  // 20/s x 10 s
  EXPECT_DOUBLE_EQ(s.workload.arrival.policy->live_callers(1000), 2000);
  EXPECT_TRUE(s.workload.arrival.random());
  expect_error([] { with(R"({"type":"uniform","sessions":3})", kDurations[0]); },
               {"workload.arrival.within_s", "expected"});
}

}  // namespace
}  // namespace metronome
