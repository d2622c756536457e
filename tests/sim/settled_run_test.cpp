// The settled regime (sim/engine_settled.cpp) is an exact optimisation: every output, summary and
// time series, every step, stall and preemption, must be the same with it and without, and it must
// actually run where every caller settles.
#include <gtest/gtest.h>

#include "base/rng.h"
#include "sim/engine.h"
#include "tests/sim/run_recorder.h"
#include "tests/sim/test_scenarios.h"

namespace metronome {
namespace {

struct Compared {
  int64_t settled_steps = 0;
  int64_t steps = 0;
};

// Runs s with the regime and without, with an observer (the time series' path through the ledger)
// and without one, and expects the same outputs.
Compared expect_same_with_and_without(const Scenario& s) {
  Compared c;
  const auto with = testing::record_run(s, [](Engine& e) { e.set_settled(true); });
  const auto without = testing::record_run(s, [](Engine& e) { e.set_settled(false); });
  EXPECT_EQ(with.summary, without.summary);
  EXPECT_TRUE(with.trace == without.trace)
      << "time series or steps differ at " << testing::first_difference(with.trace, without.trace);
  // Without an observer the ledger books the usual frame on its own path.
  const auto cost = make_cost_model(s);
  auto bare = [&](bool settled) {
    Engine e(s, *cost);
    e.set_settled(settled);
    const RunResult r = e.run();
    if (settled) {
      c.settled_steps = e.settled_steps();
      c.steps = r.engine_steps;
    }
    return run_json(s, predict_first_order(s), r, "test").dump();
  };
  EXPECT_EQ(bare(true), bare(false));
  return c;
}

const std::string kPoisson300 =
    "workload.arrival={\"type\":\"poisson\",\"rate_per_s\":100,\"max_sessions\":300}";
const std::string kGrid =
    "workload.arrival={\"type\":\"fixed_interval\",\"interval_s\":0.004,\"sessions\":100}";
const std::string kFixed4ms = "cost_model={\"type\":\"fixed\",\"step_overhead_s\":0.004}";
const std::string kCalls = "workload.duration={\"type\":\"exponential\",\"mean_s\":60}";
const std::string kDemand = "workload.arrival={\"type\":\"poisson\",\"rate_per_s\":20}";

}  // namespace

// Distinct callers arriving in the first seconds: once every caller settles the regime serves
// most steps (unbounded, until the pool runs out), takes the samples in place and hands the run
// back at the horizon.
TEST(SettledRun, DistinctCallersRunSettledAndMatch) {
  for (const std::string policy : {"windowed", "unbounded"}) {
    SCOPED_TRACE(policy);
    const Compared c = expect_same_with_and_without(
        testing::moshi(0, policy, {kPoisson300, "horizon_s=120", "output.sample_period_s=0.7"}));
    EXPECT_GT(c.settled_steps, c.steps / 2);
  }
}

// The shapes where the regime must hand a step back, or never start: a batch cap that makes frames
// late, silence padding before the deadline, blocks of odd sizes crossed several at a time, a pool
// that runs out, callers that hang up and arrive all the time, preemption, a control loop, prompts,
// frames with no KV, and jitter (where the regime never runs).
TEST(SettledRun, SameResultsAcrossShapes) {
  using testing::moshi;
  const std::vector<std::pair<std::string, std::vector<std::string>>> cases = {
      {"windowed", {kPoisson300, "engine.max_sessions_per_step=8"}},
      {"windowed", {kPoisson300, "engine.silence_after_s=0.03"}},
      {"windowed", {kPoisson300, "engine.block_size=12", "workload.kv_tokens_per_frame=29"}},
      {"windowed",
       {kPoisson300, "kv_policy.window_tokens=40", "kv_policy.sink_tokens=4",
        "engine.block_size=4"}},
      {"windowed", {kPoisson300, "engine.num_blocks=6000"}},
      {"unbounded", {kPoisson300}},
      {"unbounded", {kPoisson300, "engine.exhaustion=preempt_recompute"}},
      {"unbounded", {"workload.arrival={\"type\":\"poisson\",\"rate_per_s\":4}", kCalls}},
      {"windowed",
       {"workload.arrival={\"type\":\"poisson\",\"rate_per_s\":4}", kCalls,
        "engine.num_blocks=2500"}},
      {"windowed", {kPoisson300, "admission={\"type\":\"aimd\"}", "workload.deadline_s=0.02"}},
      {"windowed",
       {kPoisson300, "workload.prompt_tokens=40", "workload.input_tokens_per_frame=3",
        "workload.output_tokens_per_frame=4"}},
      {"windowed", {kPoisson300, "workload.kv_tokens_per_frame=0"}},
      {"windowed", {kPoisson300, "workload.frame_jitter_s=0.02"}},
      {"unbounded",
       {"workload.arrival={\"type\":\"fixed_interval\",\"interval_s\":0.5,\"sessions\":300}"}},
      {"windowed", {"engine.max_sessions_per_step=7"}},  // identical callers, cohorts
      // 300 callers at once, then Poisson callers who hang up, stalls and late frames: a frame
      // served late can come back behind a caller still queued.
      {"unbounded",
       {"workload.arrival={\"type\":\"poisson\",\"rate_per_s\":3}",
        "workload.duration={\"type\":\"exponential\",\"mean_s\":100}", "horizon_s=240"}},
      {"windowed", {"engine.silence_after_s=0.2", "engine.max_sessions_per_step=40"}},
      // Steps of 4 ms and callers arriving and hanging up on the same 4 ms grid: events at the
      // very instant a step ends, which goes first (sim/event_queue.h) while the next step waits.
      {"windowed", {kGrid, "workload.duration={\"type\":\"fixed\",\"seconds\":30}", kFixed4ms}},
      {"unbounded",
       {kGrid, "workload.duration={\"type\":\"fixed\",\"seconds\":30}", kFixed4ms,
        "admission={\"type\":\"aimd\"}"}},
      {"unbounded",
       {"workload.arrival={\"type\":\"fixed_interval\",\"interval_s\":0.052,\"sessions\":250}",
        kFixed4ms}},
      // Demand above the cap, and above the memory guard's cap: callers turned away arrive while
      // the regime runs and are taken in place (on the 4 ms grid, some at the instant a step ends
      // or the engine wakes, which the general path takes).
      {"windowed", {kDemand, kCalls, "admission={\"type\":\"static\",\"cap\":60}"}},
      {"windowed", {kDemand, kCalls, "admission={\"type\":\"aimd\"}", "engine.num_blocks=2000"}},
      {"windowed",
       {"workload.arrival={\"type\":\"fixed_interval\",\"interval_s\":0.004,"
        "\"sessions\":20000}",
        kCalls, kFixed4ms, "admission={\"type\":\"static\",\"cap\":30}"}},
  };
  for (size_t i = 0; i < cases.size(); ++i) {
    SCOPED_TRACE("case " + std::to_string(i) + " " + cases[i].first + " " +
                 cases[i].second.front());
    std::vector<std::string> sets = {"horizon_s=150"};
    sets.insert(sets.end(), cases[i].second.begin(), cases[i].second.end());
    expect_same_with_and_without(moshi(0, cases[i].first, sets));
  }
}

// Random engines and loads: the regime's exits (events, samples, the horizon, a short pool, a last
// frame) fall at arbitrary points of its steps.
TEST(SettledRun, RandomScenariosMatch) {
  Rng rng(23, "settled");
  int64_t settled = 0;
  for (int i = 0; i < 40; ++i) {
    auto pick = [&](int64_t lo, int64_t hi) {
      return lo + static_cast<int64_t>(rng.uniform() * static_cast<double>(hi - lo + 1));
    };
    // Every third engine runs on a 4 ms grid (arrivals, frame periods and fixed-cost steps), where
    // events fall on the instants steps end.
    const bool grid = i % 3 == 0;
    std::vector<std::string> sets = {
        grid ? "workload.arrival={\"type\":\"fixed_interval\",\"interval_s\":" +
                   std::to_string(0.004 * static_cast<double>(pick(1, 40))) +
                   ",\"sessions\":" + std::to_string(pick(5, 200)) + "}"
             : "workload.arrival={\"type\":\"poisson\",\"rate_per_s\":" +
                   std::to_string(0.5 + 20 * rng.uniform()) +
                   ",\"max_sessions\":" + std::to_string(pick(20, 400)) + "}",
        "workload.duration={\"type\":\"exponential\",\"mean_s\":" +
            std::to_string(10 + 200 * rng.uniform()) + "}",
        "engine.block_size=" + std::to_string(pick(1, 20)),
        "engine.num_blocks=" + std::to_string(pick(300, 20000)),
        "engine.max_sessions_per_step=" + std::to_string(pick(1, 300)),
        "engine.exhaustion=" + std::string(rng.uniform() < 0.5 ? "stall" : "preempt_recompute"),
        "engine.silence_after_s=" + std::to_string(0.01 + 0.3 * rng.uniform()),
        "workload.kv_tokens_per_frame=" + std::to_string(pick(0, 40)),
        "workload.input_tokens_per_frame=" + std::to_string(pick(0, 8)),
        "workload.output_tokens_per_frame=" + std::to_string(pick(0, 4)),
        "workload.prompt_tokens=" + std::to_string(pick(0, 40)),
        "kv_policy.window_tokens=" + std::to_string(pick(0, 200)),
        "kv_policy.sink_tokens=" + std::to_string(pick(0, 20)),
        "output.sample_period_s=" + std::to_string(0.05 + 2 * rng.uniform()),
        "horizon_s=90",
        "seed=" + std::to_string(i)};
    // Every fourth engine has a cap below its demand: callers turned away while it runs settled.
    if (i % 4 == 1) {
      sets.push_back("admission={\"type\":\"static\",\"cap\":" + std::to_string(pick(3, 60)) + "}");
    }
    if (grid) {
      sets.push_back("workload.frame_period_s=" +
                     std::to_string(0.004 * static_cast<double>(pick(10, 100))));
      sets.push_back("cost_model={\"type\":\"fixed\",\"step_overhead_s\":" +
                     std::to_string(0.004 * static_cast<double>(pick(1, 3))) + "}");
    }
    SCOPED_TRACE("case " + std::to_string(i));
    settled += expect_same_with_and_without(
                   testing::moshi(0, rng.uniform() < 0.5 ? "windowed" : "unbounded", sets))
                   .settled_steps;
  }
  EXPECT_GT(settled, 0);
}

}  // namespace metronome
