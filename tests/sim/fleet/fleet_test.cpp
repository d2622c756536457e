// The fleet: a one-replica fleet is the single engine (every summary number, sample, step, stall
// and preemption); conservation of calls and frames; determinism over repeats and thread counts.
#include "sim/fleet/fleet.h"

#include <gtest/gtest.h>

#include <numeric>

#include "sim/analysis/report.h"
#include "sim/fleet/fleet_report.h"
#include "tests/sim/run_recorder.h"
#include "tests/sim/test_scenarios.h"

namespace metronome {
namespace {

using testing::moshi;
using testing::RunRecorder;

// The same scenario as a fleet: `fleet` is the section's JSON.
Scenario with_fleet(const Scenario& s, const std::string& fleet) {
  nlohmann::json j = to_json(s);
  j["fleet"] = nlohmann::json::parse(fleet);
  return parse_scenario(j, "test");
}

struct Traced {
  std::string summary, trace;
};

Traced single(const Scenario& s) {
  const auto cost = make_cost_model(s);
  RunRecorder rec;
  Engine e(s, *cost, &rec);
  return {run_result_json(e.run()).dump(), rec.out.str()};
}

Traced one_replica(const Scenario& s, const std::string& router = "round_robin") {
  const Scenario f =
      with_fleet(s, R"({"groups": [{"count": 1}], "router": {"type": ")" + router + R"("}})");
  RunRecorder rec;
  Fleet fleet(f, {&rec});
  const FleetResult r = fleet.run();
  EXPECT_EQ(r.replicas.size(), 1u);
  return {run_result_json(r.replicas[0].run).dump(), rec.out.str()};
}

// Scenarios that exercise every path an arrival meets: cohorts and the bulk take of usual callers
// (all at once, fixed lengths), Poisson arrivals with random lengths, AIMD with its control
// instants, preemption, vLLM's scheduler, frame jitter, the memory guard, spread joins.
std::vector<std::pair<std::string, Scenario>> cases() {
  const std::string poisson =
      "workload.arrival={\"type\":\"poisson\",\"rate_per_s\":4,\"start_s\":0.05}";
  const std::string exp_len = "workload.duration={\"type\":\"exponential\",\"mean_s\":30}";
  return {
      {"unbounded_all_at_once", moshi(300, "unbounded", {"horizon_s=90"})},
      {"windowed_poisson", moshi(0, "windowed", {poisson, exp_len, "horizon_s=60"})},
      {"aimd",
       moshi(0, "windowed", {poisson, exp_len, "horizon_s=60", "admission={\"type\":\"aimd\"}"})},
      {"preempt", moshi(0, "unbounded",
                        {"workload.arrival={\"type\":\"fixed_interval\",\"sessions\":200,"
                         "\"interval_s\":0.1}",
                         "engine.exhaustion=preempt_recompute", "engine.num_gpu_blocks=2000",
                         "horizon_s=40"})},
      {"vllm",
       moshi(0, "windowed", {poisson, exp_len, "engine.scheduler=vllm_v1", "horizon_s=30"})},
      {"jitter",
       moshi(0, "windowed", {poisson, exp_len, "workload.frame_jitter_s=0.01", "horizon_s=40"})},
      {"guard_and_spread",
       moshi(0, "windowed",
             {poisson, exp_len, "horizon_s=40", "admission={\"type\":\"static\",\"cap\":50}",
              "admission.join=spread", "engine.num_gpu_blocks=1200"})},
  };
}

TEST(Fleet, OneReplicaIsTheSingleEngine) {
  for (const auto& [name, s] : cases()) {
    SCOPED_TRACE(name);
    const Traced a = single(s);
    for (const char* router : {"round_robin", "least_sessions", "p2c", "latency"}) {
      SCOPED_TRACE(router);
      const Traced b = one_replica(s, router);
      EXPECT_EQ(a.summary, b.summary);
      EXPECT_EQ(a.trace, b.trace) << testing::first_difference(a.trace, b.trace);
    }
  }
}

// A fleet in which nothing is refused serves the frames the calls bring, wherever they go: with
// every call admitted and lasting past the horizon, the frames due are the single engine's.
TEST(Fleet, FramesDueDoNotDependOnPlacement) {
  const Scenario s = moshi(120, "windowed", {"horizon_s=30"});
  const RunResult one = simulate(s);
  for (const char* router : {"round_robin", "least_sessions", "most_free_blocks", "latency"}) {
    SCOPED_TRACE(router);
    const Scenario f = with_fleet(
        s, std::string(R"({"groups": [{"count": 5}], "router": {"type": ")") + router + "\"}}");
    const FleetResult r = Fleet(f).run();
    EXPECT_EQ(r.placed, 120);
    EXPECT_EQ(r.totals().frames_due, one.frames_due);
    // 24 callers a replica never stall: at most the frame each has in flight at the horizon.
    EXPECT_LE(r.totals().frames_silent, 120);
  }
}

// offered = placed + rejected (by reason), over the gateway and the replicas' own admission; each
// replica's row adds up; the fleet's frames are the replicas' sums.
TEST(Fleet, CallsAndFramesAreConserved) {
  const Scenario s =
      moshi(0, "unbounded",
            {"workload.arrival={\"type\":\"poisson\",\"rate_per_s\":20}",
             "workload.duration={\"type\":\"exponential\",\"mean_s\":20}", "horizon_s=60",
             "engine.num_gpu_blocks=600", "admission={\"type\":\"aimd\",\"initial_cap\":8}"});
  for (const char* gateway : {R"({"type": "shed", "max_queue_depth": 2, "max_kv_usage": 0.5})",
                              R"({"type": "token_bucket", "rate_per_s": 10, "burst": 5})",
                              R"({"type": "static", "cap": 40})", R"({"type": "none"})"}) {
    SCOPED_TRACE(gateway);
    const Scenario f = with_fleet(s, std::string(R"({"groups": [{"name": "a", "count": 2},
        {"name": "b", "count": 3, "engine": {"num_gpu_blocks": 300}}],
        "router": {"type": "p2c", "by": "free_blocks"}, "gateway": )") +
                                         gateway + "}");
    const FleetResult r = Fleet(f).run();
    EXPECT_GT(r.offered, 1000);
    EXPECT_EQ(r.offered, r.placed + r.rejected_total());
    EXPECT_GT(r.rejected_total(), 0);  // every gateway and the replicas' AIMD turn calls away
    int64_t routed = 0, placed = 0, due = 0, silent = 0, replica_rejected = 0;
    for (const ReplicaOutcome& o : r.replicas) {
      EXPECT_EQ(o.routed, o.gateway_rejected + o.run.sessions_arrived);
      EXPECT_LE(o.run.frames_served, o.run.frames_due);
      routed += o.routed;
      placed += o.placed();
      due += o.run.frames_due;
      silent += o.run.frames_silent;
      replica_rejected += o.run.sessions_rejected;
    }
    EXPECT_EQ(routed, r.offered);
    EXPECT_EQ(placed, r.placed);
    EXPECT_EQ(due, r.totals().frames_due);
    EXPECT_EQ(silent, r.totals().frames_silent);
    const auto at = [&](const char* k) { return r.rejected.count(k) ? r.rejected.at(k) : 0; };
    EXPECT_EQ(replica_rejected, at("replica_cap") + at("memory_guard"));
  }
}

TEST(Fleet, SameSeedSameBytesAnyThreadCount) {
  const Scenario s = moshi(0, "windowed",
                           {"workload.arrival={\"type\":\"poisson\",\"rate_per_s\":10}",
                            "workload.duration={\"type\":\"exponential\",\"mean_s\":20}",
                            "workload.frame_jitter_s=0.005", "horizon_s=40"});
  const Scenario f = with_fleet(s, R"({"groups": [{"count": 3},
      {"name": "small", "count": 4, "engine": {"num_gpu_blocks": 500}}],
      "router": {"type": "p2c"}, "gateway": {"type": "shed"}})");
  const std::string first = fleet_json(f, Fleet(f).run()).dump();
  for (int threads : {1, 2, 3, 7, 16}) {
    EXPECT_EQ(fleet_json(f, Fleet(f).run(threads)).dump(), first) << threads << " threads";
  }
  nlohmann::json other = to_json(f);
  other["seed"] = 2;
  EXPECT_NE(fleet_json(f, Fleet(parse_scenario(other, "test")).run()).dump(), first);
}

TEST(Fleet, ResolvedScenarioRoundTrips) {
  // Through load_scenario, which resolves a group's GPU by name as it does the scenario's.
  const Scenario f = moshi(10, "windowed", {R"(fleet={"groups": [{"count": 2,
      "kv_policy": {"type": "unbounded"}, "gpu": "h100"}], "router": {"type": "p2c"},
      "gateway": {"type": "token_bucket", "rate_per_s": 3}})"});
  const nlohmann::json j = to_json(f);
  EXPECT_EQ(to_json(parse_scenario(j, "again")), j);
  EXPECT_EQ(f.fleet->groups[0].replica->gpu.name, "h100");
  EXPECT_EQ(f.fleet->groups[0].replica->kv_policy.type(), "unbounded");
  EXPECT_EQ(f.kv_policy.type(), "windowed");
}

}  // namespace
}  // namespace metronome
