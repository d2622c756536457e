// A model's shapes: what sizes its KV cache and what the roofline reads and computes per token.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

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
  // Only for counting weights when weight_bytes is not given.
  std::string attention_bias = "none";  // none | qkv (Qwen2) | all (q, k, v and o)
  bool tie_word_embeddings = false;     // the output head shares the embedding matrix
  // Where a description given by path (model=PATH.json, model=hf:PATH) came from, and what was
  // derived on import; empty for a shipped model given by name.
  // Longest context the model was trained for (max_position_embeddings); 0 when not stated.
  int64_t max_context_tokens = 0;
  std::string loaded_from;
  std::vector<std::string> notes;
  // Sub-models of a multimodal checkpoint whose weights the shapes do not count (hf_config.h).
  std::vector<std::string> weights_not_counted;

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
  // Every resident parameter of a decoder with gated MLPs and RMSNorm: embeddings (and the output
  // head unless tied), per layer attention (+ bias), dense MLP, experts and router, two norms, and
  // the final norm.
  double total_params() const {
    const double h = static_cast<double>(hidden_size);
    const double q = static_cast<double>(attention_heads * head_dim);
    const double kv = static_cast<double>(kv_heads * head_dim);
    const double bias = attention_bias == "qkv"   ? q + 2 * kv
                        : attention_bias == "all" ? q + 2 * kv + h
                                                  : 0;
    const double per_layer =
        attention_params_per_layer() + bias + 3.0 * h * static_cast<double>(ffn_size) +
        static_cast<double>(experts) * expert_params() + h * static_cast<double>(experts) + 2 * h;
    return static_cast<double>(vocab_size) * h * (tie_word_embeddings ? 1 : 2) +
           static_cast<double>(layers) * per_layer + h;
  }
  double active_params_per_token() const {
    return dense_params() + static_cast<double>(layers * experts_active) * expert_params();
  }
};

}  // namespace metronome
