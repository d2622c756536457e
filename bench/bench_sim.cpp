// Simulator speed on the canonical scenarios (Moshi on H200, 300 sessions, 80 ms frames, 30
// simulated minutes), unbounded and windowed: wall time per seed, engine steps/s and
// session-frames/s.
#include <benchmark/benchmark.h>

#include "sim/cost/cost_model.h"
#include "sim/engine.h"
#include "sim/scenario.h"

namespace {

void run_canonical(benchmark::State& state, const std::string& file) {
  const metronome::Scenario s =
      metronome::load_scenario(std::string(METRONOME_SOURCE_DIR) + "/" + file);
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
  state.counters["session_frames_per_s"] =
      benchmark::Counter(static_cast<double>(frames), benchmark::Counter::kIsRate);
  state.counters["frames_per_run"] =
      static_cast<double>(frames) / static_cast<double>(state.iterations());
}

void BM_CanonicalUnbounded(benchmark::State& state) {
  run_canonical(state, "scenarios/canonical/moshi_h200_unbounded.json");
}
void BM_CanonicalWindowed(benchmark::State& state) {
  run_canonical(state, "scenarios/canonical/moshi_h200_windowed.json");
}
BENCHMARK(BM_CanonicalUnbounded)->Unit(benchmark::kMillisecond)->MinTime(1.0);
BENCHMARK(BM_CanonicalWindowed)->Unit(benchmark::kMillisecond)->MinTime(1.0);

}  // namespace

BENCHMARK_MAIN();
