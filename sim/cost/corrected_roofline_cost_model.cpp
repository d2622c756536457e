#include "sim/cost/corrected_roofline_cost_model.h"

#include <fmt/format.h>

#include <cmath>

#include "base/config_error.h"

namespace metronome {

CorrectedRooflineCostModel::CorrectedRooflineCostModel(const ModelConfig& model,
                                                       const GpuConfig& gpu, double step_overhead_s)
    : model_(model), gpu_(gpu), overhead_s_(step_overhead_s) {
  if (!gpu.roofline_correction.present) {
    throw ConfigError("gpu \"" + gpu.name +
                      "\": cost_model.type \"corrected_roofline\" needs the GPU file's "
                      "roofline_correction {bandwidth_fraction, flops_fraction, layer_overhead_s, "
                      "pass_overhead_s, fitted_on, source}; fit one with `metronome calibrate "
                      "import-vidur` or use cost_model.type \"roofline\"");
  }
  const auto ops = token_ops(layer_shape(model));
  layer_ = op_totals(ops, false);
  pass_ = op_totals(ops, true);
}

CorrectedRooflineCostModel::Work CorrectedRooflineCostModel::pass_work(const PassShape& s) const {
  const double q = static_cast<double>(s.query_tokens);
  const double layers = static_cast<double>(model_.layers);
  Work w;
  w.gemm_bytes = pass_.gemm_bytes_fixed + pass_.gemm_bytes_per_token * q +
                 layers * (layer_.gemm_bytes_fixed + layer_.gemm_bytes_per_token * q);
  w.pointwise_bytes =
      pass_.pointwise_bytes_fixed + pass_.pointwise_bytes_per_token * q +
      layers * (layer_.pointwise_bytes_fixed + layer_.pointwise_bytes_per_token * q);
  w.flops = (pass_.flops_per_token + layers * layer_.flops_per_token) * q;
  if (model_.moe() && s.query_tokens > 0) {
    const double e = static_cast<double>(model_.experts);
    const double k = static_cast<double>(model_.experts_active);
    const double h = static_cast<double>(model_.hidden_size);
    const double f = static_cast<double>(model_.expert_ffn_size);
    const double touched = e * (1.0 - std::pow(1.0 - k / e, q));
    // Router and the experts the batch touches, once; each routed token's activations (in h,
    // gate+up 2f, act f, out h).
    w.gemm_bytes +=
        layers * model_.weight_bytes_per_param * (h * e + touched * model_.expert_params());
    w.gemm_bytes += layers * q * k * 2.0 * (2.0 * h + 3.0 * f);
    w.flops += layers * q * (2.0 * h * e + 2.0 * k * model_.expert_params());
  }
  w.gemm_bytes += static_cast<double>(model_.kv_bytes_per_token()) *
                  static_cast<double>(s.kv_read_tokens + s.query_tokens);
  w.flops += 4.0 * static_cast<double>(model_.layers * model_.attention_heads * model_.head_dim) *
             s.qk_pairs;
  return w;
}

double CorrectedRooflineCostModel::pass_seconds(const PassShape& s) const {
  if (s.sessions == 0) return 0;
  const auto& c = gpu_.roofline_correction;
  const Work w = pass_work(s);
  const double bw = gpu_.memory_bandwidth_bytes_per_s;
  return overhead_s_ + c.pass_overhead_s + static_cast<double>(model_.layers) * c.layer_overhead_s +
         w.gemm_bytes / (c.bandwidth_fraction * bw) +
         w.pointwise_bytes / (c.pointwise_bandwidth_fraction * bw) +
         w.flops / (c.flops_fraction * gpu_.bf16_flops);
}

std::string CorrectedRooflineCostModel::label() const {
  const auto& c = gpu_.roofline_correction;
  const std::string fitted = c.fitted_on == gpu_.name ? "fitted to " + c.fitted_on + " measurements"
                                                      : "fractions fitted on " + c.fitted_on +
                                                            ", assumed for " + gpu_.name;
  return fmt::format(
      "analytic: corrected roofline of {} datasheet ({}), {:.0f}% bandwidth ({:.0f}% pointwise), "
      "{:.0f}% FLOP/s, {:.1f} us/layer + {:.1f} us/pass ({})",
      gpu_.name, model_.name, 100 * c.bandwidth_fraction, 100 * c.pointwise_bandwidth_fraction,
      100 * c.flops_fraction, 1e6 * c.layer_overhead_s, 1e6 * c.pass_overhead_s, fitted);
}

}  // namespace metronome
