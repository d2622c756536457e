// DecoderStep: one forward pass of L decoder layers on the CPU references, with random weights of a
// model's shapes over a host KV pool of num_blocks blocks per layer. The one CPU step: calibration
// times it (calibrate/cpu_step.h) and the CPU replay backend runs it (replay/cpu_step_backend.cpp),
// so the simulator's calibrated CPU cost describes exactly the code the real-time engine runs.
//
// Per layer (kernels::LayerStep's dataflow and omissions):
//   qkv = x Wqkv^T -> append K, V into the layer's paged cache -> paged attention -> o = attn Wo^T
//   dense: gate_up = o Wgu^T, act = silu(gate) * up, y = act Wd^T
//   MoE:   router logits = o Wr^T, then each active expert's MLP on its first rows (expert_rows)
// One weight set serves all layers; each layer has its own KV cache, as an engine's does.
#pragma once

#include <cstdint>
#include <random>
#include <vector>

#include "core/kv_window.h"
#include "kernels/model_shapes.h"
#include "kernels/paged_kv.h"
#include "kernels/reference/paged_attention_ref.h"

namespace metronome::kernels::reference {

class DecoderStep {
 public:
  // Draws the weights from rng (Wqkv, Wo, Wgu, Wd, then Wr for MoE: callers that draw more from
  // the same rng afterwards stay reproducible). Throws std::invalid_argument on bad shapes.
  DecoderStep(const ModelShape& model, int32_t num_blocks, int32_t block_size,
              std::mt19937_64& rng);

  // Activations for a pass of up to total_q tokens (grows only).
  void reserve(int32_t total_q);
  // The layer input x, [total_q, hidden] (at least; reserve sizes it).
  std::vector<float>& input() { return x_; }
  const std::vector<float>& input() const { return x_; }

  // The pieces of a layer, for timing them apart; layer() runs them in order.
  void project_qkv(int32_t total_q);  // qkv = x Wqkv^T
  void split_qkv(int32_t total_q);    // q, k_new, v_new from qkv
  void append(int32_t layer, const FrameBatch& fb);
  void attend(int32_t layer, const FrameBatch& fb, kv::Window window);
  void project_out(int32_t total_q);  // o = attn Wo^T
  void mlp(int32_t total_q);          // y from o

  // One layer; attend = false projects and appends K/V only (a write-only pass).
  void layer(int32_t layer, const FrameBatch& fb, kv::Window window, bool attend = true);

  HostKvCache& cache(int32_t layer) { return caches_[static_cast<size_t>(layer)]; }
  const HostKvCache& cache(int32_t layer) const { return caches_[static_cast<size_t>(layer)]; }
  const std::vector<float>& attention_out() const { return attn_; }
  const std::vector<float>& projected() const { return o_; }
  const std::vector<float>& output() const { return y_; }  // the MLP's [total_q, hidden]

 private:
  int32_t qkv_cols() const { return (m_.q_heads + 2 * m_.kv_heads) * m_.head_dim; }

  ModelShape m_;
  std::vector<HostKvCache> caches_;  // one per layer
  // PyTorch layout [out, in].
  std::vector<float> w_qkv_, w_o_, w_gate_up_, w_down_, w_router_;
  std::vector<float> x_, qkv_, q_, k_new_, v_new_, attn_, o_, gate_up_, act_, y_, logits_;
  std::vector<int32_t> expert_rows_;  // for expert_rows_q_ tokens
  int32_t expert_rows_q_ = -1;
};

// Fills v with n values uniform in [-amplitude, amplitude] from rng.
void fill_uniform(std::vector<float>& v, size_t n, float amplitude, std::mt19937_64& rng);

}  // namespace metronome::kernels::reference
