#include "sim/cost/roofline_cost_model.h"

#include <algorithm>
#include <cmath>

namespace metronome {

RooflineCostModel::RooflineCostModel(const ModelConfig& model, const GpuConfig& gpu,
                                     double step_overhead_s)
    : model_(model),
      gpu_(gpu),
      overhead_s_(step_overhead_s),
      dense_params_(model.dense_params()),
      expert_params_(model.expert_params()),
      active_params_(model.active_params_per_token()),
      kv_bytes_per_token_(static_cast<double>(model.kv_bytes_per_token())),
      attention_width_(static_cast<double>(model.layers * model.attention_heads * model.head_dim)) {
}

double RooflineCostModel::experts_touched(int64_t tokens) const {
  if (!model_.moe() || tokens <= 0) return 0;
  const double e = static_cast<double>(model_.experts);
  const double k = static_cast<double>(model_.experts_active);
  return e * (1.0 - std::pow(1.0 - k / e, static_cast<double>(tokens)));
}

double RooflineCostModel::pass_bytes(const PassShape& s) const {
  const double bpp = model_.weight_bytes_per_param;
  const double weights =
      bpp * (dense_params_ +
             static_cast<double>(model_.layers) * experts_touched(s.query_tokens) * expert_params_);
  const double kv = kv_bytes_per_token_ * static_cast<double>(s.kv_read_tokens + s.query_tokens);
  return weights + kv;
}

double RooflineCostModel::pass_flops(const PassShape& s) const {
  const double gemm = 2.0 * active_params_ * static_cast<double>(s.query_tokens);
  const double attn = 4.0 * attention_width_ * s.qk_pairs;
  return gemm + attn;
}

double RooflineCostModel::pass_seconds(const PassShape& s) const {
  if (s.sessions == 0) return 0;
  const double memory = pass_bytes(s) / gpu_.memory_bandwidth_bytes_per_s;
  const double compute = pass_flops(s) / gpu_.bf16_flops;
  return overhead_s_ + std::max(memory, compute);
}

std::string RooflineCostModel::label() const {
  return "analytic: roofline of " + gpu_.name + " datasheet (" + model_.name + ")";
}

}  // namespace metronome
