// The roofline corrected op by op so that it transfers across layer shapes: each token-level op
// (sim/cost/layer_ops.h) priced by the rule in shape_aware_op_time.h, GEMMs between their memory-
// and compute-bound times with a fitted share of the smaller one, each pointwise kind at its own
// rate, a fixed cost per kernel. Fitted on several measured layer shapes of one GPU and reported
// held out one shape at a time (docs/calibration.md), where the corrected roofline
// (corrected_roofline_cost_model.h) was fitted on one 7B layer and over-predicts larger layers
// between 64 and 512 tokens.
//
//   t = step_overhead + layers x sum(per-layer ops) + sum(per-pass ops: embedding, output head)
//     + attention, priced like a GEMM at the fitted rates without a kernel of its own (no profile
//       times it): KV bytes read and written against 4 x layers x heads x head_dim per query-key
//       pair.
//
// Dense models only: no profile has an expert GEMM, so an MoE model is refused rather than priced
// by a form that never saw its shape.
#pragma once

#include "sim/config/gpu.h"
#include "sim/config/model.h"
#include "sim/cost/cost_model.h"
#include "sim/cost/layer_ops.h"
#include "sim/cost/shape_aware_op_time.h"

namespace metronome {

class ShapeAwareRooflineCostModel final : public CostModel {
 public:
  // ConfigError if the GPU has no shape_aware_correction or the model has experts.
  ShapeAwareRooflineCostModel(const ModelConfig& model, const GpuConfig& gpu,
                              double step_overhead_s);

  double pass_seconds(const PassShape& shape) const override;
  std::string label() const override;
  bool measured() const override { return false; }

 private:
  ModelConfig model_;
  GpuConfig gpu_;
  double overhead_s_;
  std::vector<TokenOp> ops_;
};

}  // namespace metronome
