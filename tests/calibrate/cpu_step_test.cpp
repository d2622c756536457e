// The CPU benchmark backend: model shapes agree with the scenario catalog, steps run and stay
// finite, grids are well formed.
#include "calibrate/cpu_step.h"

#include <gtest/gtest.h>

#include <set>

#include "calibrate/bench_model.h"
#include "calibrate/grid.h"
#include "calibrate/pipeline.h"

namespace metronome::calibrate {
namespace {

TEST(BenchModel, ShapesMatchTheScenarioCatalog) {
  for (const auto& name : bench_model_names()) {
    const auto shape = bench_model(name);
    ASSERT_TRUE(shape) << name;
    const ModelConfig m = scenario_model(name, "the test");
    EXPECT_EQ(shape->name, name);
    EXPECT_EQ(shape->layers, m.layers) << name;
    EXPECT_EQ(shape->hidden, m.hidden_size) << name;
    EXPECT_EQ(shape->q_heads, m.attention_heads) << name;
    EXPECT_EQ(shape->kv_heads, m.kv_heads) << name;
    EXPECT_EQ(shape->head_dim, m.head_dim) << name;
    EXPECT_EQ(shape->experts, m.experts) << name;
    EXPECT_EQ(shape->top_k, m.experts_active) << name;
    EXPECT_EQ(shape->ffn, m.moe() ? m.expert_ffn_size : m.ffn_size) << name;
  }
  EXPECT_FALSE(bench_model("no-such-model"));
}

TEST(Grid, NamedGridsAreUniqueAndHaveEnoughStepPoints) {
  for (const auto& name : grid_names()) {
    const auto g = find_grid(name);
    ASSERT_TRUE(g) << name;
    std::set<std::string> names;
    int steps = 0;
    for (const auto& p : g->points) {
      EXPECT_TRUE(names.insert(point_name(p)).second) << point_name(p);
      steps += p.kind == BenchKind::kStep;
      EXPECT_GE(p.sessions, 1);
      EXPECT_GE(p.q_len, 1);
    }
    // Six terms (MoE) must be trainable after holding out every fourth point.
    EXPECT_GE(steps - steps / 4, 6) << name;
    EXPECT_GT(g->repetitions, 0);
  }
  EXPECT_FALSE(find_grid("huge"));
}

TEST(CpuStep, RunsEveryKindAndStaysFinite) {
  const auto tiny = *bench_model("tiny");
  for (GridPoint p :
       {GridPoint{BenchKind::kStep, 3, 4, 40, -1, 0}, GridPoint{BenchKind::kStep, 2, 1, 300, 32, 4},
        GridPoint{BenchKind::kStep, 1, 1, 0, -1, 0}}) {
    CpuStep step(tiny, p);
    EXPECT_EQ(step.total_q(), p.sessions * p.q_len);
    step.run();
    step.run();  // idempotent: the same frame again
    step.run_attention();
    step.run_gemms();
    EXPECT_TRUE(step.outputs_finite()) << point_name(p);
  }
  EXPECT_THROW(CpuStep(tiny, GridPoint{BenchKind::kStep, 0, 1, 10, -1, 0}), std::invalid_argument);
}

// A timed step must do the same work every call: the output of one run never feeds the next, so
// activations cannot drift (e.g. into denormals, which x86 computes slowly).
TEST(CpuStep, RepeatedRunsGiveTheSameNonTrivialOutput) {
  CpuStep step(*bench_model("tiny"), GridPoint{BenchKind::kStep, 2, 3, 50, -1, 0});
  step.run();
  const std::vector<float> first = step.output();
  for (int i = 0; i < 5; ++i) step.run();
  EXPECT_EQ(step.output(), first);
  double sum_sq = 0;
  for (float v : first) sum_sq += double{v} * v;
  // Small (attention averages values, SwiGLU multiplies two small numbers) but far from denormals.
  EXPECT_GT(sum_sq / static_cast<double>(first.size()), 1e-12);
}

TEST(CpuStep, RunsAnMoeModelShape) {
  kernels::ModelShape moe{"toy-moe", 1, 64, 4, 2, 16, 32, 8, 2};
  CpuStep step(moe, GridPoint{BenchKind::kStep, 2, 3, 20, -1, 0});
  step.run();
  EXPECT_TRUE(step.outputs_finite());
}

}  // namespace
}  // namespace metronome::calibrate
