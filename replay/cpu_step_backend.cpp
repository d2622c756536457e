// The CPU backend: the reference kernels (double accumulation) over a host KV pool of the engine's
// size, one HostKvCache per layer. The same functions CpuStep times for the CPU calibration
// (calibrate/cpu_step.cpp), so the simulator's calibrated cost describes this code on this CPU.
#include <algorithm>
#include <cmath>
#include <random>
#include <stdexcept>
#include <string>
#include <utility>

#include "kernels/paged_kv.h"
#include "kernels/reference/layer_ref.h"
#include "kernels/reference/paged_attention_ref.h"
#include "replay/step_backend.h"

namespace metronome::replay {
namespace {

namespace ref = kernels::reference;

void fill(std::vector<float>& v, size_t n, float amplitude, std::mt19937_64& rng) {
  std::uniform_real_distribution<float> u(-amplitude, amplitude);
  v.resize(n);
  for (auto& e : v) e = u(rng);
}

class CpuBackend final : public StepBackend {
 public:
  explicit CpuBackend(const BackendConfig& c) : c_(c), m_(c.model) {
    if (m_.q_heads % m_.kv_heads != 0)
      throw std::invalid_argument("cpu backend: q_heads % kv_heads");
    if (c.num_blocks < 1) throw std::invalid_argument("cpu backend: num_blocks must be >= 1");
    std::mt19937_64 rng(c.seed);
    const size_t h = static_cast<size_t>(m_.hidden);
    const size_t qc = static_cast<size_t>(m_.q_heads * m_.head_dim);
    const size_t f = static_cast<size_t>(m_.ffn);
    const size_t experts = static_cast<size_t>(std::max(m_.experts, 1));
    // Amplitudes ~ 1/sqrt(fan-in) keep activations O(1) through the layers.
    const auto amp = [](size_t fan_in) { return 1.f / std::sqrt(static_cast<float>(fan_in)); };
    fill(w_qkv_, static_cast<size_t>(qkv_cols()) * h, amp(h), rng);
    fill(w_o_, h * qc, amp(qc), rng);
    fill(w_gate_up_, 2 * f * h, amp(h), rng);
    fill(w_down_, h * f, amp(f), rng);
    if (m_.experts > 0) fill(w_router_, experts * h, amp(h), rng);
    // Token embeddings: a fixed random table indexed by position, so a pass's input is cheap to
    // make.
    fill(embed_, kEmbedRows * h, 1.f, rng);
    for (int32_t l = 0; l < m_.layers; ++l) {
      caches_.emplace_back(c.num_blocks, c.block_size, m_.kv_heads, m_.head_dim);
    }
  }

  void run(const PassBatch& p) override {
    const int32_t tq = p.total_q();
    if (p.sessions() == 0 || tq == 0) return;
    resize(tq);
    kernels::FrameBatch fb;
    fb.num_sessions = p.sessions();
    fb.q_start = p.q_start.data();
    fb.seq_lens = p.seq_lens.data();
    fb.block_tables = p.block_tables.data();
    fb.max_blocks = p.max_blocks;
    fb.max_q_len = 0;
    for (int32_t s = 0; s < p.sessions(); ++s) fb.max_q_len = std::max(fb.max_q_len, fb.q_len(s));
    fb.max_seq_len = *std::max_element(p.seq_lens.begin(), p.seq_lens.end());

    // Layer input: the embedding row of each token's position.
    const size_t h = static_cast<size_t>(m_.hidden);
    for (int32_t s = 0; s < p.sessions(); ++s) {
      for (int32_t i = 0; i < fb.q_len(s); ++i) {
        const int64_t pos = p.seq_lens[s] - fb.q_len(s) + i;
        const float* row = embed_.data() + static_cast<size_t>(pos % kEmbedRows) * h;
        std::copy(row, row + h, x_.begin() + static_cast<ptrdiff_t>((p.q_start[s] + i) * h));
      }
    }
    const float scale = 1.f / std::sqrt(static_cast<float>(m_.head_dim));
    for (int32_t l = 0; l < m_.layers; ++l) {
      ref::linear_ref(x_, w_qkv_, tq, qkv_cols(), m_.hidden, qkv_);
      split_qkv(tq);
      auto& cache = caches_[static_cast<size_t>(l)];
      ref::append_kv_ref(cache.view(), fb, k_new_, v_new_);
      if (!p.attend) continue;
      ref::paged_attention_ref(std::as_const(cache).view(), fb, c_.window, {m_.q_heads, scale}, q_,
                               attn_);
      ref::linear_ref(attn_, w_o_, tq, m_.hidden, m_.q_heads * m_.head_dim, o_);
      mlp(tq);
      // Residual: the next layer's input (elementwise, not in the calibrated cost terms).
      for (size_t i = 0; i < static_cast<size_t>(tq) * h; ++i) x_[i] += y_[i];
    }
    last_q_ = p.attend ? tq : 0;
  }

  std::string name() const override { return "cpu"; }
  std::string device() const override { return "CPU reference kernels (host memory)"; }
  int64_t kv_pool_bytes() const override {
    int64_t b = 0;
    for (const auto& c : caches_)
      b += static_cast<int64_t>((c.k().size() + c.v().size()) * sizeof(float));
    return b;
  }
  bool output_finite() const override {
    const size_t n = static_cast<size_t>(last_q_) * static_cast<size_t>(m_.hidden);
    return std::all_of(x_.begin(), x_.begin() + static_cast<ptrdiff_t>(n),
                       [](float e) { return std::isfinite(e); });
  }

 private:
  static constexpr size_t kEmbedRows = 509;  // prime: positions do not alias block boundaries

  int32_t qkv_cols() const { return (m_.q_heads + 2 * m_.kv_heads) * m_.head_dim; }

  void resize(int32_t tq) {
    const size_t t = static_cast<size_t>(tq), h = static_cast<size_t>(m_.hidden);
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

  void split_qkv(int32_t tq) {
    const int32_t qc = m_.q_heads * m_.head_dim, kc = m_.kv_heads * m_.head_dim, cols = qkv_cols();
    for (int32_t t = 0; t < tq; ++t) {
      const float* row = qkv_.data() + static_cast<size_t>(t) * cols;
      std::copy(row, row + qc, q_.begin() + static_cast<ptrdiff_t>(t) * qc);
      std::copy(row + qc, row + qc + kc, k_new_.begin() + static_cast<ptrdiff_t>(t) * kc);
      std::copy(row + qc + kc, row + qc + 2 * kc, v_new_.begin() + static_cast<ptrdiff_t>(t) * kc);
    }
  }

  // Dense SwiGLU, or MoE with CpuStep's balanced routing (token t's j-th expert is
  // (t * top_k + j) mod experts; each active expert runs its MLP on its count of rows).
  void mlp(int32_t tq) {
    const int32_t h = m_.hidden;
    if (m_.experts == 0) {
      ref::linear_ref(o_, w_gate_up_, tq, 2 * m_.ffn, h, gate_up_);
      ref::silu_mul_ref(gate_up_, tq, m_.ffn, act_);
      ref::linear_ref(act_, w_down_, tq, h, m_.ffn, y_);
      return;
    }
    ref::linear_ref(o_, w_router_, tq, m_.experts, h, logits_);
    std::vector<int32_t> counts(static_cast<size_t>(m_.experts), 0);
    for (int32_t t = 0; t < tq; ++t) {
      for (int32_t j = 0; j < m_.top_k; ++j) {
        ++counts[static_cast<size_t>((int64_t{t} * m_.top_k + j) % m_.experts)];
      }
    }
    for (int32_t c : counts) {
      if (c == 0) continue;
      ref::linear_ref(o_, w_gate_up_, c, 2 * m_.ffn, h, gate_up_);
      ref::silu_mul_ref(gate_up_, c, m_.ffn, act_);
      ref::linear_ref(act_, w_down_, c, h, m_.ffn, y_);
    }
  }

  BackendConfig c_;
  kernels::ModelShape m_;
  std::vector<ref::HostKvCache> caches_;  // one per layer, num_blocks blocks each
  std::vector<float> w_qkv_, w_o_, w_gate_up_, w_down_, w_router_, embed_;
  std::vector<float> x_, qkv_, q_, k_new_, v_new_, attn_, o_, gate_up_, act_, y_, logits_;
  int32_t last_q_ = 0;
};

}  // namespace

std::unique_ptr<StepBackend> make_cpu_backend(const BackendConfig& c) {
  return std::make_unique<CpuBackend>(c);
}

std::unique_ptr<StepBackend> make_backend(const std::string& name, const BackendConfig& c) {
  if (name == "cpu") return make_cpu_backend(c);
  if (name == "gpu") return make_gpu_backend(c);
  throw std::invalid_argument("unknown backend \"" + name + "\" (expected cpu or gpu)");
}

}  // namespace metronome::replay
