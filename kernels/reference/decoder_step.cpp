#include "kernels/reference/decoder_step.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <utility>

#include "kernels/reference/layer_ref.h"

namespace metronome::kernels::reference {

void fill_uniform(std::vector<float>& v, size_t n, float amplitude, std::mt19937_64& rng) {
  std::uniform_real_distribution<float> u(-amplitude, amplitude);
  v.resize(n);
  for (auto& e : v) e = u(rng);
}

DecoderStep::DecoderStep(const ModelShape& model, int32_t num_blocks, int32_t block_size,
                         std::mt19937_64& rng)
    : m_(model) {
  if (m_.q_heads % m_.kv_heads != 0)
    throw std::invalid_argument("decoder step: q_heads % kv_heads");
  if (num_blocks < 1) throw std::invalid_argument("decoder step: num_blocks must be >= 1");
  const size_t h = static_cast<size_t>(m_.hidden);
  const size_t qc = static_cast<size_t>(m_.q_heads * m_.head_dim);
  const size_t f = static_cast<size_t>(m_.ffn);
  // Amplitudes ~ 1/sqrt(fan-in) keep activations O(1) through the layers, so no overflow.
  const auto amp = [](size_t fan_in) { return 1.f / std::sqrt(static_cast<float>(fan_in)); };
  fill_uniform(w_qkv_, static_cast<size_t>(qkv_cols()) * h, amp(h), rng);
  fill_uniform(w_o_, h * qc, amp(qc), rng);
  fill_uniform(w_gate_up_, 2 * f * h, amp(h), rng);
  fill_uniform(w_down_, h * f, amp(f), rng);
  if (m_.experts > 0) fill_uniform(w_router_, static_cast<size_t>(m_.experts) * h, amp(h), rng);
  for (int32_t l = 0; l < m_.layers; ++l) {
    caches_.emplace_back(num_blocks, block_size, m_.kv_heads, m_.head_dim);
  }
}

void DecoderStep::reserve(int32_t total_q) {
  const size_t t = static_cast<size_t>(total_q), h = static_cast<size_t>(m_.hidden);
  const size_t qc = static_cast<size_t>(m_.q_heads * m_.head_dim);
  const size_t kc = static_cast<size_t>(m_.kv_heads * m_.head_dim);
  const size_t f = static_cast<size_t>(m_.ffn);
  if (x_.size() >= t * h) return;
  x_.resize(t * h);
  qkv_.resize(t * static_cast<size_t>(qkv_cols()));
  q_.resize(t * qc);
  k_new_.resize(t * kc);
  v_new_.resize(t * kc);
  attn_.resize(t * qc);
  o_.resize(t * h);
  gate_up_.resize(t * 2 * f);
  act_.resize(t * f);
  y_.resize(t * h);
  logits_.resize(t * static_cast<size_t>(std::max(m_.experts, 1)));
}

void DecoderStep::project_qkv(int32_t total_q) {
  linear_ref(x_, w_qkv_, total_q, qkv_cols(), m_.hidden, qkv_);
}

void DecoderStep::split_qkv(int32_t total_q) {
  const int32_t qc = m_.q_heads * m_.head_dim, kc = m_.kv_heads * m_.head_dim, cols = qkv_cols();
  for (int32_t t = 0; t < total_q; ++t) {
    const float* row = qkv_.data() + static_cast<size_t>(t) * cols;
    std::copy(row, row + qc, q_.begin() + static_cast<ptrdiff_t>(t) * qc);
    std::copy(row + qc, row + qc + kc, k_new_.begin() + static_cast<ptrdiff_t>(t) * kc);
    std::copy(row + qc + kc, row + qc + 2 * kc, v_new_.begin() + static_cast<ptrdiff_t>(t) * kc);
  }
}

void DecoderStep::append(int32_t layer, const FrameBatch& fb) {
  append_kv_ref(cache(layer).view(), fb, k_new_, v_new_);
}

void DecoderStep::attend(int32_t layer, const FrameBatch& fb, kv::Window window) {
  paged_attention_ref(std::as_const(cache(layer)).view(), fb, window,
                      {m_.q_heads, 1.f / std::sqrt(static_cast<float>(m_.head_dim))}, q_, attn_);
}

void DecoderStep::project_out(int32_t total_q) {
  linear_ref(attn_, w_o_, total_q, m_.hidden, m_.q_heads * m_.head_dim, o_);
}

void DecoderStep::mlp(int32_t total_q) {
  const int32_t h = m_.hidden;
  if (m_.experts == 0) {
    linear_ref(o_, w_gate_up_, total_q, 2 * m_.ffn, h, gate_up_);
    silu_mul_ref(gate_up_, total_q, m_.ffn, act_);
    linear_ref(act_, w_down_, total_q, h, m_.ffn, y_);
    return;
  }
  linear_ref(o_, w_router_, total_q, m_.experts, h, logits_);
  if (expert_rows_q_ != total_q) {
    expert_rows_ = expert_rows(m_, total_q);
    expert_rows_q_ = total_q;
  }
  for (int32_t c : expert_rows_) {
    linear_ref(o_, w_gate_up_, c, 2 * m_.ffn, h, gate_up_);
    silu_mul_ref(gate_up_, c, m_.ffn, act_);
    linear_ref(act_, w_down_, c, h, m_.ffn, y_);
  }
}

void DecoderStep::layer(int32_t layer, const FrameBatch& fb, kv::Window window, bool attend_too) {
  const int32_t total_q = fb.total_q();
  project_qkv(total_q);
  split_qkv(total_q);
  append(layer, fb);
  if (!attend_too) return;
  attend(layer, fb, window);
  project_out(total_q);
  mlp(total_q);
}

}  // namespace metronome::kernels::reference
