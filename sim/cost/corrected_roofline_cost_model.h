// The roofline with its error stated: the same bytes and FLOPs as the datasheet roofline, op by op
// (sim/cost/layer_ops.h, activations included), at the fractions of bandwidth and FLOP/s a GPU was
// measured to reach, memory and compute time added rather than overlapped, plus overheads:
//
//   t = step_overhead + pass_overhead + layers x layer_overhead
//     + GEMM bytes / (f_bw x bandwidth) + pointwise bytes / (f_pw x bandwidth)
//     + flops / (f_flops x bf16_flops)
//
//   GEMM bytes: weights once, activations per token, MoE experts touched, KV read and written;
//   pointwise bytes: norms, rope, activation, residual add, embedding;
//   flops: GEMMs, MoE experts, attention (4 x layers x heads x head_dim per query-key pair).
//
// Fitted to Vidur's measured H100/A100 layer timings (calibrate/roofline_correction_fit.h): the
// additive form followed them better than max(memory, compute) (held-out p90 about 10% vs 14% on
// H100). The fractions come from the GPU file's `roofline_correction` (fitted on that GPU, or
// assumed from a sibling: the label says which). Analytic, not a measurement of this model.
#pragma once

#include <vector>

#include "sim/config/gpu.h"
#include "sim/config/model.h"
#include "sim/cost/cost_model.h"
#include "sim/cost/layer_ops.h"

namespace metronome {

class CorrectedRooflineCostModel final : public CostModel {
 public:
  // ConfigError if the GPU has no roofline_correction.
  CorrectedRooflineCostModel(const ModelConfig& model, const GpuConfig& gpu,
                             double step_overhead_s);

  double pass_seconds(const PassShape& shape) const override;
  std::string label() const override;
  bool measured() const override { return false; }

  struct Work {
    double gemm_bytes = 0, pointwise_bytes = 0, flops = 0;
  };
  Work pass_work(const PassShape& shape) const;

 private:
  ModelConfig model_;
  GpuConfig gpu_;
  double overhead_s_;
  OpTotals layer_, pass_;
};

}  // namespace metronome
