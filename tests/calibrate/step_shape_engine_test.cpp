// step_shape.h repeats the engine's PassShape formula so that a benchmarked step and a simulated
// one mean the same shape. This pins the copy: the ingest passes the engine asks a cost model for
// are exactly step_pass_shape() of the sessions' frame and context.
#include <gtest/gtest.h>

#include <vector>

#include "calibrate/step_shape.h"
#include "sim/cost/cost_model.h"
#include "sim/engine.h"
#include "sim/scenario.h"

namespace metronome::calibrate {
namespace {

class RecordingCost final : public CostModel {
 public:
  double pass_seconds(const PassShape& s) const override {
    passes.push_back(s);
    return 0.001;
  }
  std::string label() const override { return "recording"; }
  bool measured() const override { return false; }
  mutable std::vector<PassShape> passes;
};

void expect_same(const PassShape& a, const PassShape& b, const std::string& where) {
  EXPECT_EQ(a.sessions, b.sessions) << where;
  EXPECT_EQ(a.query_tokens, b.query_tokens) << where;
  EXPECT_EQ(a.kv_read_tokens, b.kv_read_tokens) << where;
  EXPECT_DOUBLE_EQ(a.qk_pairs, b.qk_pairs) << where;
}

TEST(StepShape, MatchesTheEnginesIngestPasses) {
  for (const char* policy : {"unbounded", "windowed"}) {
    // 3 callers at once, 4 input tokens and 1 output per frame: one ingest pass per step, no decode
    // pass; each frame appends 5 KV tokens, so the window (W 24, S 4) fills after a few frames.
    const Scenario s = load_scenario(
        "", {"model=tiny", "engine.num_blocks=10000",
             "workload.arrival={\"type\":\"all_at_once\",\"sessions\":3}",
             "workload.duration={\"type\":\"fixed\",\"seconds\":2}",
             "workload.input_tokens_per_frame=4", "workload.output_tokens_per_frame=1",
             "workload.kv_tokens_per_frame=5", std::string("kv_policy.type=") + policy,
             "kv_policy.window_tokens=24", "kv_policy.sink_tokens=4", "horizon_s=2"});
    RecordingCost cost;
    Engine(s, cost).run();
    ASSERT_GE(cost.passes.size(), 40u) << policy;
    int checked = 0, saturated = 0;
    for (const PassShape& got : cost.passes) {
      // Steps where all three sessions are at the same frame: the context is kv_read / 3 (below
      // the window) and the whole shape must match the benchmark's formula for it.
      if (got.sessions != 3 || got.kv_read_tokens % 3 != 0) continue;
      const kv::Window w = s.kv_policy.window();
      const int64_t cached = got.kv_read_tokens / 3;
      const bool full = !w.unbounded() && cached == w.window + w.sinks;
      // A full window is reached from any context beyond it; 200 is one.
      const int32_t ctx = full ? 200 : static_cast<int32_t>(cached);
      expect_same(got, step_pass_shape({BenchKind::kStep, 3, 4, ctx, w.window, w.sinks}),
                  std::string(policy) + " cached " + std::to_string(cached));
      ++checked;
      saturated += full;
    }
    EXPECT_GE(checked, 8) << policy;
    if (std::string(policy) == "windowed") EXPECT_GE(saturated, 1);
  }
}

}  // namespace
}  // namespace metronome::calibrate
