// Analytic cost from datasheets: a pass takes the longer of its bytes over memory bandwidth and its
// FLOPs over peak compute, plus a fixed overhead. Labelled analytic wherever it is used.
#pragma once

#include "sim/config/gpu.h"
#include "sim/config/model.h"
#include "sim/cost/cost_model.h"

namespace metronome {

class RooflineCostModel final : public CostModel {
 public:
  RooflineCostModel(const ModelConfig& model, const GpuConfig& gpu, double step_overhead_s);

  double pass_seconds(const PassShape& shape) const override;
  std::string label() const override;
  bool measured() const override { return false; }

  // Bytes a pass reads: dense weights, the experts its tokens touch, cached KV read, new KV
  // written.
  double pass_bytes(const PassShape& shape) const;
  double pass_flops(const PassShape& shape) const;
  // Expected distinct experts per layer touched by `tokens` tokens routed uniformly top-k:
  // E x (1 - (1 - k/E)^tokens).
  double experts_touched(int64_t tokens) const;

 private:
  ModelConfig model_;
  GpuConfig gpu_;
  double overhead_s_;
  // The model's sizes, computed once: every engine step prices one or two passes.
  double dense_params_, expert_params_, active_params_, kv_bytes_per_token_, attention_width_;
};

}  // namespace metronome
