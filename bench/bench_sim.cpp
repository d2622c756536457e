// Simulator speed, in CPU time (google-benchmark's rates use it), on:
//   - the canonical scenarios (Moshi on H200, 300 sessions, 80 ms frames, 30 simulated minutes),
//     unbounded and windowed, whose identical callers run as cohorts;
//   - the windowed canonical with distinct callers (bench/scenarios/distinct_windowed.json:
//     Poisson arrivals within the first 3 s, random phases, nothing merges), 6.74 million frames,
//     nearly all of them taken by the frame scheduler's bulk take of usual callers;
//   - many distinct windowed sessions arriving as a Poisson stream (10k, 100k and 1M), where
//     arrivals land in the middle of the ready queue and windows never settle;
//   - a fleet (bench/scenarios/fleet_moshi_10k.json): one hour of 200 distinct windowed Moshi
//     calls a replica behind a least_sessions router, at 10, 50 (10,000 calls) and 200 replicas;
//   - seeds of figure 4's Poisson unbounded Moshi scenario as a sweep runs them (simulation plus
//     the first-order prediction), in CPU milliseconds per seed.
// ns_per_frame and ms_per_seed are the figures the README quotes.
#include <benchmark/benchmark.h>

#include "sim/closed_form/first_order.h"
#include "sim/config/scenario.h"
#include "sim/cost/cost_model.h"
#include "sim/engine/engine.h"
#include "sim/fleet/fleet.h"

namespace {

std::string source(const std::string& file) {
  return std::string(METRONOME_SOURCE_DIR) + "/" + file;
}

void run_scenario(benchmark::State& state, const metronome::Scenario& s) {
  const auto cost = metronome::make_cost_model(s);
  int64_t steps = 0, frames = 0;
  for (auto _ : state) {
    metronome::Engine engine(s, *cost);
    const auto r = engine.run();
    steps += r.engine_steps;
    frames += r.frames_served;
    benchmark::DoNotOptimize(r.frames_due);
  }
  state.counters["steps_per_s"] =
      benchmark::Counter(static_cast<double>(steps), benchmark::Counter::kIsRate);
  state.counters["ns_per_frame"] =
      benchmark::Counter(static_cast<double>(frames) * 1e-9,
                         benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
  state.counters["frames_per_run"] =
      static_cast<double>(frames) / static_cast<double>(state.iterations());
}

void BM_CanonicalUnbounded(benchmark::State& state) {
  run_scenario(state,
               metronome::load_scenario(source("scenarios/canonical/moshi_h200_unbounded.json")));
}
void BM_CanonicalWindowed(benchmark::State& state) {
  run_scenario(state,
               metronome::load_scenario(source("scenarios/canonical/moshi_h200_windowed.json")));
}
// Distinct callers: the same 300 sessions arriving at random instants of the first ~3 s.
void BM_DistinctWindowed(benchmark::State& state) {
  run_scenario(state, metronome::load_scenario(source("bench/scenarios/distinct_windowed.json")));
}
// N distinct windowed sessions arriving over 10 s and served for 30 s, on a pool and batch cap
// large enough for all and 4 ms steps (the fixed cost model: the engine keeps up whatever N): each
// arrival's first frame is due before every queued frame.
void BM_PoissonSessions(benchmark::State& state) {
  const int64_t n = state.range(0);
  const std::string blocks = std::to_string(n * 40);
  run_scenario(
      state,
      metronome::load_scenario(
          source("scenarios/canonical/moshi_h200_windowed.json"),
          {"workload.arrival={\"type\":\"poisson\",\"rate_per_s\":" + std::to_string(n / 10) +
               ",\"max_sessions\":" + std::to_string(n) + "}",
           "engine.num_blocks=" + blocks, "engine.max_sessions_per_step=" + std::to_string(n),
           "horizon_s=30", "workload.duration.seconds=30",
           "cost_model={\"type\":\"fixed\",\"step_overhead_s\":0.004}"}));
}
// A sweep's per-seed work on figure 4's load scenario: the run and its first-order prediction.
void BM_SweepFig4Unbounded(benchmark::State& state) {
  const metronome::Scenario base =
      metronome::load_scenario(source("bench/scenarios/fig4_poisson_unbounded.json"));
  uint64_t seed = 0;
  for (auto _ : state) {
    metronome::Scenario s = base;
    s.seed = ++seed;
    const auto r = metronome::simulate(s);
    const auto p = metronome::predict_first_order(s);
    benchmark::DoNotOptimize(r.frames_due);
    benchmark::DoNotOptimize(p.t_sat_blocks_s);
  }
  state.counters["ms_per_seed"] =
      benchmark::Counter(static_cast<double>(state.iterations()) * 1e-3,
                         benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
}

// A fleet of R replicas with 200 calls each: the cost should be linear in R (and in the calls).
void BM_Fleet(benchmark::State& state) {
  const int64_t r = state.range(0);
  const metronome::Scenario s = metronome::load_scenario(
      source("bench/scenarios/fleet_moshi_10k.json"),
      {"fleet.groups=[{\"name\":\"h200\",\"count\":" + std::to_string(r) + "}]",
       "workload.arrival.max_sessions=" + std::to_string(200 * r),
       "workload.arrival.rate_per_s=" + std::to_string(20 * r)});
  int64_t frames = 0, placed = 0;
  for (auto _ : state) {
    const auto f = metronome::Fleet(s).run();
    frames += f.totals().frames_served;
    placed += f.placed;
    benchmark::DoNotOptimize(f.offered);
  }
  state.counters["replicas"] = static_cast<double>(r);
  state.counters["calls_placed"] =
      static_cast<double>(placed) / static_cast<double>(state.iterations());
  state.counters["ns_per_frame"] =
      benchmark::Counter(static_cast<double>(frames) * 1e-9,
                         benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
}

BENCHMARK(BM_CanonicalUnbounded)->Unit(benchmark::kMillisecond)->MinTime(1.0);
BENCHMARK(BM_CanonicalWindowed)->Unit(benchmark::kMillisecond)->MinTime(1.0);
BENCHMARK(BM_DistinctWindowed)->Unit(benchmark::kMillisecond)->MinTime(2.0);
BENCHMARK(BM_PoissonSessions)
    ->Arg(10'000)
    ->Arg(100'000)
    ->Arg(1'000'000)
    ->Unit(benchmark::kMillisecond)
    ->Iterations(1);
BENCHMARK(BM_Fleet)->Arg(10)->Arg(50)->Arg(200)->Unit(benchmark::kMillisecond)->Iterations(1);
BENCHMARK(BM_SweepFig4Unbounded)->Unit(benchmark::kMillisecond)->Iterations(200);

}  // namespace

BENCHMARK_MAIN();
