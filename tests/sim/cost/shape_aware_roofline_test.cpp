// The shape-aware roofline against closed forms: each coefficient prices only the work it names.
#include <gtest/gtest.h>

#include <functional>

#include "base/config_error.h"
#include "sim/config/scenario.h"
#include "sim/cost/shape_aware_roofline_cost_model.h"

namespace metronome {
namespace {

struct Priced {
  ModelConfig model;
  GpuConfig gpu;
};

// A GPU whose every coefficient is 0 but the ones a test names.
Priced only(const std::function<void(ShapeAwareCorrection&)>& set) {
  Priced s;
  const Scenario sc = load_scenario("", {"model=tiny", "gpu=h100"});
  s.model = sc.model;
  s.gpu = sc.gpu;
  ShapeAwareCorrection c;
  c.present = true;
  c.gemm_memory = c.gemm_compute = c.gemm_overlap = 0;
  c.pointwise = {0, 0, 0, 0};
  set(c);
  s.gpu.shape_aware_correction = c;
  return s;
}

TEST(ShapeAwareRoofline, MemoryBoundDecodeStreamsEveryGemmWeightOnceAtTheDatasheet) {
  const Priced s = only([](ShapeAwareCorrection& c) { c.gemm_memory = 1; });
  const ModelConfig& m = s.model;
  const ShapeAwareRooflineCostModel cost(m, s.gpu, 0.001);
  // One decode token: weights of QKV, O, gate+up, down per layer and the output head, plus one
  // token's activations in and out of each GEMM, all at 2 bytes, and the token's K and V.
  const double h = static_cast<double>(m.hidden_size), f = static_cast<double>(m.ffn_size);
  const double q = static_cast<double>(m.attention_heads * m.head_dim);
  const double qkv = static_cast<double>((m.attention_heads + 2 * m.kv_heads) * m.head_dim);
  const double v = static_cast<double>(m.vocab_size);
  const double w = m.weight_bytes_per_param;
  const double layer =
      w * (h * qkv + q * h + h * 2 * f + f * h) + 2 * ((h + qkv) + (q + h) + (h + 2 * f) + (f + h));
  const double head = w * h * v + 2 * (h + v);
  const double kv_written = static_cast<double>(m.kv_bytes_per_token());  // its own K and V
  const double bytes = static_cast<double>(m.layers) * layer + head + kv_written;
  EXPECT_NEAR(cost.pass_seconds({1, 1, 0, 0}), 0.001 + bytes / s.gpu.memory_bandwidth_bytes_per_s,
              1e-12);
  EXPECT_EQ(cost.pass_seconds({0, 0, 0, 0}), 0);
}

TEST(ShapeAwareRoofline, KernelsAreCountedOncePerLayerOpAndOncePerPassOp) {
  const Priced s = only([](ShapeAwareCorrection& c) {
    c.gemm_kernel_s = 1e-6;
    c.pointwise_kernel_s = 1e-3;
  });
  const ShapeAwareRooflineCostModel cost(s.model, s.gpu, 0);
  // Per layer: 4 GEMMs and 5 pointwise (2 norms, rope, activation, add); per pass: the
  // embedding (pointwise) and the output head (GEMM).
  const double layers = static_cast<double>(s.model.layers);
  EXPECT_NEAR(cost.pass_seconds({3, 70, 500, 900}), layers * (4e-6 + 5e-3) + 1e-3 + 1e-6, 1e-12);
}

TEST(ShapeAwareRoofline, AttentionIsTheLargerOfItsTwoTimesPlusTheOverlapShareOfTheSmaller) {
  const Priced s = only([](ShapeAwareCorrection& c) {
    c.gemm_memory = 1;
    c.gemm_compute = 2;
    c.gemm_overlap = 0.5;
  });
  const ShapeAwareRooflineCostModel cost(s.model, s.gpu, 0);
  // Attention alone: the difference between two passes that differ only in cached keys and pairs.
  const PassShape a{1, 1, 0, 0}, b{1, 1, 100000, 100000};
  const double kv = static_cast<double>(s.model.kv_bytes_per_token()) * 100000;
  const double fl =
      4.0 * static_cast<double>(s.model.layers * s.model.attention_heads * s.model.head_dim) *
      100000;
  const double m_s = kv / s.gpu.memory_bandwidth_bytes_per_s, c_s = fl / s.gpu.bf16_flops;
  const double one_token_kv =
      static_cast<double>(s.model.kv_bytes_per_token()) / s.gpu.memory_bandwidth_bytes_per_s;
  const double expect = m_s + one_token_kv >= c_s ? 1 * (m_s + one_token_kv) + 0.5 * c_s
                                                  : 2 * c_s + 0.5 * (m_s + one_token_kv);
  EXPECT_NEAR(cost.pass_seconds(b) - cost.pass_seconds(a) + one_token_kv, expect, 1e-12);
}

TEST(ShapeAwareRoofline, RefusesExpertsAndAGpuWithoutTheBlock) {
  Priced s = only([](ShapeAwareCorrection&) {});
  ModelConfig moe = load_scenario("", {"model=qwen3-omni-30b-a3b"}).model;
  EXPECT_THROW(ShapeAwareRooflineCostModel(moe, s.gpu, 0), ConfigError);
  s.gpu.shape_aware_correction.present = false;
  try {
    ShapeAwareRooflineCostModel(s.model, s.gpu, 0);
    FAIL() << "priced without a fitted block";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("shape_aware_correction"), std::string::npos);
  }
}

}  // namespace
}  // namespace metronome
