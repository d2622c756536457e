// A replica over k GPUs (engine.tensor_parallel, vLLM's Megatron-style split): each GPU runs its
// slice of every layer (1/k of the attention heads, of the KV heads, of the MLP's intermediate
// size and of the vocabulary; a copy of one KV head where there are fewer than k) in parallel
// with the others, and two all-reduces per layer (after the attention output projection and after
// the MLP down projection) sum the slices' partial outputs:
//
//   t_pass = t_slice(pass) + 2 x layers x t_allreduce(query_tokens)
//   t_allreduce(n) = latency + 2 (k - 1) / k x n x hidden x 2 B / link bandwidth
//
// t_slice is whatever cost model the scenario names, built for the per-GPU slice of the model
// (tensor_parallel_slice), so the roofline, the corrected roofline and a calibration scaled to the
// slice all apply unchanged. The all-reduce is a ring's traffic (each GPU sends and receives
// 2 (k - 1) / k of the bf16 activations) over the GPU file's interconnect, at its stated bandwidth
// each way, not overlapped with compute.
#pragma once

#include <memory>
#include <string>

#include "sim/config/gpu.h"
#include "sim/config/model.h"
#include "sim/cost/cost_model.h"

namespace metronome {

// One GPU's share of `m` over `k` GPUs, named "<name>/tp<k>" (a calibration of the whole model is
// not the slice's: it must be scaled to it, or is refused). Weights are split evenly.
ModelConfig tensor_parallel_slice(const ModelConfig& m, int64_t k);

class TensorParallelCostModel final : public CostModel {
 public:
  // `slice`: the scenario's cost model built for tensor_parallel_slice(model, k).
  TensorParallelCostModel(std::unique_ptr<CostModel> slice, const ModelConfig& model,
                          const GpuConfig& gpu, int64_t k);

  double pass_seconds(const PassShape& shape) const override;
  std::string label() const override;
  bool measured() const override { return slice_->measured(); }

  // One all-reduce of `tokens` tokens' hidden states.
  double all_reduce_seconds(int64_t tokens) const;
  const CostModel& slice() const { return *slice_; }

 private:
  std::unique_ptr<CostModel> slice_;
  int64_t k_;
  double layers_;
  double bytes_per_token_;   // hidden x 2 B (bf16 activations)
  double seconds_per_byte_;  // 2 (k - 1) / k / bandwidth
  double latency_s_;
  std::string gpu_;
};

}  // namespace metronome
