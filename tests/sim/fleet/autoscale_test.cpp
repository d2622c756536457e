// Autoscaling (sim/fleet/autoscale.h): the rule's closed form; a step in traffic adds replicas
// that take calls only after the start-up delay; a drained replica takes no new call and leaves
// when its last call hangs up; replica-seconds are the integral of the replica count; the run is
// the same on any thread count.
#include "sim/fleet/autoscale.h"

#include <gtest/gtest.h>

#include <cmath>

#include "base/config_error.h"
#include "sim/fleet/fleet.h"
#include "sim/fleet/fleet_report.h"
#include "tests/expect_error.h"
#include "tests/sim/test_scenarios.h"

namespace metronome {
namespace {

using testing::moshi;

// Windowed Moshi callers (cheap to simulate) under a rate profile, calls of `call_s`, and a
// one-group fleet with `autoscale`.
Scenario scaled(const std::string& profile, double call_s, int64_t count,
                const std::string& autoscale, double horizon_s = 400) {
  const Scenario s =
      moshi(0, "windowed",
            {"workload.arrival={\"type\":\"profile\",\"profile\":" + profile + "}",
             "workload.duration={\"type\":\"fixed\",\"seconds\":" + std::to_string(call_s) + "}",
             "horizon_s=" + std::to_string(horizon_s)});
  nlohmann::json j = to_json(s);
  j["fleet"] = nlohmann::json::parse(
      R"({"groups": [{"name": "r", "count": )" + std::to_string(count) +
      R"(}], "router": {"type": "least_sessions"}, "autoscale": )" + autoscale + "}");
  return parse_scenario(j, "test");
}

// The integral of the provisioned count over [0, horizon].
double integral(const FleetResult& r) {
  const auto c = r.replica_counts();
  double sum = 0;
  for (size_t i = 0; i < c.size(); ++i) {
    const double end = i + 1 < c.size() ? c[i + 1].time_s : r.horizon_s;
    sum += static_cast<double>(c[i].provisioned) * (end - c[i].time_s);
  }
  return sum;
}

}  // namespace

TEST(Autoscale, RuleStartsWhatHoldsTheLoadAtTheThreshold) {
  AutoscaleConfig c;
  c.scale_up_above = 150;
  c.scale_down_below = 50;
  c.min_replicas = 2;
  c.max_replicas = 10;
  // 4 ready at 200 each: 800 sessions hold at 150 on ceil(5.33) = 6, 2 more.
  EXPECT_EQ(decide_scale(c, 200, 4, 0).start, 2);
  EXPECT_EQ(decide_scale(c, 200, 4, 1).start, 1);  // one is loading already
  EXPECT_EQ(decide_scale(c, 200, 4, 2).start, 0);
  EXPECT_EQ(decide_scale(c, 151, 4, 0).start, 1);  // just above: at least one more
  EXPECT_EQ(decide_scale(c, 1e6, 4, 0).start, 6);  // at most max_replicas
  EXPECT_EQ(decide_scale(c, 1e6, 10, 0).start, 0);
  EXPECT_FALSE(decide_scale(c, 100, 4, 0).drain);  // between the thresholds: nothing
  EXPECT_EQ(decide_scale(c, 100, 4, 0).start, 0);
  EXPECT_TRUE(decide_scale(c, 10, 4, 0).drain);
  EXPECT_FALSE(decide_scale(c, 10, 4, 1).drain);  // not while one is starting
  EXPECT_FALSE(decide_scale(c, 10, 2, 0).drain);  // not below min_replicas
}

// 0.5 callers per second for 100 s (30 live on one replica, under the threshold of 50), then 10
// per second: replicas are started only after the step, each takes its first call no earlier
// than 30 s (its start-up) after it was asked for, and until then the one replica takes them all.
TEST(Autoscale, AStepInTrafficAddsReplicasOnlyAfterTheDelay) {
  const Scenario f = scaled("[[0, 0.5], [100, 10]]", 60, 1,
                            R"({"signal": "sessions", "scale_up_above": 50, "scale_down_below": 5,
                                "min_replicas": 1, "max_replicas": 30, "startup_s": 30,
                                "interval_s": 10})");
  const FleetResult r = Fleet(f).run();
  ASSERT_GT(r.scale_ups, 3);
  ASSERT_EQ(r.replicas.size(), static_cast<size_t>(1 + r.scale_ups));
  double first_start = 1e9;
  for (size_t i = 1; i < r.replicas.size(); ++i) {
    const ReplicaOutcome& o = r.replicas[i];
    EXPECT_GE(o.started_s, 100) << i;  // nothing before the step
    EXPECT_NEAR(o.ready_s, o.started_s + 30, 1e-9) << i;
    EXPECT_NEAR(std::remainder(o.started_s, 10), 0, 1e-9) << "started at a reading";
    if (o.first_call_s) EXPECT_GE(*o.first_call_s, o.ready_s) << i;
    first_start = std::min(first_start, o.started_s);
  }
  // Until the first new replica is ready, one replica is ready and takes every call.
  for (const ReplicaCount& c : r.replica_counts()) {
    if (c.time_s < first_start + 30) EXPECT_EQ(c.ready, 1) << c.time_s;
  }
  EXPECT_GT(r.replicas[0].placed(), 0);
}

// 10 callers per second for 60 s on 4 replicas, then 0.5: the per-replica load falls under 16 and
// replicas are drained one per reading down to min_replicas. A drained replica is routed no call
// after its drain (calls keep coming to the others), and leaves when its last call hangs up.
TEST(Autoscale, ADrainedReplicaTakesNoNewCallAndLeavesWithItsLastCall) {
  const Scenario f = scaled("[[0, 10], [60, 0.5]]", 30, 4,
                            R"({"signal": "sessions", "scale_up_above": 1000,
                                "scale_down_below": 16, "min_replicas": 1, "max_replicas": 4,
                                "startup_s": 60, "interval_s": 10})",
                            300);
  const FleetResult r = Fleet(f).run();
  EXPECT_EQ(r.drains, 3);
  EXPECT_EQ(r.scale_ups, 0);
  double last_call = 0;
  for (const auto& o : r.replicas) last_call = std::max(last_call, o.last_call_s.value_or(0));
  int drained = 0;
  for (const ReplicaOutcome& o : r.replicas) {
    if (!o.drained_s) continue;
    ++drained;
    EXPECT_LT(o.last_call_s.value_or(-1), *o.drained_s);
    EXPECT_LT(*o.drained_s, last_call) << "calls kept coming after the drain";
    ASSERT_TRUE(o.gone_s);
    EXPECT_GE(*o.gone_s, *o.drained_s);
    // Its last call was placed at last_call_s and lasts 30 s.
    if (o.last_call_s && o.placed() > 0) {
      EXPECT_NEAR(*o.gone_s, std::max(*o.drained_s, *o.last_call_s + 30), 1e-6);
    }
    EXPECT_EQ(o.run.sessions_departed, o.placed()) << "every call ended before it left";
  }
  EXPECT_EQ(drained, 3);
  EXPECT_EQ(r.replica_counts().back().provisioned, 1);
}

TEST(Autoscale, ReplicaSecondsAreTheIntegralOfTheCount) {
  const Scenario up = scaled("[[0, 0.5], [100, 20], [200, 1]]", 40, 2,
                             R"({"signal": "sessions", "scale_up_above": 50,
                                 "scale_down_below": 10, "min_replicas": 1, "max_replicas": 20,
                                 "startup_s": 25, "interval_s": 5})");
  const FleetResult r = Fleet(up).run();
  EXPECT_GT(r.scale_ups, 0);
  EXPECT_GT(r.drains, 0);
  EXPECT_NEAR(integral(r), r.replica_seconds(), 1e-6 * r.replica_seconds());
  EXPECT_DOUBLE_EQ(r.gpu_seconds(), r.replica_seconds());  // one GPU each
  double by_hand = 0;
  for (const auto& o : r.replicas) by_hand += o.gone_s.value_or(400) - o.started_s;
  EXPECT_NEAR(by_hand, r.replica_seconds(), 1e-9);
  // Without autoscaling the count is fixed: n x the horizon.
  const Scenario s = moshi(40, "windowed", {"horizon_s=100"});
  nlohmann::json j = to_json(s);
  j["fleet"] = nlohmann::json::parse(R"({"groups": [{"count": 3}]})");
  const FleetResult still = Fleet(parse_scenario(j, "test")).run();
  EXPECT_DOUBLE_EQ(still.replica_seconds(), 300);
  ASSERT_EQ(still.replica_counts().size(), 1u);
  EXPECT_EQ(still.replica_counts()[0].provisioned, 3);
  // GPU-seconds count each replica's GPUs: a tensor-parallel group of 2 beside a 1-GPU one. (From
  // the file, not from to_json: a one-GPU scenario's resolved form leaves the GPU's link out.)
  const FleetResult mixed = Fleet(moshi(40, "windowed",
                                        {"horizon_s=100",
                                         R"(fleet={"groups": [{"count": 1}, {"name": "tp2",
                                            "count": 2, "engine": {"tensor_parallel": 2}}]})"}))
                                .run();
  EXPECT_DOUBLE_EQ(mixed.replica_seconds(), 300);
  EXPECT_DOUBLE_EQ(mixed.gpu_seconds(), 100 * (1 + 2 + 2));
}

TEST(Autoscale, SameBytesAnyThreadCountAndEverySignalRuns) {
  for (const char* signal : {R"("sessions", "scale_up_above": 40, "scale_down_below": 8)",
                             R"("kv_usage", "scale_up_above": 0.05, "scale_down_below": 0.01)",
                             R"("latency", "scale_up_above": 0.004, "scale_down_below": 0.001)"}) {
    SCOPED_TRACE(signal);
    const Scenario f = scaled("[[0, 1], [80, 15], [200, 0.5]]", 50, 1,
                              std::string(R"({"signal": )") + signal +
                                  R"(, "max_replicas": 12, "startup_s": 20, "interval_s": 10})");
    const std::string first = fleet_json(f, Fleet(f).run()).dump();
    EXPECT_EQ(fleet_json(f, Fleet(f).run(4)).dump(), first);
    const FleetResult r = Fleet(f).run();
    EXPECT_EQ(r.offered, r.placed + r.rejected_total());
    EXPECT_GT(r.scale_ups, 0);
  }
}

TEST(Autoscale, BadSectionsNameTheField) {
  const std::string ok = R"("signal": "sessions", "scale_up_above": 50, "scale_down_below": 5,
                            "max_replicas": 4, "startup_s": 30)";
  auto with = [&](const std::string& a) { return [=] { scaled("[[0, 1]]", 10, 1, a); }; };
  expect_error(with(R"({"signal": "sessions", "scale_up_above": 50, "scale_down_below": 60,
                        "max_replicas": 4, "startup_s": 30})"),
               {"fleet.autoscale.scale_down_below", "less than scale_up_above"});
  expect_error(with(R"({"signal": "sessions", "scale_up_above": 50, "scale_down_below": 5,
                        "max_replicas": 4})"),
               {"fleet.autoscale.startup_s"});
  expect_error(with(R"({"signal": "queue", "scale_up_above": 50, "scale_down_below": 5,
                        "max_replicas": 4, "startup_s": 30})"),
               {"fleet.autoscale.signal", "sessions"});
  expect_error(with(R"({"signal": "kv_usage", "scale_up_above": 50, "scale_down_below": 5,
                        "max_replicas": 4, "startup_s": 30})"),
               {"fleet.autoscale.scale_up_above", "fraction"});
  expect_error(with("{" + ok + R"(, "min_replicas": 2})"),
               {"fleet.autoscale.min_replicas", "group's count (1"});
  expect_error(with("{" + ok + R"(, "bogus": 1})"), {"fleet.autoscale", "bogus"});
  const Scenario s = moshi(4, "windowed", {"horizon_s=10"});
  nlohmann::json j = to_json(s);
  j["fleet"] = nlohmann::json::parse(R"({"groups": [{"count": 1}, {"name": "b", "count": 1}],
      "autoscale": {)" + ok + "}}");
  expect_error([&] { parse_scenario(j, "test.json"); },
               {"test.json", "fleet.autoscale", "one replica group", "got 2"});
}

}  // namespace metronome
