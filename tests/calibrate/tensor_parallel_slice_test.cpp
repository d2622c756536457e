// The per-GPU slice a tensor-parallel replica prices (sim/cost/tensor_parallel_cost_model.h)
// against Vidur's measured tensor-parallel rows (results/vidur: each TP row is one GPU's slice of
// the layer, without the all-reduce): the slice has the shape Vidur profiled, and the corrected
// roofline prices it as well at TP 2, 4 and 8 as it prices the whole layer at TP 1.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <string>

#include "calibrate/roofline_correction_fit.h"
#include "calibrate/vidur_profile.h"
#include "sim/config/scenario.h"
#include "sim/cost/layer_ops.h"
#include "sim/cost/tensor_parallel_cost_model.h"

namespace metronome::calibrate {
namespace {

const std::string kVidur = std::string(METRONOME_SOURCE_DIR) + "/results/vidur";

struct Profiled {
  const char* model;
  const char* gpu;
};
constexpr Profiled kProfiles[] = {{"meta-llama/Llama-2-7b-hf", "h100"},
                                  {"internlm/internlm-20b", "h100"},
                                  {"codellama/CodeLlama-34b-Instruct-hf", "h100"},
                                  {"meta-llama/Meta-Llama-3-8B", "a100"}};

// The whole model of a TP-1 profile, as a model file would state it.
ModelConfig model_of(const VidurProfile& p) {
  ModelConfig m;
  m.name = p.model;
  m.layers = 1;
  m.hidden_size = p.shape.hidden;
  m.attention_heads = p.shape.heads;
  m.kv_heads = p.shape.kv_heads;
  m.head_dim = p.shape.head_dim;
  m.ffn_size = p.shape.ffn;
  m.vocab_size = p.shape.vocab;
  return m;
}

ErrorStats slice_error(const VidurProfile& p, const LayerShape& s, const GpuConfig& gpu) {
  std::vector<double> predicted, measured;
  for (const auto& row : p.mlp) {
    predicted.push_back(
        corrected_layer_seconds(s, gpu.roofline_correction, gpu, static_cast<double>(row.tokens)));
    measured.push_back(row.layer_seconds());
  }
  return error_stats(predicted, measured);
}

}  // namespace

TEST(TensorParallelSlice, MatchesVidursPerGpuRowsAsWellAsTpOne) {
  for (const auto& pr : kProfiles) {
    const GpuConfig gpu = load_scenario("", {std::string("gpu=") + pr.gpu}).gpu;
    ASSERT_TRUE(gpu.roofline_correction.present) << pr.gpu;
    const VidurProfile whole = read_vidur_profile(kVidur, pr.model, pr.gpu, 1);
    const ModelConfig m = model_of(whole);
    const ErrorStats one = slice_error(whole, layer_shape(m), gpu);
    for (int k : {2, 4, 8}) {
      const VidurProfile tp = read_vidur_profile(kVidur, pr.model, pr.gpu, k);
      // The slice the wrapper prices is the layer Vidur timed on one of k GPUs.
      const LayerShape s = layer_shape(tensor_parallel_slice(m, k));
      EXPECT_EQ(s.hidden, tp.shape.hidden) << pr.model << " tp " << k;
      EXPECT_EQ(s.heads, tp.shape.heads) << pr.model << " tp " << k;
      EXPECT_EQ(s.kv_heads, tp.shape.kv_heads) << pr.model << " tp " << k;
      EXPECT_EQ(s.head_dim, tp.shape.head_dim) << pr.model << " tp " << k;
      EXPECT_EQ(s.ffn, tp.shape.ffn) << pr.model << " tp " << k;
      const ErrorStats e = slice_error(tp, s, gpu);
      std::printf("%-38s %s tp %d: median %.3f p90 %.3f ratio %.3f (tp 1: %.3f %.3f %.3f)\n",
                  pr.model, pr.gpu, k, e.median, e.p90, e.median_ratio, one.median, one.p90,
                  one.median_ratio);
      EXPECT_FALSE(std::isnan(e.p90));
      // As good as TP 1, within 3 points of median and 5 of p90 error (measured: better on the
      // three H100 layers, 1.4 points worse at most on the A100's).
      EXPECT_LT(e.median, one.median + 0.03) << pr.model << " tp " << k;
      EXPECT_LT(e.p90, one.p90 + 0.05) << pr.model << " tp " << k;
      // The whole layer's price is far from a slice's time: the check can tell them apart.
      if (k == 8) EXPECT_GT(slice_error(tp, layer_shape(m), gpu).median, 0.5) << pr.model;
    }
  }
}

}  // namespace metronome::calibrate
