// The token-level operators of one decoder pass, each with the bytes it moves and the FLOPs it
// does, named as Vidur's profiler names them (data/profiling/compute/<gpu>/<model>/mlp.csv) so that
// a measured time and its analytic cost meet by name. Used by the corrected roofline
// (corrected_roofline_cost_model.h), by the fit of its fractions to measurements
// (calibrate/roofline_correction_fit.h) and by a calibration scaled to another layer shape.
//
// Per op: bytes = bytes_fixed (weights, read once per pass) + bytes_per_token x tokens (activations
// in and out), flops = flops_per_token x tokens. Attention over cached KV is not here: it depends
// on the context, not only on the tokens, and the cost models add it from the PassShape.
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

#include "sim/config/model.h"

namespace metronome {

// What the token-level ops depend on (one GPU's slice: a tensor-parallel row divides heads, KV
// heads and FFN by the degree).
struct LayerShape {
  int64_t hidden = 0;
  int64_t heads = 0;
  int64_t kv_heads = 0;
  int64_t head_dim = 0;
  int64_t ffn = 0;  // MLP intermediate size (0: no dense MLP, a pure-MoE layer)
  int64_t vocab = 0;
  bool gated_mlp = true;
  double weight_bytes_per_element = 2;
  double activation_bytes_per_element = 2;
};

LayerShape layer_shape(const ModelConfig& m);

struct TokenOp {
  std::string_view name;
  bool per_pass = false;         // once per pass (embedding, output head), not once per layer
  bool in_vidur_profile = true;  // Vidur's mlp.csv times it (the output head it does not)
  double bytes_fixed = 0;
  double bytes_per_token = 0;
  double flops_per_token = 0;

  double bytes(double tokens) const { return bytes_fixed + bytes_per_token * tokens; }
  // A GEMM streams weights; a pointwise op (norm, rope, activation, add, gather) only activations.
  bool gemm() const { return flops_per_token > 0; }
  double flops(double tokens) const { return flops_per_token * tokens; }
};

// emb, input_layernorm, attn_pre_proj (QKV), attn_rope, attn_post_proj (O),
// post_attention_layernorm, mlp_up_proj (gate+up when gated), mlp_act, mlp_down_proj, add, lm_head.
std::vector<TokenOp> token_ops(const LayerShape& s);

// Totals over the per-layer ops (per_pass false) of one layer, or over the per-pass ops.
struct OpTotals {
  double gemm_bytes_fixed = 0, gemm_bytes_per_token = 0;            // GEMM ops
  double pointwise_bytes_fixed = 0, pointwise_bytes_per_token = 0;  // the others
  double flops_per_token = 0;
  int kernels = 0;
};
OpTotals op_totals(const std::vector<TokenOp>& ops, bool per_pass, bool vidur_only = false);

}  // namespace metronome
