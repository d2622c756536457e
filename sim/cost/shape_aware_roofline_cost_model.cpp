#include "sim/cost/shape_aware_roofline_cost_model.h"

#include <fmt/format.h>

#include "base/config_error.h"
#include "sim/cost/pass_shape.h"

namespace metronome {

ShapeAwareRooflineCostModel::ShapeAwareRooflineCostModel(const ModelConfig& model,
                                                         const GpuConfig& gpu,
                                                         double step_overhead_s)
    : model_(model), gpu_(gpu), overhead_s_(step_overhead_s) {
  if (!gpu.shape_aware_correction.present) {
    throw ConfigError("gpu \"" + gpu.name +
                      "\": cost_model.type \"shape_aware_roofline\" needs the GPU file's "
                      "shape_aware_correction; fit one with `metronome calibrate import-vidur "
                      "--transfer-model ... --transfer-out FILE` or use cost_model.type "
                      "\"corrected_roofline\"");
  }
  if (model.moe()) {
    throw ConfigError("model \"" + model.name +
                      "\": cost_model.type \"shape_aware_roofline\" prices dense layers only (no "
                      "measured profile has an expert GEMM); use \"corrected_roofline\"");
  }
  ops_ = token_ops(layer_shape(model));
}

double ShapeAwareRooflineCostModel::pass_seconds(const PassShape& s) const {
  if (s.sessions == 0) return 0;
  const auto& c = gpu_.shape_aware_correction;
  const double q = static_cast<double>(s.query_tokens);
  const double layers = static_cast<double>(model_.layers);
  double t = overhead_s_;
  for (const auto& op : ops_)
    t += (op.per_pass ? 1.0 : layers) * shape_aware_seconds(c, op_terms(op, q, gpu_));
  const double kv_bytes = static_cast<double>(model_.kv_bytes_per_token()) *
                          static_cast<double>(s.kv_read_tokens + s.query_tokens);
  const double attention_flops =
      4.0 * static_cast<double>(model_.layers * model_.attention_heads * model_.head_dim) *
      s.qk_pairs;
  return t + shape_aware_seconds(c, gemm_like_terms(kv_bytes / gpu_.memory_bandwidth_bytes_per_s,
                                                    attention_flops / gpu_.bf16_flops));
}

std::string ShapeAwareRooflineCostModel::label() const {
  const auto& c = gpu_.shape_aware_correction;
  const std::string fitted = c.fitted_on == gpu_.name
                                 ? "fitted to " + c.fitted_on + " measurements"
                                 : "fitted on " + c.fitted_on + ", assumed for " + gpu_.name;
  return fmt::format(
      "analytic: shape-aware roofline of {} datasheet ({}), GEMM x{:.3f} memory-bound, x{:.3f} "
      "compute-bound, {:.2f} of the smaller, {:.1f} us per GEMM; pointwise x{:.2f}-{:.2f}, "
      "{:.1f} us per kernel ({})",
      gpu_.name, model_.name, c.gemm_memory, c.gemm_compute, c.gemm_overlap, 1e6 * c.gemm_kernel_s,
      *std::min_element(c.pointwise.begin(), c.pointwise.end()),
      *std::max_element(c.pointwise.begin(), c.pointwise.end()), 1e6 * c.pointwise_kernel_s,
      fitted);
}

}  // namespace metronome
