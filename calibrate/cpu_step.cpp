#include "calibrate/cpu_step.h"

#include <algorithm>
#include <cmath>
#include <optional>
#include <random>
#include <stdexcept>

#include "kernels/block_table.h"
#include "kernels/reference/decoder_step.h"

namespace metronome::calibrate {

namespace ref = kernels::reference;

struct CpuStep::Impl {
  kernels::ModelShape m;
  kv::Window window;
  int32_t block_size = 16;
  int32_t total_q = 0;
  int32_t max_blocks = 1;
  std::vector<int32_t> q_start, seq_lens, tables;
  kernels::FrameBatch fb;
  // The input stays fixed: feeding y back would shrink the activations by the weights' gain every
  // call until they reach denormals, which x86 computes slowly, and the time of a step would
  // depend on how often it had run.
  std::optional<ref::DecoderStep> step;
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
  d.step.emplace(model, pool.num_blocks(), d.block_size, rng);
  d.step->reserve(d.total_q);
  ref::fill_uniform(d.step->input(), static_cast<size_t>(d.total_q) * model.hidden, 1.f, rng);
  for (int32_t l = 0; l < model.layers; ++l) {
    auto& c = d.step->cache(l);
    ref::fill_uniform(c.k(), c.k().size(), 1.f, rng);
    ref::fill_uniform(c.v(), c.v().size(), 1.f, rng);
  }
  d.step->project_qkv(d.total_q);
  d.step->split_qkv(d.total_q);
}

CpuStep::~CpuStep() = default;

int32_t CpuStep::total_q() const { return impl_->total_q; }

void CpuStep::run() {
  auto& d = *impl_;
  for (int32_t l = 0; l < d.m.layers; ++l) d.step->layer(l, d.fb, d.window);
}

void CpuStep::run_attention(int32_t layer) {
  auto& d = *impl_;
  d.step->append(layer, d.fb);
  d.step->attend(layer, d.fb, d.window);
}

void CpuStep::run_gemms() {
  auto& d = *impl_;
  d.step->project_qkv(d.total_q);
  d.step->project_out(d.total_q);
  d.step->mlp(d.total_q);
}

const std::vector<float>& CpuStep::output() const { return impl_->step->output(); }

bool CpuStep::outputs_finite() const {
  const auto finite = [](const std::vector<float>& v) {
    return std::all_of(v.begin(), v.end(), [](float e) { return std::isfinite(e); });
  };
  const auto& s = *impl_->step;
  return finite(s.output()) && finite(s.attention_out()) && finite(s.projected());
}

}  // namespace metronome::calibrate
