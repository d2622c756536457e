#include "sim/cost/shape_aware_op_time.h"

#include <algorithm>
#include <string>

#include "base/config_error.h"

namespace metronome {

ShapeAwareTerms coefficients(const ShapeAwareCorrection& c) {
  return {c.gemm_memory,  c.gemm_compute, c.gemm_overlap, c.gemm_kernel_s,     c.pointwise[0],
          c.pointwise[1], c.pointwise[2], c.pointwise[3], c.pointwise_kernel_s};
}

int pointwise_kind(std::string_view name) {
  if (name == "input_layernorm" || name == "post_attention_layernorm") return 0;
  if (name == "attn_rope") return 1;
  if (name == "mlp_act") return 2;
  if (name == "add" || name == "emb") return 3;
  throw ConfigError(std::string(name) + ": not a pointwise op the shape-aware roofline prices");
}

ShapeAwareTerms gemm_like_terms(double m, double c) {
  ShapeAwareTerms x{};
  (m >= c ? x[0] : x[1]) = std::max(m, c);
  x[2] = std::min(m, c);
  return x;
}

ShapeAwareTerms op_terms(const TokenOp& op, double tokens, const GpuConfig& gpu) {
  const double m = op.bytes(tokens) / gpu.memory_bandwidth_bytes_per_s;
  if (op.gemm()) {
    ShapeAwareTerms x = gemm_like_terms(m, op.flops(tokens) / gpu.bf16_flops);
    x[3] = 1;
    return x;
  }
  ShapeAwareTerms x{};
  x[4 + static_cast<size_t>(pointwise_kind(op.name))] = m;
  x[8] = 1;
  return x;
}

double shape_aware_seconds(const ShapeAwareCorrection& c, const ShapeAwareTerms& terms) {
  const ShapeAwareTerms a = coefficients(c);
  double t = 0;
  for (size_t i = 0; i < terms.size(); ++i) t += a[i] * terms[i];
  return t;
}

}  // namespace metronome
