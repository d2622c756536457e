// Gateway admission: each policy's rule on hand-made views, a token bucket's closed form through a
// fleet run, and the fleet's bad inputs (a clear error naming file and field).
#include "sim/fleet/gateway.h"

#include <gtest/gtest.h>

#include <cmath>

#include "base/config_error.h"
#include "sim/engine/engine.h"
#include "sim/fleet/fleet.h"
#include "sim/fleet/fleet_aimd.h"
#include "tests/sim/test_scenarios.h"

namespace metronome {
namespace {

// With a frame deadline of 100 ms (only the fleet's AIMD reads it).
std::unique_ptr<Gateway> gateway(const std::string& section) {
  const nlohmann::json j = nlohmann::json::parse(section);
  JsonSection s(j, "test", "fleet.gateway");
  return gateway_policies().parse(s, "none")->make_gateway(0.1);
}

ReplicaView replica(int64_t queue, int64_t used) {
  ReplicaView v;
  v.queue_depth = queue;
  v.pool_blocks = 100;
  v.free_blocks = 100 - used;
  return v;
}

TEST(Gateway, ShedsOnQueueDepthOrKvUsageAboveItsThresholds) {
  auto shed = gateway(R"({"type": "shed"})");  // defaults: queue depth 5, KV usage 0.8
  EXPECT_EQ(shed->refuse(0, replica(5, 80), 0), nullptr);
  EXPECT_STREQ(shed->refuse(0, replica(6, 0), 0), "queue_depth");
  EXPECT_STREQ(shed->refuse(0, replica(0, 81), 0), "kv_usage");
  auto full = gateway(R"({"type": "shed", "max_kv_usage": 1})");
  EXPECT_EQ(full->refuse(0, replica(0, 100), 0), nullptr);  // usage never passes 1
}

TEST(Gateway, StaticCapsTheFleetsLiveSessions) {
  auto cap = gateway(R"({"type": "static", "cap": 3})");
  EXPECT_EQ(cap->refuse(0, replica(0, 0), 2), nullptr);
  EXPECT_STREQ(cap->refuse(0, replica(0, 0), 3), "fleet_cap");
}

// A bucket of `burst` that refills at `rate`: at one instant it lets burst calls through; over
// t seconds after, floor(rate x t) more (whole tokens).
TEST(Gateway, TokenBucketLetsBurstPlusRateTimesTimeThrough) {
  auto b = gateway(R"({"type": "token_bucket", "rate_per_s": 4, "burst": 3})");
  int through = 0;
  for (int k = 0; k < 10; ++k) through += b->refuse(0, replica(0, 0), 0) == nullptr;
  EXPECT_EQ(through, 3);
  for (int k = 0; k < 10; ++k) through += b->refuse(from_seconds(1.0), replica(0, 0), 0) == nullptr;
  EXPECT_EQ(through, 3 + 3);  // 4 tokens refilled, the bucket holds at most 3

  // Through a fleet: 500 callers at once, then nobody: burst are placed, the rest refused.
  nlohmann::json j = to_json(testing::moshi(500, "windowed", {"horizon_s=5"}));
  j["fleet"] = {{"groups", {{{"count", 3}}}},
                {"gateway", {{"type", "token_bucket"}, {"rate_per_s", 100}, {"burst", 40}}}};
  const FleetResult r = Fleet(parse_scenario(j, "test")).run();
  EXPECT_EQ(r.placed, 40);
  EXPECT_EQ(r.rejected.at("token_bucket"), 460);
}

// The fleet's AIMD on hand-made readings: the worst replica (or the over_replicas quantile) is the
// signal, AIMD's rule moves the fleet's cap, and the cap refuses calls past it over the fleet.
TEST(Gateway, FleetAimdMovesOneCapOnTheFleetsSignal) {
  // Deadline 100 ms: congestion above 90 ms, headroom below 80 ms.
  const std::string aimd = R"({"type": "aimd", "initial_cap": 10, "increase": 2,
                               "decrease_factor": 0.5)";
  auto worst = gateway(aimd + "}");
  auto g = dynamic_cast<FleetAimd*>(worst.get());
  ASSERT_NE(g, nullptr);
  std::vector<double> v = {0.010, 0.200, 0.020};
  g->on_reading(0, v, 8);
  EXPECT_EQ(g->cap(), 5);  // the worst replica congested: 10 x 0.5
  v = {};
  g->on_reading(0, v, 8);
  EXPECT_EQ(g->cap(), 5);  // no replica holds a session: hold
  EXPECT_EQ(g->refuse(0, replica(0, 0), 4), nullptr);
  EXPECT_STREQ(g->refuse(0, replica(0, 0), 5), "fleet_aimd");

  auto median = gateway(aimd + R"(, "over_replicas": 0.5})");
  g = dynamic_cast<FleetAimd*>(median.get());
  v = {0.010, 0.200, 0.020};  // nearest rank 2 of 3: 20 ms, headroom
  g->on_reading(0, v, 8);
  EXPECT_EQ(g->cap(), 12);
  v = {0.010, 0.200, 0.020};
  g->on_reading(0, v, 5);  // 2 x 5 < 12: the cap is not in use, so it does not grow
  EXPECT_EQ(g->cap(), 12);
  v = {0.010, 0.200};  // nearest rank 1 of 2
  g->on_reading(0, v, 6);
  EXPECT_EQ(g->cap(), 14);
}

// Over one replica the fleet's AIMD is the replica's own: the same measurement (the engine's
// interval quantile), the same rule, read at the same instants. Unbounded KV, where the
// per-replica controller's settled forecast is the measurement itself, so nothing else differs:
// every call is admitted or refused alike, and the run is the same frame for frame.
TEST(Gateway, FleetAimdOverOneReplicaIsTheReplicasAimd) {
  const std::vector<std::string> sets = {
      "workload.arrival={\"type\":\"poisson\",\"rate_per_s\":4}",
      "workload.duration={\"type\":\"exponential\",\"mean_s\":200}", "horizon_s=600"};
  const Scenario own = testing::moshi(0, "unbounded", [&] {
    auto s = sets;
    s.push_back("admission.type=aimd");
    return s;
  }());
  const RunResult single = simulate(own);
  ASSERT_GT(single.admission.decreases, 0);  // the controller acted both ways
  ASSERT_GT(single.admission.increases, 0);
  ASSERT_GT(single.sessions_rejected, 0);

  nlohmann::json j = to_json(testing::moshi(0, "unbounded", sets));
  j["fleet"] = {{"groups", {{{"count", 1}}}}, {"gateway", {{"type", "aimd"}}}};
  const FleetResult f = Fleet(parse_scenario(j, "test")).run();
  const RunResult t = f.totals();
  EXPECT_EQ(f.offered, single.sessions_arrived);
  EXPECT_EQ(f.rejected.at("fleet_aimd"), single.sessions_rejected);
  EXPECT_EQ(f.rejected_total(), single.sessions_rejected);
  EXPECT_EQ(t.frames_served, single.frames_served);
  EXPECT_EQ(t.frames_silent, single.frames_silent);
  EXPECT_EQ(t.true_latency.output_percentile(0.99), single.true_latency.output_percentile(0.99));
}

// Over several replicas: each call ends placed or rejected once, the cap moves (it starts at 16
// for the whole fleet and must grow to place more), and no byte depends on the threads.
TEST(Gateway, FleetAimdOverAFleetCountsEveryCallOnceWhateverTheThreads) {
  nlohmann::json j = to_json(testing::moshi(
      0, "windowed",
      {"workload.arrival={\"type\":\"poisson\",\"rate_per_s\":10}",
       "workload.duration={\"type\":\"exponential\",\"mean_s\":100}", "horizon_s=300"}));
  j["fleet"] = {{"groups", {{{"count", 4}}}},
                {"router", {{"type", "least_sessions"}}},
                {"gateway", {{"type", "aimd"}, {"increase", 8}}}};
  const Scenario s = parse_scenario(j, "test");
  const FleetResult one = Fleet(s).run(1), four = Fleet(s).run(4);
  EXPECT_EQ(one.offered, one.placed + one.rejected_total());
  EXPECT_GT(one.placed, 16);
  EXPECT_GT(one.rejected.at("fleet_aimd"), 0);  // 1,000 at once wanted; the cap starts at 16
  EXPECT_EQ(one.rejected.size(), 1u);
  EXPECT_EQ(one.placed, four.placed);
  EXPECT_EQ(one.totals().frames_served, four.totals().frames_served);
  for (size_t i = 0; i < one.replicas.size(); ++i) {
    EXPECT_EQ(one.replicas[i].run.sessions_arrived, four.replicas[i].run.sessions_arrived);
  }
}

// The cap over time, as the fleet reports it: one reading per interval from the first, each
// moved only by AIMD's rule on the signal it reports, and the live count never climbing past the
// cap in force. Unbounded KV on 4 replicas, so the pools fill and the cap is cut as well as raised.
TEST(Gateway, FleetAimdCapSeriesFollowsItsReadings) {
  nlohmann::json j = to_json(testing::moshi(
      0, "unbounded",
      {"workload.arrival={\"type\":\"poisson\",\"rate_per_s\":10}",
       "workload.duration={\"type\":\"exponential\",\"mean_s\":200}", "horizon_s=400"}));
  j["fleet"] = {{"groups", {{{"count", 4}}}},
                {"router", {{"type", "least_sessions"}}},
                {"gateway", {{"type", "aimd"}, {"initial_cap", 64}, {"increase", 8}}}};
  const Scenario s = parse_scenario(j, "test");
  const FleetResult r = Fleet(s).run();
  ASSERT_TRUE(r.gateway_initial_cap.has_value());
  EXPECT_EQ(*r.gateway_initial_cap, 64);
  ASSERT_GT(r.gateway_readings.size(), 100u);
  EXPECT_LE(r.gateway_readings.size(), 400u);
  const double deadline = s.workload.deadline();
  int64_t cap = *r.gateway_initial_cap, live = 0, cuts = 0, raises = 0;
  for (size_t k = 0; k < r.gateway_readings.size(); ++k) {
    const GatewayReading& g = r.gateway_readings[k];
    SCOPED_TRACE("reading " + std::to_string(k) + " at " + std::to_string(g.time_s) + " s");
    EXPECT_DOUBLE_EQ(g.time_s, static_cast<double>(k + 1));  // interval_s 1, from 0 s
    // Calls were placed only below the cap in force; a cut leaves those above it live.
    EXPECT_LE(g.live, std::max(cap, live));
    if (std::isnan(g.signal_s)) {
      EXPECT_EQ(g.cap, cap);  // nobody to hear: hold
    } else if (g.cap < cap) {
      ++cuts;
      EXPECT_GT(g.signal_s, 0.9 * deadline);
      EXPECT_GE(cap, g.live);  // no cut below the live count
      // x decrease_factor 0.9 of a cap kept as a real number, at least its whole part's cut.
      EXPECT_GE(g.cap, static_cast<int64_t>(std::floor(0.9 * static_cast<double>(cap))));
    } else if (g.cap > cap) {
      ++raises;
      EXPECT_LT(g.signal_s, 0.8 * deadline);
      EXPECT_GE(2 * g.live, cap);  // only a cap in use grows
      EXPECT_EQ(g.cap, cap + 8);   // by increase
    }
    cap = g.cap;
    live = g.live;
  }
  EXPECT_GT(cuts, 0);
  EXPECT_GT(raises, 0);
  EXPECT_GT(r.rejected.at("fleet_aimd"), 0);
}

void expect_error(const std::string& fleet, std::vector<std::string> fragments) {
  nlohmann::json j = to_json(testing::moshi(3, "windowed"));
  j["fleet"] = nlohmann::json::parse(fleet);
  try {
    parse_scenario(j, "fleet.json");
    FAIL() << "expected a ConfigError for " << fleet;
  } catch (const ConfigError& e) {
    for (const auto& f : fragments) {
      EXPECT_NE(std::string(e.what()).find(f), std::string::npos)
          << "message \"" << e.what() << "\" lacks \"" << f << "\"";
    }
  }
}

TEST(FleetConfig, BadInputNamesFileAndField) {
  expect_error(R"({"groups": [{"count": 1}], "router": {"type": "random"}})",
               {"fleet.json", "fleet.router.type", "round_robin"});
  expect_error(R"({"groups": [{"count": 0}]})", {"fleet.json", "fleet.groups[0].count"});
  expect_error(R"({"groups": []})", {"fleet.json", "fleet.groups", "non-empty"});
  expect_error(R"({"router": {"type": "round_robin"}})", {"fleet.json", "fleet.groups"});
  expect_error(R"({"groups": [{"count": 1}], "gateway": {"type": "shed", "max_kv_usage": 1.5}})",
               {"fleet.json", "fleet.gateway.max_kv_usage", "(0, 1]"});
  expect_error(R"({"groups": [{"count": 1}], "gateway": {"type": "shed", "max_kv_usage": 0}})",
               {"fleet.gateway.max_kv_usage", "(0, 1]"});
  expect_error(R"({"groups": [{"count": 2, "replicas": 3}]})", {"fleet.groups[0].replicas"});
  expect_error(R"({"groups": [{"count": 1}, {"count": 1, "engine": {"max_num_seqs": 0}}]})",
               {"fleet.groups[1]", "engine.max_num_seqs"});
  expect_error(R"({"groups": [{"name": "a", "count": 1}, {"name": "a", "count": 1}]})",
               {"fleet.groups[1].name"});
  expect_error(R"({"groups": [{"count": 1}], "gateway": {"type": "token_bucket"}})",
               {"fleet.gateway.rate_per_s"});
  expect_error(R"({"groups": [{"count": 1}], "gateway": {"type": "aimd", "over_replicas": 0}})",
               {"fleet.json", "fleet.gateway.over_replicas", "(0, 1]"});
  expect_error(R"({"groups": [{"count": 1}], "gateway": {"type": "aimd", "decrease_factor": 1}})",
               {"fleet.json", "fleet.gateway.decrease_factor"});
}

// One controller over the fleet: replicas that run their own admission too are refused.
TEST(FleetConfig, FleetAimdRefusesReplicasWithTheirOwnAdmission) {
  nlohmann::json j = to_json(testing::moshi(3, "windowed", {"admission.type=aimd"}));
  j["fleet"] = {{"groups", {{{"count", 2}}}}, {"gateway", {{"type", "aimd"}}}};
  try {
    parse_scenario(j, "fleet.json");
    FAIL() << "expected a ConfigError";
  } catch (const ConfigError& e) {
    const std::string m = e.what();
    EXPECT_NE(m.find("fleet.json"), std::string::npos) << m;
    EXPECT_NE(m.find("fleet.gateway.type"), std::string::npos) << m;
    EXPECT_NE(m.find("their own admission.type \"aimd\""), std::string::npos) << m;
  }
}

}  // namespace
}  // namespace metronome
