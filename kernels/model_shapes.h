// Decoder-layer shapes of the backbones whose KV a session pins (public model cards; see
// shared/BRIEF.md). Only shapes: weights in the kernels' harness are random.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string_view>
#include <vector>

namespace metronome::kernels {

struct ModelShape {
  std::string_view name;
  int32_t layers;
  int32_t hidden;
  int32_t q_heads;
  int32_t kv_heads;
  int32_t head_dim;
  int32_t ffn;          // dense FFN width, or one expert's width for MoE
  int32_t experts = 0;  // 0: dense MLP
  int32_t top_k = 0;    // experts each token is routed to
};

inline constexpr ModelShape kModelShapes[] = {
    {"qwen2.5-omni-7b", 28, 3584, 28, 4, 128, 18944},
    // Moshi gates its FFN: 2/3 of 4.125 x hidden.
    {"moshi-helium-7b", 32, 4096, 32, 32, 128, 11264},
    {"minicpm-o-4.5", 36, 4096, 32, 8, 128, 12288},
    {"qwen3-omni-30b-a3b", 48, 2048, 32, 4, 128, 768, 128, 8},
};

// Balanced, deterministic MoE routing for a pass of total_q tokens: token t's j-th expert is
// (t * top_k + j) mod experts, so active expert e gets this many rows (the kernels' harness and the
// CPU step run each active expert's MLP on its first rows). Empty for a dense model.
inline std::vector<int32_t> expert_rows(const ModelShape& m, int64_t total_q) {
  std::vector<int32_t> rows;
  if (m.experts <= 0) return rows;
  const int64_t assignments = total_q * m.top_k;
  const int64_t active = assignments < m.experts ? assignments : m.experts;
  for (int64_t e = 0; e < active; ++e) {
    rows.push_back(static_cast<int32_t>(assignments / active + (e < assignments % active)));
  }
  return rows;
}

inline std::optional<ModelShape> find_model_shape(std::string_view name) {
  for (const auto& m : kModelShapes) {
    if (m.name == name) return m;
  }
  return std::nullopt;
}

}  // namespace metronome::kernels
