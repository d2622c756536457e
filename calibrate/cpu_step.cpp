#include "calibrate/cpu_step.h"

#include <algorithm>
#include <cmath>
#include <random>
#include <stdexcept>
#include <utility>

#include "kernels/block_table.h"
#include "kernels/reference/layer_ref.h"
#include "kernels/reference/paged_attention_ref.h"

namespace metronome::calibrate {

namespace ref = kernels::reference;

struct CpuStep::Impl {
  kernels::ModelShape m;
  kv::Window window;
  int32_t block_size = 16;
  int32_t total_q = 0;
  int32_t max_blocks = 1;
  std::vector<ref::HostKvCache> caches;  // one per layer
  std::vector<int32_t> q_start, seq_lens, tables;
  kernels::FrameBatch fb;
  // Weights (one set for all layers): PyTorch layout [out, in].
  std::vector<float> w_qkv, w_o, w_gate_up, w_down, w_router;
  // Activations.
  // x is the layer input and stays fixed: feeding y back would shrink the activations by the
  // weights' gain every call until they reach denormals, which x86 computes slowly, and the time
  // of a step would depend on how often it had run.
  std::vector<float> x, qkv, q, k_new, v_new, attn, o, gate_up, act, logits, y;
  std::vector<int32_t> expert_tokens;

  int32_t qkv_cols() const { return (m.q_heads + 2 * m.kv_heads) * m.head_dim; }

  static void fill(std::vector<float>& v, size_t n, float amplitude, std::mt19937_64& rng) {
    std::uniform_real_distribution<float> u(-amplitude, amplitude);
    v.resize(n);
    for (auto& e : v) e = u(rng);
  }

  void split_qkv() {
    const int32_t qc = m.q_heads * m.head_dim, kc = m.kv_heads * m.head_dim, cols = qkv_cols();
    for (int32_t t = 0; t < total_q; ++t) {
      const float* row = qkv.data() + static_cast<size_t>(t) * cols;
      std::copy(row, row + qc, q.begin() + static_cast<ptrdiff_t>(t) * qc);
      std::copy(row + qc, row + qc + kc, k_new.begin() + static_cast<ptrdiff_t>(t) * kc);
      std::copy(row + qc + kc, row + qc + 2 * kc, v_new.begin() + static_cast<ptrdiff_t>(t) * kc);
    }
  }

  void attention(int32_t layer) {
    auto& cache = caches[static_cast<size_t>(layer)];
    ref::append_kv_ref(cache.view(), fb, k_new, v_new);
    ref::paged_attention_ref(std::as_const(cache).view(), fb, window,
                             {m.q_heads, 1.f / std::sqrt(static_cast<float>(m.head_dim))}, q, attn);
  }

  void mlp() {
    const int32_t h = m.hidden;
    if (m.experts == 0) {
      ref::linear_ref(o, w_gate_up, total_q, 2 * m.ffn, h, gate_up);
      ref::silu_mul_ref(gate_up, total_q, m.ffn, act);
      ref::linear_ref(act, w_down, total_q, h, m.ffn, y);
      return;
    }
    ref::linear_ref(o, w_router, total_q, m.experts, h, logits);
    for (int32_t c : expert_tokens) {
      if (c == 0) continue;
      ref::linear_ref(o, w_gate_up, c, 2 * m.ffn, h, gate_up);
      ref::silu_mul_ref(gate_up, c, m.ffn, act);
      ref::linear_ref(act, w_down, c, h, m.ffn, y);
    }
  }

  void gemms_before_attention() { ref::linear_ref(x, w_qkv, total_q, qkv_cols(), m.hidden, qkv); }
  void gemms_after_attention() {
    ref::linear_ref(attn, w_o, total_q, m.hidden, m.q_heads * m.head_dim, o);
    mlp();
  }
};

CpuStep::CpuStep(const kernels::ModelShape& model, const GridPoint& p, uint64_t seed)
    : impl_(std::make_unique<Impl>()) {
  auto& d = *impl_;
  d.m = model;
  d.window = kv::Window{p.window, p.sinks};
  if (p.sessions < 1 || p.q_len < 1 || p.ctx < 0) {
    throw std::invalid_argument("CpuStep: need sessions >= 1, q_len >= 1, ctx >= 0");
  }
  if (model.q_heads % model.kv_heads != 0)
    throw std::invalid_argument("CpuStep: q_heads % kv_heads");
  // Block tables from the same bookkeeping an engine uses: prefill the context (releasing what the
  // window drops), then append this step's frame.
  int64_t need = 0;
  for (int32_t s = 0; s < p.sessions; ++s)
    need += kv::step_blocks(p.ctx, p.q_len, d.window, d.block_size);
  need += kv::ceil_div(1024, d.block_size) + 4;  // slack: prefill chunks straddle the window edge
  kernels::BlockPool pool(static_cast<int32_t>(need));
  std::vector<kernels::SessionBlocks> sessions;
  sessions.reserve(static_cast<size_t>(p.sessions));
  d.q_start = {0};
  for (int32_t s = 0; s < p.sessions; ++s) {
    sessions.emplace_back(d.window, d.block_size);
    auto& sb = sessions.back();
    for (int64_t done = 0; done < p.ctx; done += 1024) {
      if (!sb.append(pool, std::min<int64_t>(1024, p.ctx - done)))
        throw std::logic_error("CpuStep: pool");
      sb.release_outside_window(pool);
    }
    if (!sb.append(pool, p.q_len)) throw std::logic_error("CpuStep: pool");
    d.q_start.push_back(d.q_start.back() + p.q_len);
    d.seq_lens.push_back(static_cast<int32_t>(sb.tokens()));
    d.max_blocks = std::max(d.max_blocks, static_cast<int32_t>(sb.table().size()));
  }
  std::vector<const kernels::SessionBlocks*> ptrs;
  for (auto& sb : sessions) ptrs.push_back(&sb);
  d.tables = kernels::dense_block_tables(ptrs, d.max_blocks);
  d.total_q = d.q_start.back();
  d.fb.num_sessions = p.sessions;
  d.fb.q_start = d.q_start.data();
  d.fb.seq_lens = d.seq_lens.data();
  d.fb.block_tables = d.tables.data();
  d.fb.max_blocks = d.max_blocks;
  d.fb.max_q_len = p.q_len;
  d.fb.max_seq_len = *std::max_element(d.seq_lens.begin(), d.seq_lens.end());

  std::mt19937_64 rng(seed);
  const size_t h = static_cast<size_t>(model.hidden), tq = static_cast<size_t>(d.total_q);
  const size_t qc = static_cast<size_t>(model.q_heads * model.head_dim);
  const size_t kc = static_cast<size_t>(model.kv_heads * model.head_dim);
  const size_t f = static_cast<size_t>(model.ffn);
  // Amplitudes ~ 1/sqrt(fan-in) keep activations O(1) through the layers, so no overflow.
  const auto amp = [](size_t fan_in) { return 1.f / std::sqrt(static_cast<float>(fan_in)); };
  Impl::fill(d.w_qkv, static_cast<size_t>(d.qkv_cols()) * h, amp(h), rng);
  Impl::fill(d.w_o, h * qc, amp(qc), rng);
  Impl::fill(d.w_gate_up, 2 * f * h, amp(h), rng);
  Impl::fill(d.w_down, h * f, amp(f), rng);
  if (model.experts > 0) {
    Impl::fill(d.w_router, static_cast<size_t>(model.experts) * h, amp(h), rng);
    d.expert_tokens.assign(static_cast<size_t>(model.experts), 0);
    for (int32_t t = 0; t < d.total_q; ++t) {
      for (int32_t j = 0; j < model.top_k; ++j) {
        ++d.expert_tokens[static_cast<size_t>((int64_t{t} * model.top_k + j) % model.experts)];
      }
    }
  }
  Impl::fill(d.x, tq * h, 1.f, rng);
  d.qkv.assign(tq * static_cast<size_t>(d.qkv_cols()), 0.f);
  d.q.assign(tq * qc, 0.f);
  d.k_new.assign(tq * kc, 0.f);
  d.v_new.assign(tq * kc, 0.f);
  d.attn.assign(tq * qc, 0.f);
  d.o.assign(tq * h, 0.f);
  d.gate_up.assign(tq * 2 * f, 0.f);
  d.act.assign(tq * f, 0.f);
  d.y.assign(tq * h, 0.f);
  d.logits.assign(tq * static_cast<size_t>(std::max(model.experts, 1)), 0.f);
  for (int32_t l = 0; l < model.layers; ++l) {
    d.caches.emplace_back(pool.num_blocks(), d.block_size, model.kv_heads, model.head_dim);
    auto& c = d.caches.back();
    Impl::fill(c.k(), c.k().size(), 1.f, rng);
    Impl::fill(c.v(), c.v().size(), 1.f, rng);
  }
  d.gemms_before_attention();
  d.split_qkv();
}

CpuStep::~CpuStep() = default;

int32_t CpuStep::total_q() const { return impl_->total_q; }

void CpuStep::run() {
  auto& d = *impl_;
  for (int32_t l = 0; l < d.m.layers; ++l) {
    d.gemms_before_attention();
    d.split_qkv();
    d.attention(l);
    d.gemms_after_attention();
  }
}

void CpuStep::run_attention(int32_t layer) { impl_->attention(layer); }

void CpuStep::run_gemms() {
  impl_->gemms_before_attention();
  impl_->gemms_after_attention();
}

const std::vector<float>& CpuStep::output() const { return impl_->y; }

bool CpuStep::outputs_finite() const {
  const auto finite = [](const std::vector<float>& v) {
    return std::all_of(v.begin(), v.end(), [](float e) { return std::isfinite(e); });
  };
  return finite(impl_->y) && finite(impl_->attn) && finite(impl_->o);
}

}  // namespace metronome::calibrate
