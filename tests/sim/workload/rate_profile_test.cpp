#include "sim/workload/rate_profile.h"

#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>

#include "base/config_error.h"
#include "sim/config/scenario.h"
#include "sim/cost/cost_model.h"
#include "sim/engine/engine.h"
#include "sim/pool/pool_sizing.h"
#include "tests/expect_error.h"

namespace metronome {
namespace {

const std::string kSource = METRONOME_SOURCE_DIR;

std::string write_temp(const std::string& name, const std::string& text) {
  auto path = std::filesystem::temp_directory_path() / ("metronome_profile_test_" + name);
  std::ofstream(path) << text;
  return path.string();
}

// Arrival instants under `points` up to `until_s`, from seed `seed`.
std::vector<double> draw(const std::vector<RatePoint>& points, double until_s, uint64_t seed,
                         double start_s = 0) {
  auto a = ProfileArrivals(start_s, points).make_process();
  Rng rng(seed, "arrivals");
  std::vector<double> t;
  while (auto next = a->next(rng)) {
    if (to_seconds(*next) > until_s) break;
    t.push_back(to_seconds(*next));
  }
  return t;
}

const ProfileArrivals& profile_of(const Scenario& s) {
  return dynamic_cast<const ProfileArrivals&>(*s.workload.arrival.policy);
}

std::string scenario_with(const std::string& arrival) {
  return R"({"model": "moshi", "gpu": "h200", "kv_policy": {"type": "windowed", "window_tokens": 480},
    "workload": {"arrival": )" +
         arrival + R"(, "duration": {"type": "fixed", "seconds": 10}}, "horizon_s": 300})";
}

}  // namespace

// Per interval, the count of arrivals is Poisson with mean rate x length: each count must fall
// within 4 standard deviations of it (a rate off by 10% in the 50/s interval is 25 sd away), a
// zero-rate interval has none, and the total over 20 seeds is within 4 sd of its mean.
TEST(RateProfile, CountsPerIntervalArePoissonWithTheProfilesMean) {
  const std::vector<RatePoint> p = {{0, 5}, {100, 50}, {200, 0}, {300, 20}, {350, 1}};
  const std::vector<double> edges = {0, 100, 200, 300, 350, 1000};
  std::vector<double> total(edges.size() - 1, 0);
  const int seeds = 20;
  for (int seed = 1; seed <= seeds; ++seed) {
    const auto t = draw(p, 1000, static_cast<uint64_t>(seed));
    ASSERT_TRUE(std::is_sorted(t.begin(), t.end()));
    for (size_t k = 0; k + 1 < edges.size(); ++k) {
      const double n = static_cast<double>(std::count_if(
          t.begin(), t.end(), [&](double x) { return x >= edges[k] && x < edges[k + 1]; }));
      const double mean = expected_calls(p, edges[k], edges[k + 1]);
      EXPECT_LE(std::fabs(n - mean), 4 * std::sqrt(mean) + 1e-9)
          << "seed " << seed << ", interval [" << edges[k] << ", " << edges[k + 1] << ")";
      total[k] += n;
    }
  }
  for (size_t k = 0; k + 1 < edges.size(); ++k) {
    const double mean = seeds * expected_calls(p, edges[k], edges[k + 1]);
    EXPECT_LE(std::fabs(total[k] - mean), 4 * std::sqrt(mean) + 1e-9) << "interval " << k;
  }
  EXPECT_EQ(total[2], 0) << "no caller arrives while the rate is 0";
}

// Gaps within one interval are exponential: their mean is 1 / rate and their coefficient of
// variation 1 (a fixed-interval or uniform process of the same rate has 0 or 0.58).
TEST(RateProfile, GapsAreExponential) {
  const auto t = draw({{0, 10}}, 2000, 7);
  std::vector<double> gaps;
  for (size_t i = 1; i < t.size(); ++i) gaps.push_back(t[i] - t[i - 1]);
  double mean = 0, var = 0;
  for (double g : gaps) mean += g;
  mean /= static_cast<double>(gaps.size());
  for (double g : gaps) var += (g - mean) * (g - mean);
  var /= static_cast<double>(gaps.size() - 1);
  EXPECT_NEAR(mean, 0.1, 0.004);  // 20,000 gaps: the mean's sd is 0.1 / sqrt(20,000) = 0.0007
  EXPECT_NEAR(std::sqrt(var) / mean, 1.0, 0.03);
}

TEST(RateProfile, ExpectedCallsIsTheIntegralAndTheLastRateHolds) {
  const std::vector<RatePoint> p = {{0, 2}, {60, 10}, {120, 0}, {180, 4}};
  EXPECT_DOUBLE_EQ(expected_calls(p, 0, 240), 2 * 60 + 10 * 60 + 0 + 4 * 60);
  EXPECT_DOUBLE_EQ(expected_calls(p, 30, 90), 2 * 30 + 10 * 30);
  // Past the last point its rate holds: 1,000 s more at 4 per second.
  EXPECT_DOUBLE_EQ(expected_calls(p, 0, 1240) - expected_calls(p, 0, 240), 4000);
  EXPECT_DOUBLE_EQ(peak_rate(p), 10);
  const auto t = draw(p, 1240, 3);
  const double late =
      static_cast<double>(std::count_if(t.begin(), t.end(), [](double x) { return x >= 240; }));
  EXPECT_LE(std::fabs(late - 4000), 4 * std::sqrt(4000.0));
  // A profile that ends at rate 0 ends the arrivals.
  const auto none = draw({{0, 1}, {10, 0}}, 1e6, 3);
  ASSERT_FALSE(none.empty());
  EXPECT_LT(none.back(), 10);
}

TEST(RateProfile, StartsAtStartS) {
  const auto t = draw({{0, 5}, {50, 20}}, 100, 5, 60);
  ASSERT_FALSE(t.empty());
  EXPECT_GE(t.front(), 60);
  EXPECT_LE(std::fabs(static_cast<double>(t.size()) - 800), 4 * std::sqrt(800.0));
}

TEST(RateProfile, SameSeedSameCallsAndTheSeedMatters) {
  const std::vector<RatePoint> p = {{0, 3}, {20, 9}, {40, 1}};
  EXPECT_EQ(draw(p, 100, 11), draw(p, 100, 11));
  EXPECT_NE(draw(p, 100, 11), draw(p, 100, 12));
}

// The shipped short profile, through the scenario loader and the engine: a whole run is the same
// for the same seed, and the calls it offers match the profile's integral.
TEST(RateProfile, ShippedShortScenarioRunsDeterministically) {
  const std::string path = kSource + "/scenarios/traffic/moshi_h200_short.json";
  const Scenario s = load_scenario(path);
  ASSERT_EQ(s.workload.arrival.type(), "profile");
  ASSERT_EQ(profile_of(s).points().size(), 4u);
  EXPECT_TRUE(std::filesystem::path(profile_of(s).file()).is_absolute());
  // The resolved scenario names the CSV and reads back to the same profile.
  const Scenario again = parse_scenario(to_json(s), "resolved");
  EXPECT_EQ(profile_of(again).points(), profile_of(s).points());
  auto run = [&] {
    auto cost = make_cost_model(s);
    Engine e(s, *cost, size_pool(s));
    return e.run();
  };
  const RunResult a = run(), b = run();
  EXPECT_EQ(a.sessions_arrived, b.sessions_arrived);
  EXPECT_EQ(a.frames_served, b.frames_served);
  EXPECT_EQ(a.engine_steps, b.engine_steps);
  EXPECT_EQ(a.busy_s, b.busy_s);
  const double mean = expected_calls(profile_of(s).points(), 0, s.horizon_s);  // 960
  EXPECT_LE(std::fabs(static_cast<double>(a.sessions_arrived) - mean), 4 * std::sqrt(mean));
}

TEST(RateProfile, InlinePointsLoadAndRoundTrip) {
  const Scenario s = load_scenario(write_temp(
      "inline.json",
      scenario_with(R"({"type": "profile", "profile": [[0, 1], [100, 3.5], [200, 0]]})")));
  const std::vector<RatePoint> want = {{0, 1}, {100, 3.5}, {200, 0}};
  EXPECT_EQ(profile_of(s).points(), want);
  EXPECT_TRUE(profile_of(s).file().empty());
  EXPECT_EQ(profile_of(parse_scenario(to_json(s), "resolved")).points(), want);
}

TEST(RateProfile, BadProfilesNameTheFileAndField) {
  auto load = [](const std::string& name, const std::string& arrival) {
    return [=] { load_scenario(write_temp(name, scenario_with(arrival))); };
  };
  const std::string f = "metronome_profile_test_";
  expect_error(load("e1.json", R"({"type": "profile", "profile": []})"),
               {f + "e1.json", "workload.arrival.profile", "at least one point", "empty"});
  expect_error(load("e2.json", R"({"type": "profile", "profile": [[0, 1], [-5, 1]]})"),
               {f + "e2.json", "workload.arrival.profile[1]", "time_s", "0 to 1e9"});
  expect_error(load("e3.json", R"({"type": "profile", "profile": [[0, 1], [50, 1], [50, 2]]})"),
               {"workload.arrival.profile[2]", "time_s", "increasing order", "50 after 50"});
  expect_error(load("e4.json", R"({"type": "profile", "profile": [[0, 1], [10, -2]]})"),
               {"workload.arrival.profile[1]", "calls_per_s", "got -2"});
  expect_error(load("e5.json", R"({"type": "profile", "profile": [[5, 1]]})"),
               {"workload.arrival.profile[0]", "first point at 0 s"});
  expect_error(load("e6.json", R"({"type": "profile", "profile": [[0, 1, 2]]})"),
               {"workload.arrival.profile[0]", "two numbers"});
  expect_error(load("e7.json", R"({"type": "profile"})"),
               {f + "e7.json", "workload.arrival.profile", "either profile"});
  expect_error(load("e8.json", R"({"type": "profile", "profile": [[0, 1e7]]})"),
               {"workload.arrival.profile", "at most 1e7 callers"});
  expect_error(load("e9.json", R"({"type": "profile", "profile_file": "nowhere.csv"})"),
               {f + "e9.json", "workload.arrival.profile_file", "nowhere.csv", "cannot open"});
  // A CSV's errors name the scenario's field, the CSV and its line.
  write_temp("bad1.csv", "time_s,calls_per_s\n0,1\n# a comment\n\n30,2\n20,3\n");
  expect_error(load("e10.json", R"({"type": "profile", "profile_file": ")" + f + R"(bad1.csv"})"),
               {"workload.arrival.profile_file", f + "bad1.csv:6", "increasing order"});
  write_temp("bad2.csv", "time,rate\n0,1\n");
  expect_error(load("e11.json", R"({"type": "profile", "profile_file": ")" + f + R"(bad2.csv"})"),
               {f + "bad2.csv:1", "header time_s,calls_per_s"});
  write_temp("bad3.csv", "time_s,calls_per_s\n0,abc\n");
  expect_error(load("e12.json", R"({"type": "profile", "profile_file": ")" + f + R"(bad3.csv"})"),
               {f + "bad3.csv:2", "two finite numbers"});
  write_temp("bad4.csv", "time_s,calls_per_s\n");
  expect_error(load("e13.json", R"({"type": "profile", "profile_file": ")" + f + R"(bad4.csv"})"),
               {f + "bad4.csv", "at least one point"});
  write_temp("bad5.csv", "time_s,calls_per_s\n0,nan\n");
  expect_error(load("e14.json", R"({"type": "profile", "profile_file": ")" + f + R"(bad5.csv"})"),
               {f + "bad5.csv:2", "two finite numbers"});
}

}  // namespace metronome
