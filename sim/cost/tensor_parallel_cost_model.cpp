#include "sim/cost/tensor_parallel_cost_model.h"

#include <fmt/format.h>

#include <algorithm>

namespace metronome {

ModelConfig tensor_parallel_slice(const ModelConfig& m, int64_t k) {
  ModelConfig s = m;
  s.name = fmt::format("{}/tp{}", m.name, k);
  s.attention_heads = m.attention_heads / k;
  s.kv_heads = std::max<int64_t>(1, m.kv_heads / k);
  s.ffn_size = m.ffn_size / k;
  s.expert_ffn_size = m.expert_ffn_size / k;
  // vLLM shards the embedding and the output head by vocabulary rows.
  s.vocab_size = (m.vocab_size + k - 1) / k;
  s.weight_bytes = m.weight_bytes / static_cast<double>(k);
  return s;
}

TensorParallelCostModel::TensorParallelCostModel(std::unique_ptr<CostModel> slice,
                                                 const ModelConfig& model, const GpuConfig& gpu,
                                                 int64_t k)
    : slice_(std::move(slice)),
      k_(k),
      layers_(static_cast<double>(model.layers)),
      bytes_per_token_(2.0 * static_cast<double>(model.hidden_size)),
      seconds_per_byte_(2.0 * static_cast<double>(k - 1) / static_cast<double>(k) /
                        gpu.interconnect_bandwidth_bytes_per_s),
      latency_s_(gpu.interconnect_latency_s),
      gpu_(gpu.name) {}

double TensorParallelCostModel::all_reduce_seconds(int64_t tokens) const {
  return latency_s_ + seconds_per_byte_ * bytes_per_token_ * static_cast<double>(tokens);
}

double TensorParallelCostModel::pass_seconds(const PassShape& shape) const {
  if (shape.sessions == 0) return 0;
  return slice_->pass_seconds(shape) + 2.0 * layers_ * all_reduce_seconds(shape.query_tokens);
}

std::string TensorParallelCostModel::label() const {
  return fmt::format(
      "{}, tensor parallel {}: the per-GPU slice, plus 2 all-reduces per layer over {}'s "
      "interconnect ({:.0f} GB/s each way, {:.1f} us each)",
      slice_->label(), k_, gpu_,
      2.0 * static_cast<double>(k_ - 1) / static_cast<double>(k_) / seconds_per_byte_ / 1e9,
      latency_s_ * 1e6);
}

}  // namespace metronome
