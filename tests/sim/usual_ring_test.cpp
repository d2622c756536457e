// The frame scheduler's usual ring (sim/scheduler/usual_ring.h) is an exact optimisation: every
// output, summary and time series, must be the same with it and without. Each scenario runs twice
// each way: with an observer (every step, stall and preemption recorded; the ledger's per-frame
// path) and without one (the summary alone; the ledger's usual-frame path).
#include <gtest/gtest.h>

#include "base/rng.h"
#include "sim/cost/cost_models.h"
#include "sim/engine/engine.h"
#include "tests/sim/run_recorder.h"
#include "tests/sim/test_scenarios.h"

namespace metronome {
namespace {

struct Outputs {
  std::string recorded, trace, plain;
};

Outputs run(const Scenario& s, bool ring) {
  const testing::RecordedRun r = testing::record_run(s, [&](Engine& e) { e.set_usual_ring(ring); });
  const auto cost = make_cost_model(s);
  Engine e(s, *cost);
  e.set_usual_ring(ring);
  const RunResult plain = e.run();
  return {r.summary, r.trace, run_json(s, predict_first_order(s), plain, cost->label()).dump()};
}

void expect_same(const Scenario& s) {
  const Outputs with = run(s, true), without = run(s, false);
  EXPECT_EQ(with.recorded, without.recorded);
  EXPECT_EQ(with.plain, without.plain);
  EXPECT_TRUE(with.trace == without.trace)
      << "time series or steps differ at " << testing::first_difference(with.trace, without.trace);
}

std::string poisson(double rate, int64_t max_sessions) {
  return "workload.arrival={\"type\":\"poisson\",\"rate_per_s\":" + std::to_string(rate) +
         ",\"max_sessions\":" + std::to_string(max_sessions) + "}";
}

}  // namespace

TEST(UsualRing, SameResultsWithAndWithout) {
  using testing::moshi;
  const std::vector<Scenario> cases = {
      // Distinct callers, all usual once past their first frames: the ring's regime.
      moshi(0, "windowed", {poisson(100, 300), "horizon_s=60"}),
      moshi(0, "unbounded", {poisson(20, 300), "horizon_s=120"}),
      // More than fit: the ring meets a caller short of blocks and hands the step over.
      moshi(0, "unbounded", {poisson(50, 900), "horizon_s=200"}),
      moshi(0, "unbounded",
            {poisson(50, 900), "horizon_s=200", "engine.exhaustion=preempt_recompute"}),
      // Calls that end (a caller's last frame) and arrive throughout.
      moshi(0, "windowed",
            {poisson(5, 100000), "workload.duration={\"type\":\"exponential\",\"mean_s\":20}",
             "horizon_s=120"}),
      // A batch cap, a prompt, several blocks per frame, small blocks.
      moshi(0, "unbounded",
            {poisson(30, 200), "engine.max_sessions_per_step=7", "workload.prompt_tokens=40",
             "horizon_s=60"}),
      moshi(0, "windowed",
            {poisson(30, 200), "engine.block_size=4", "workload.kv_tokens_per_frame=3",
             "kv_policy.window_tokens=40", "kv_policy.sink_tokens=4", "horizon_s=60"}),
      // All at once (cohorts, whose twins the ring never holds) and a steady stream.
      moshi(300, "windowed"),
      moshi(0, "unbounded",
            {"workload.arrival={\"type\":\"fixed_interval\",\"interval_s\":0.5,\"sessions\":300}"}),
      // A control loop (control instants flush the ring) and fine samples.
      moshi(0, "windowed",
            {poisson(20, 100000), "admission={\"type\":\"aimd\"}", "workload.deadline_s=0.01",
             "horizon_s=120"}),
      moshi(0, "unbounded", {poisson(40, 400), "output.sample_period_s=0.05", "horizon_s=30"}),
      // KV policies that are no window.
      moshi(0, "unbounded",
            {poisson(20, 100), R"(kv_policy={"type":"periodic_reset","reset_frames":25})",
             "workload.kv_tokens_per_frame=3", "horizon_s=60"}),
      moshi(0, "unbounded",
            {poisson(20, 100),
             R"(kv_policy={"type":"segment_eviction","segment_tokens":64,)"
             R"("segments":3})",
             "workload.kv_tokens_per_frame=5", "horizon_s=60"}),
      moshi(0, "unbounded",
            {poisson(20, 100), R"(kv_policy={"type":"context_cap","cap_tokens":400})",
             "workload.kv_tokens_per_frame=2", "horizon_s=60"}),
  };
  for (size_t i = 0; i < cases.size(); ++i) {
    SCOPED_TRACE("case " + std::to_string(i));
    expect_same(cases[i]);
  }
}

// Random streams of distinct callers against batch caps, tight pools, both exhaustion policies,
// multi-block frames and calls that end: the shapes where the ring is entered and left.
TEST(UsualRing, RandomStreamsMatch) {
  struct Knob {  // a whole-number setting drawn from [from, from + span)
    const char* key;
    double from, span;
  };
  const Knob knobs[] = {{"engine.max_sessions_per_step", 1, 300},
                        {"engine.num_blocks", 500, 20000},
                        {"engine.block_size", 1, 32},
                        {"workload.kv_tokens_per_frame", 1, 80},
                        {"workload.prompt_tokens", 0, 100}};
  Rng rng(7, "usual ring");
  for (int i = 0; i < 30; ++i) {
    std::vector<std::string> sets = {
        poisson(1 + 60 * rng.uniform(), 1 + static_cast<int64_t>(rng.uniform() * 600)),
        "engine.exhaustion=" + std::string(rng.uniform() < 0.5 ? "stall" : "preempt_recompute"),
        "workload.duration={\"type\":\"exponential\",\"mean_s\":" +
            std::to_string(5 + 60 * rng.uniform()) + "}",
        "horizon_s=60", "output.sample_period_s=0.5"};
    for (const Knob& k : knobs) {
      sets.push_back(std::string(k.key) + "=" +
                     std::to_string(static_cast<int64_t>(k.from + k.span * rng.uniform())));
    }
    const Scenario s = testing::moshi(0, rng.uniform() < 0.5 ? "windowed" : "unbounded", sets);
    SCOPED_TRACE("case " + std::to_string(i));
    expect_same(s);
  }
}

}  // namespace metronome
