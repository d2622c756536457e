#include "sim/cost/layer_ops.h"

namespace metronome {

LayerShape layer_shape(const ModelConfig& m) {
  LayerShape s;
  s.hidden = m.hidden_size;
  s.heads = m.attention_heads;
  s.kv_heads = m.kv_heads;
  s.head_dim = m.head_dim;
  s.ffn = m.ffn_size;
  s.vocab = m.vocab_size;
  s.gated_mlp = true;  // every shipped model has a gated (SwiGLU) MLP
  s.weight_bytes_per_element = m.weight_bytes_per_param;
  s.activation_bytes_per_element = 2;
  return s;
}

std::vector<TokenOp> token_ops(const LayerShape& s) {
  const double h = static_cast<double>(s.hidden);
  const double q = static_cast<double>(s.heads * s.head_dim);
  const double qkv = static_cast<double>((s.heads + 2 * s.kv_heads) * s.head_dim);
  const double rope = static_cast<double>((s.heads + s.kv_heads) * s.head_dim);
  const double f = static_cast<double>(s.ffn);
  const double up = s.gated_mlp ? 2 * f : f;  // gate and up projections in one GEMM
  const double v = static_cast<double>(s.vocab);
  const double w = s.weight_bytes_per_element, a = s.activation_bytes_per_element;
  // A GEMM [tokens, k] x [k, n]: weights k n once, activations k + n per token, 2 k n FLOPs per
  // token. A norm reads and writes the hidden state and reads its weight; rope rewrites q and k;
  // the activation reads gate and up and writes one; the residual add reads two and writes one.
  auto gemm = [&](std::string_view name, double k, double n, bool per_pass = false,
                  bool in_vidur = true) {
    return TokenOp{name, per_pass, in_vidur, w * k * n, a * (k + n), 2 * k * n};
  };
  std::vector<TokenOp> ops;
  ops.push_back({"emb", true, true, 0, 2 * a * h, 0});
  ops.push_back({"input_layernorm", false, true, w * h, 2 * a * h, 0});
  ops.push_back(gemm("attn_pre_proj", h, qkv));
  ops.push_back({"attn_rope", false, true, 0, 2 * a * rope, 0});
  ops.push_back(gemm("attn_post_proj", q, h));
  ops.push_back({"post_attention_layernorm", false, true, w * h, 2 * a * h, 0});
  if (s.ffn > 0) {
    ops.push_back(gemm("mlp_up_proj", h, up));
    ops.push_back({"mlp_act", false, true, 0, a * (up + f), 0});
    ops.push_back(gemm("mlp_down_proj", f, h));
  }
  ops.push_back({"add", false, true, 0, 3 * a * h, 0});
  ops.push_back(gemm("lm_head", h, v, true, false));
  return ops;
}

OpTotals op_totals(const std::vector<TokenOp>& ops, bool per_pass, bool vidur_only) {
  OpTotals t;
  for (const auto& o : ops) {
    if (o.per_pass != per_pass || (vidur_only && !o.in_vidur_profile)) continue;
    (o.gemm() ? t.gemm_bytes_fixed : t.pointwise_bytes_fixed) += o.bytes_fixed;
    (o.gemm() ? t.gemm_bytes_per_token : t.pointwise_bytes_per_token) += o.bytes_per_token;
    t.flops_per_token += o.flops_per_token;
    ++t.kernels;
  }
  return t;
}

}  // namespace metronome
