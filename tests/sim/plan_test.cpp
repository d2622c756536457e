// `metronome plan`: the answer is the cheapest candidate that meets the tests, its replica count
// is the fewest (checked by running the fleets it names), the search is deterministic over
// threads, and a GPU without a price or a candidate under the quality floor is refused or skipped.
#include "sim/analysis/plan.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <utility>
#include <vector>

#include "base/config_error.h"
#include "sim/fleet/fleet.h"
#include "tests/sim/test_scenarios.h"

namespace metronome {
namespace {

// 10 windowed Moshi callers per second, 120 s each, for 240 s: about 1,200 live at once, more
// than two H200 replicas hold (440 windowed callers each).
Scenario traffic() {
  return testing::moshi(
      0, "windowed",
      {"workload.arrival={\"type\":\"profile\",\"profile\":[[0,10]]}",
       "workload.duration={\"type\":\"fixed\",\"seconds\":120}", "horizon_s=240"});
}

PlanSpec small_spec() {
  PlanSpec s;
  s.gpus = {"h100", "h200"};
  s.tensor_parallel = {1, 2};
  s.windows = {480};
  s.sinks = {16};
  s.max_replicas = 8;
  return s;
}

// The candidate's fleet, run here from its own JSON: whether it meets the tests.
bool meets(const Scenario& base, const std::string& gpu, int64_t k, int64_t w, int64_t s,
           int64_t replicas) {
  nlohmann::json j = to_json(base);
  apply_set(j, "gpu=" + gpu, "");
  j["cost_model"]["type"] = "auto";
  j["engine"]["tensor_parallel"] = k;
  j["kv_policy"] = {{"type", "windowed"}, {"window_tokens", w}, {"sink_tokens", s}};
  j["fleet"] = nlohmann::json::parse(R"({"groups": [{"count": )" + std::to_string(replicas) +
                                     R"(}], "router": {"type": "least_sessions"}})");
  const Scenario f = parse_scenario(j, "test");
  const FleetResult r = Fleet(f).run();
  for (const auto& o : r.replicas) {
    if (o.run.first_stall_s) return false;
  }
  const double p99 = r.totals().true_latency.output_percentile(0.99);
  return r.rejected_total() == 0 && p99 <= f.workload.deadline();
}

}  // namespace

TEST(Plan, BestIsTheCheapestThatMeetsWithTheFewestReplicas) {
  const Scenario base = traffic();
  const Plan p = plan(base, small_spec());
  ASSERT_EQ(p.candidates.size(), 4u);
  ASSERT_TRUE(p.best);
  const PlanCandidate& b = p.candidates[*p.best];
  ASSERT_TRUE(b.best);
  ASSERT_GT(b.best->replicas, 2) << "two H200s cannot hold 1,200 windowed callers";
  // Ranked: every candidate that meets costs at least the best's, in order.
  double last = 0;
  for (const auto& c : p.candidates) {
    if (!c.best) continue;
    EXPECT_GE(c.cost_per_hour(), last);
    last = c.cost_per_hour();
    EXPECT_GE(c.cost_per_hour(), b.cost_per_hour());
    EXPECT_DOUBLE_EQ(c.cost_per_hour(), static_cast<double>(c.best->replicas * c.tensor_parallel) *
                                            c.price_per_gpu_hour);
  }
  // The fewest: checked by running the fleets the plan names, not by reading its own verdicts.
  EXPECT_TRUE(meets(base, b.gpu, b.tensor_parallel, b.window, b.sinks, b.best->replicas));
  EXPECT_FALSE(meets(base, b.gpu, b.tensor_parallel, b.window, b.sinks, b.best->replicas - 1));
  ASSERT_TRUE(b.short_of);
  EXPECT_EQ(b.short_of->replicas, b.best->replicas - 1);
  EXPECT_FALSE(b.short_of->meets);
  EXPECT_FALSE(b.short_of->why_not.empty());
  // Cost per call-hour: the fleet's cost over the horizon over the call-hours it served.
  EXPECT_NEAR(b.cost_per_call_hour(), b.cost_per_hour() * (240.0 / 3600) / b.best->call_hours,
              1e-12);
  // 10 calls a second: 120 s each for those of the first 120 s, cut by the horizon after.
  EXPECT_NEAR(b.best->call_hours, 10 * (120.0 * 120 + 120 * 120 / 2.0) / 3600, 3.0);
}

TEST(Plan, SameAnswerAnyThreadCount) {
  const Scenario base = traffic();
  PlanSpec one = small_spec();
  PlanSpec three = one;
  three.jobs = 3;
  EXPECT_EQ(plan_json(base, one, plan(base, one)).dump(),
            plan_json(base, three, plan(base, three)).dump());
}

// Unbounded KV is one candidate per GPU x degree, searched by the same rule: its count meets the
// tests and one fewer does not (run here directly), and it needs more replicas than a window, since
// every caller keeps growing.
TEST(Plan, UnboundedKvIsSizedByTheSameSearch) {
  const Scenario base = traffic();
  PlanSpec spec = small_spec();
  spec.gpus = {"h200"};
  spec.tensor_parallel = {1};
  spec.kv_policies = {"windowed", "unbounded"};
  spec.max_replicas = 16;
  const Plan p = plan(base, spec);
  ASSERT_EQ(p.candidates.size(), 2u);
  const PlanCandidate* unbounded = nullptr;
  const PlanCandidate* windowed = nullptr;
  for (const auto& c : p.candidates) (c.kv_policy == "unbounded" ? unbounded : windowed) = &c;
  ASSERT_TRUE(unbounded && windowed);
  ASSERT_TRUE(unbounded->best && windowed->best);
  EXPECT_GT(unbounded->best->replicas, windowed->best->replicas);
  EXPECT_EQ(unbounded->ppl_ratio, 1.0);  // full attention: the quality reference
  auto run = [&](int64_t replicas) {
    nlohmann::json j = to_json(base);
    j["kv_policy"] = {{"type", "unbounded"}};
    j["fleet"] = {{"groups", {{{"count", replicas}}}}, {"router", {{"type", "least_sessions"}}}};
    const FleetResult r = Fleet(parse_scenario(j, "test")).run();
    int64_t stalled = 0;
    for (const auto& o : r.replicas) stalled += o.run.first_stall_s ? 1 : 0;
    return stalled;
  };
  EXPECT_EQ(run(unbounded->best->replicas), 0);
  EXPECT_GT(run(unbounded->best->replicas - 1), 0);
  const nlohmann::json j = plan_json(base, spec, p);
  for (const auto& row : j["candidates"]) {
    if (row["kv_policy"] == "unbounded") EXPECT_TRUE(row["window_tokens"].is_null());
  }
}

// Over machines: the shards' results merged print what one process prints, byte for byte, in
// either order; a shard of another plan, a shard given twice or a missing one is refused.
TEST(Plan, ShardsMergedPrintTheSingleProcessPlan) {
  const Scenario base = traffic();
  PlanSpec spec = small_spec();
  spec.gpus = {"h200"};
  spec.kv_policies = {"windowed", "unbounded"};  // 4 candidates, 2 shards of 2
  const Plan whole = plan(base, spec);
  std::vector<std::pair<std::string, nlohmann::json>> shards;
  for (int64_t i = 0; i < 2; ++i) {
    PlanSpec s = spec;
    s.shard = Shard{i, 2};
    // Through text, as a file carries it.
    shards.emplace_back("s" + std::to_string(i), nlohmann::json::parse(plan_shard(base, s).dump()));
  }
  EXPECT_EQ(shards[0].second["candidates"].size(), 2u);
  std::vector<std::pair<std::string, nlohmann::json>> reversed = {shards[1], shards[0]};
  for (const auto& set : {shards, reversed}) {
    const Plan merged = merge_plan(base, spec, set);
    EXPECT_EQ(plan_json(base, spec, merged).dump(), plan_json(base, spec, whole).dump());
    EXPECT_EQ(plan_text(base, spec, merged), plan_text(base, spec, whole));
  }
  auto refused = [&](const std::vector<std::pair<std::string, nlohmann::json>>& set,
                     const Scenario& b, const PlanSpec& sp, const std::string& fragment) {
    try {
      (void)merge_plan(b, sp, set);
      ADD_FAILURE() << "expected a ConfigError with " << fragment;
    } catch (const ConfigError& e) {
      EXPECT_NE(std::string(e.what()).find(fragment), std::string::npos) << e.what();
    }
  };
  refused({shards[0]}, base, spec, "shard 1 of 2 is missing");
  refused({shards[0], shards[0]}, base, spec, "s0: shard 0 of 2 given twice");
  PlanSpec other = spec;
  other.max_replicas = 9;
  refused(shards, base, other, "s0: search: this shard searched other candidates");
  nlohmann::json j = to_json(base);
  j["horizon_s"] = 200;
  refused(shards, parse_scenario(j, "test"), spec, "s0: scenario: this shard planned another");
  nlohmann::json three = shards[1].second;
  three["metronome_plan_shard"]["count"] = 3;
  refused({shards[0], {"s1", three}}, base, spec, "s1: metronome_plan_shard.count");
  nlohmann::json cut = shards[1].second;
  cut["candidates"].erase(0);
  refused({shards[0], {"s1", cut}}, base, spec, "candidate 1 is missing");
  refused({shards[0], {"s1", nlohmann::json::object()}}, base, spec, "s1: expected a plan shard");
}

TEST(Plan, QualityFloorAndRefusedDegreesAreSkipped) {
  const Scenario base = traffic();
  PlanSpec s = small_spec();
  s.gpus = {"h200"};
  s.tensor_parallel = {1, 3};
  s.windows = {240, 480};
  s.ppl_ratio = {{{240, 16}, 1.30}, {{480, 16}, 1.05}};
  s.max_ppl_ratio = 1.10;
  const Plan p = plan(base, s);
  ASSERT_EQ(p.candidates.size(), 4u);
  int tried = 0;
  for (const auto& c : p.candidates) {
    if (c.tensor_parallel == 3 && c.window == 480) {
      EXPECT_NE(c.skipped.find("engine.tensor_parallel"), std::string::npos) << c.skipped;
    } else if (c.window == 240) {  // the floor is checked first
      EXPECT_NE(c.skipped.find("perplexity ratio 1.300 over the floor 1.100"), std::string::npos)
          << c.skipped;
      if (c.tensor_parallel == 1) EXPECT_EQ(c.price_per_gpu_hour, 3.5);  // its row's price, not 0
    } else {
      EXPECT_TRUE(c.skipped.empty()) << c.skipped;
      ++tried;
    }
  }
  EXPECT_EQ(tried, 1);
  s.ppl_ratio = {};
  for (const auto& c : plan(base, s).candidates) {
    if (c.tensor_parallel == 1)
      EXPECT_NE(c.skipped.find("no measured perplexity"), std::string::npos);
  }
}

// Autoscaled candidates, on traffic that rises (2 callers a second, then 10 from 120 s): the
// autoscaled fleet is priced by the GPU-hours it ran, those of running its fleet directly, which
// here are fewer than its peak for the whole horizon and cheaper than the static fleet; its count
// is the fewest max_replicas that meets the tests (one fewer run and failing).
TEST(Plan, AutoscaledCandidatesArePricedByTheGpuHoursTheyRan) {
  const Scenario base =
      testing::moshi(0, "windowed",
                     {"workload.arrival={\"type\":\"profile\",\"profile\":[[0,2],[120,10]]}",
                      "workload.duration={\"type\":\"fixed\",\"seconds\":120}", "horizon_s=360"});
  PlanSpec s = small_spec();
  s.gpus = {"h200"};
  s.tensor_parallel = {1};
  s.autoscale = {{"signal", "sessions"},
                 {"scale_up_above", 150},
                 {"scale_down_below", 50},
                 {"startup_s", 5},
                 {"interval_s", 2}};
  const Plan p = plan(base, s);
  ASSERT_EQ(p.candidates.size(), 2u);
  ASSERT_TRUE(p.candidates[0].autoscaled) << "the cheaper, ranked first";
  EXPECT_EQ(p.best, 0u);
  const PlanCandidate& a = p.candidates[0];
  const PlanCandidate& fixed = p.candidates[1];
  ASSERT_TRUE(a.best && fixed.best && !fixed.autoscaled);
  EXPECT_LT(a.cost_per_hour(), fixed.cost_per_hour());

  nlohmann::json j = to_json(base);
  apply_set(j, "gpu=h200", "");
  j["cost_model"]["type"] = "auto";
  j["kv_policy"] = {{"type", "windowed"}, {"window_tokens", 480}, {"sink_tokens", 16}};
  nlohmann::json scale = s.autoscale;
  scale["max_replicas"] = a.best->replicas;
  j["fleet"] = {
      {"groups", {{{"count", 1}}}}, {"router", {{"type", "least_sessions"}}}, {"autoscale", scale}};
  const FleetResult r = Fleet(parse_scenario(j, "test")).run();
  EXPECT_EQ(r.rejected_total(), 0);
  for (const auto& o : r.replicas) EXPECT_FALSE(o.run.first_stall_s);
  EXPECT_GT(r.scale_ups, 0);
  EXPECT_DOUBLE_EQ(a.best->gpu_hours, r.gpu_seconds() / 3600);
  EXPECT_DOUBLE_EQ(a.cost_per_hour(), r.gpu_seconds() / 360 * a.price_per_gpu_hour);
  EXPECT_LT(a.best->gpu_hours, static_cast<double>(a.best->replicas) * 0.1);
  ASSERT_TRUE(a.short_of);
  EXPECT_EQ(a.short_of->replicas, a.best->replicas - 1);
  EXPECT_FALSE(a.short_of->meets);

  s.autoscale["max_replicas"] = 4;  // the plan searches it
  EXPECT_THROW(plan(base, s), ConfigError);
}

TEST(Plan, AGpuWithoutAPriceIsAnErrorNamingItsFile) {
  nlohmann::json g = nlohmann::json::parse(
      std::ifstream(std::string(METRONOME_SOURCE_DIR) + "/scenarios/gpus/h200.json"));
  g.erase("price_per_gpu_hour");
  g.erase("price_source");
  const auto path = std::filesystem::temp_directory_path() / "metronome_plan_unpriced.json";
  std::ofstream(path) << g.dump();
  PlanSpec s = small_spec();
  s.gpus = {path.string()};
  try {
    plan(traffic(), s);
    FAIL() << "expected a ConfigError";
  } catch (const ConfigError& e) {
    const std::string m = e.what();
    EXPECT_NE(m.find("metronome_plan_unpriced.json: price_per_gpu_hour"), std::string::npos) << m;
  }
  // A pool size stated for one GPU would be wrong for every other candidate.
  const Scenario fixed = testing::moshi(10, "windowed", {"engine.num_gpu_blocks=4000"});
  EXPECT_THROW(plan(fixed, small_spec()), ConfigError);
}

}  // namespace metronome
