// A model's shapes: what sizes its KV cache and what the roofline reads and computes per token.
#pragma once

#include <cstdint>
#include <string>

namespace metronome {

struct ModelConfig {
  std::string name;
  int64_t layers = 0;
  int64_t hidden_size = 0;
  int64_t attention_heads = 0;
  int64_t kv_heads = 0;
  int64_t head_dim = 0;
  int64_t ffn_size = 0;    // dense gated-MLP intermediate size; 0 for a pure-MoE layer
  int64_t vocab_size = 0;  // output head read once per pass
  int64_t kv_bytes_per_element = 2;
  double weight_bytes = 0;  // all resident weights (backbone, encoders, heads), bytes
  double weight_bytes_per_param = 2;
  int64_t experts = 0;         // MoE experts per layer; 0 for a dense model
  int64_t experts_active = 0;  // experts each token is routed to
  int64_t expert_ffn_size = 0;

  bool moe() const { return experts > 0; }

  // 2 (K and V) x layers x kv_heads x head_dim x bytes per element.
  int64_t kv_bytes_per_token() const {
    return 2 * layers * kv_heads * head_dim * kv_bytes_per_element;
  }
  double attention_params_per_layer() const {
    return static_cast<double>(hidden_size) * static_cast<double>(head_dim) *
           static_cast<double>(2 * attention_heads + 2 * kv_heads);
  }
  double expert_params() const {
    return 3.0 * static_cast<double>(hidden_size) * static_cast<double>(expert_ffn_size);
  }
  // Parameters every token touches: attention, dense MLP, router, output head.
  double dense_params() const {
    const double per_layer =
        attention_params_per_layer() +
        3.0 * static_cast<double>(hidden_size) * static_cast<double>(ffn_size) +
        static_cast<double>(hidden_size) * static_cast<double>(experts);
    return static_cast<double>(layers) * per_layer +
           static_cast<double>(vocab_size) * static_cast<double>(hidden_size);
  }
  double active_params_per_token() const {
    return dense_params() + static_cast<double>(layers * experts_active) * expert_params();
  }
};

}  // namespace metronome
