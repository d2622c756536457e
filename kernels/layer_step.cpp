#include "kernels/layer_step.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>

#include "kernels/append_kv.h"
#include "kernels/block_table.h"
#include "kernels/layer_gemms.h"
#include "kernels/paged_attention.h"

namespace metronome::kernels {

struct LayerStep::Impl {
  ModelShape m;
  BatchComposition batch;
  LayerStepOptions opt;
  cublasHandle_t cublas = nullptr;
  std::vector<void*> allocations;
  // Weights (one set for all layers).
  void *w_qkv = nullptr, *w_o = nullptr, *w_gate_up = nullptr, *w_down = nullptr,
       *w_router = nullptr;
  // Activations.
  void *x = nullptr, *qkv = nullptr, *attn = nullptr, *o = nullptr, *gate_up = nullptr,
       *act = nullptr, *logits = nullptr;
  // KV pools and batch arrays.
  std::vector<void*> k_pools, v_pools;
  int32_t num_blocks = 0;
  int32_t *q_start = nullptr, *seq_lens = nullptr, *tables = nullptr;
  FrameBatch fb;
  int32_t total_q = 0;
  void* workspace = nullptr;
  size_t workspace_bytes = 0;
  std::vector<int32_t> expert_tokens;  // tokens routed to each active expert
  int64_t bytes = 0;

  void* alloc(int64_t n_bytes) {
    void* p = nullptr;
    CUDA_CHECK(cudaMalloc(&p, static_cast<size_t>(std::max<int64_t>(n_bytes, 16))));
    allocations.push_back(p);
    bytes += n_bytes;
    return p;
  }
  void* alloc_random(int64_t elems, float amplitude, uint64_t salt) {
    void* p = alloc(elems * 2);
    STATUS_CHECK(fill_uniform(opt.dtype, p, elems, amplitude, opt.seed * 1000003 + salt, nullptr));
    return p;
  }
  ~Impl() {
    for (void* p : allocations) cudaFree(p);
    if (cublas) cublasDestroy(cublas);
  }

  PagedAttentionParams attention_params(int32_t layer) const {
    PagedAttentionParams p;
    p.dtype = opt.dtype;
    const int32_t pool = layer % opt.kv_pools;
    p.kv = {k_pools[pool], v_pools[pool], num_blocks, opt.block_size, m.kv_heads, m.head_dim};
    p.batch = fb;
    p.total_q = total_q;
    p.window = batch.window;
    p.q_heads = m.q_heads;
    p.scale = 1.f / std::sqrt(static_cast<float>(m.head_dim));
    p.q = qkv;
    p.q_row_stride = int64_t{m.q_heads + 2 * m.kv_heads} * m.head_dim;
    p.out = attn;
    p.workspace = workspace;
    p.workspace_bytes = workspace_bytes;
    return p;
  }

  Status attention(cudaStream_t stream, int32_t layer) {
    const int32_t pool = layer % opt.kv_pools;
    AppendKvParams ap;
    ap.dtype = opt.dtype;
    ap.kv = {k_pools[pool], v_pools[pool], num_blocks, opt.block_size, m.kv_heads, m.head_dim};
    ap.batch = fb;
    const int64_t q_cols = int64_t{m.q_heads} * m.head_dim;
    ap.k_new = static_cast<const char*>(qkv) + q_cols * 2;
    ap.v_new = static_cast<const char*>(qkv) + (q_cols + int64_t{m.kv_heads} * m.head_dim) * 2;
    ap.new_row_stride = int64_t{m.q_heads + 2 * m.kv_heads} * m.head_dim;
    if (Status st = append_kv(ap, stream); !st.ok()) return st;
    return paged_attention(attention_params(layer), stream);
  }
};

LayerStep::LayerStep(const ModelShape& model, BatchComposition batch, LayerStepOptions options)
    : impl_(std::make_unique<Impl>()) {
  Impl& d = *impl_;
  d.m = model;
  d.batch = std::move(batch);
  d.opt = options;
  const auto& b = d.batch;
  if (b.q_lens.size() != b.ctx_lens.size() || b.q_lens.empty()) {
    throw std::invalid_argument(
        "LayerStep: q_lens and ctx_lens must be non-empty and equal in size");
  }
  if (options.layers < 1 || options.kv_pools < 1 || options.block_size < 1) {
    throw std::invalid_argument("LayerStep: layers, kv_pools and block_size must be >= 1");
  }
  if (model.q_heads % model.kv_heads != 0) throw std::invalid_argument("LayerStep: GQA ratio");
  d.opt.kv_pools = std::min(options.kv_pools, options.layers);

  // Block tables from the engine's bookkeeping: history first (windowed release after it), then
  // this step's tokens.
  std::vector<SessionBlocks> sessions;
  int64_t need = 0;
  for (size_t s = 0; s < b.q_lens.size(); ++s) {
    if (b.q_lens[s] < 1 || b.ctx_lens[s] < 0) throw std::invalid_argument("LayerStep: lengths");
    need += kv::step_blocks(b.ctx_lens[s], b.q_lens[s], b.window, options.block_size);
  }
  // History goes in chunks with a release after each, as frames would; the chunk's blocks are the
  // only slack the pool needs, since a finished session's extras return before the next one.
  constexpr int64_t kChunk = 1024;
  need += kv::ceil_div(kChunk, options.block_size) + 4;
  BlockPool pool(static_cast<int32_t>(need));
  std::vector<int32_t> q_start{0}, seq_lens;
  int32_t max_blocks = 1;
  std::vector<const SessionBlocks*> ptrs;
  sessions.reserve(b.q_lens.size());
  for (size_t s = 0; s < b.q_lens.size(); ++s) {
    sessions.emplace_back(b.window, options.block_size);
    SessionBlocks& sb = sessions.back();
    for (int64_t done = 0; done < b.ctx_lens[s]; done += kChunk) {
      if (!sb.append(pool, std::min<int64_t>(kChunk, b.ctx_lens[s] - done))) {
        throw std::logic_error("LayerStep: pool sizing");
      }
      sb.release_outside_window(pool);
    }
    if (!sb.append(pool, b.q_lens[s])) throw std::logic_error("LayerStep: pool sizing");
    q_start.push_back(q_start.back() + b.q_lens[s]);
    seq_lens.push_back(static_cast<int32_t>(sb.tokens()));
    max_blocks = std::max(max_blocks, static_cast<int32_t>(sb.table().size()));
  }
  for (const auto& sb : sessions) ptrs.push_back(&sb);
  const std::vector<int32_t> tables = dense_block_tables(ptrs, max_blocks);
  d.total_q = q_start.back();
  d.num_blocks = pool.num_blocks();
  total_q_ = d.total_q;

  const int64_t T = d.total_q, H = model.hidden, hd = model.head_dim;
  const int64_t qkv_cols = int64_t{model.q_heads + 2 * model.kv_heads} * hd;
  const int64_t f = model.ffn;
  const float wa = 1.f / std::sqrt(static_cast<float>(H));  // keeps activations O(1)
  CUBLAS_CHECK(cublasCreate(&d.cublas));
  d.w_qkv = d.alloc_random(qkv_cols * H, wa, 1);
  d.w_o = d.alloc_random(H * model.q_heads * hd, wa, 2);
  const int64_t experts = model.experts > 0 ? model.experts : 1;
  d.w_gate_up = d.alloc_random(experts * 2 * f * H, wa, 3);
  d.w_down = d.alloc_random(experts * H * f, 1.f / std::sqrt(static_cast<float>(f)), 4);
  if (model.experts > 0) d.w_router = d.alloc_random(int64_t{model.experts} * H, wa, 5);
  d.x = d.alloc_random(T * H, 1.f, 6);
  d.qkv = d.alloc(T * qkv_cols * 2);
  d.attn = d.alloc(T * model.q_heads * hd * 2);
  d.o = d.alloc(T * H * 2);
  // Dense: [T, 2f]; MoE: the largest expert batch is ceil(T * top_k / active) <= T.
  d.gate_up = d.alloc(T * 2 * f * 2);
  d.act = d.alloc(T * f * 2);
  if (model.experts > 0) d.logits = d.alloc(T * model.experts * 2);
  const int64_t pool_elems = int64_t{d.num_blocks} * options.block_size * model.kv_heads * hd;
  for (int32_t i = 0; i < d.opt.kv_pools; ++i) {
    d.k_pools.push_back(d.alloc_random(pool_elems, 1.f, 100 + 2 * i));
    d.v_pools.push_back(d.alloc_random(pool_elems, 1.f, 101 + 2 * i));
  }
  d.q_start = static_cast<int32_t*>(d.alloc(static_cast<int64_t>(q_start.size()) * 4));
  d.seq_lens = static_cast<int32_t*>(d.alloc(static_cast<int64_t>(seq_lens.size()) * 4));
  d.tables = static_cast<int32_t*>(d.alloc(static_cast<int64_t>(tables.size()) * 4));
  CUDA_CHECK(cudaMemcpy(d.q_start, q_start.data(), q_start.size() * 4, cudaMemcpyHostToDevice));
  CUDA_CHECK(cudaMemcpy(d.seq_lens, seq_lens.data(), seq_lens.size() * 4, cudaMemcpyHostToDevice));
  CUDA_CHECK(cudaMemcpy(d.tables, tables.data(), tables.size() * 4, cudaMemcpyHostToDevice));
  d.fb.num_sessions = static_cast<int32_t>(seq_lens.size());
  d.fb.q_start = d.q_start;
  d.fb.seq_lens = d.seq_lens;
  d.fb.block_tables = d.tables;
  d.fb.max_blocks = max_blocks;
  d.fb.max_q_len = *std::max_element(b.q_lens.begin(), b.q_lens.end());
  d.fb.max_seq_len = *std::max_element(seq_lens.begin(), seq_lens.end());
  d.workspace_bytes = paged_attention_workspace_bytes(d.attention_params(0));
  if (d.workspace_bytes > 0) d.workspace = d.alloc(static_cast<int64_t>(d.workspace_bytes));

  if (model.experts > 0) {
    const int64_t assignments = T * model.top_k;
    const int64_t active = std::min<int64_t>(model.experts, assignments);
    for (int64_t e = 0; e < active; ++e) {
      d.expert_tokens.push_back(
          static_cast<int32_t>(assignments / active + (e < assignments % active)));
    }
  }
  for (size_t s = 0; s < seq_lens.size(); ++s) {
    int64_t keys = 0;  // distinct keys the frame's queries see
    for (int64_t k = 0; k < seq_lens[s]; ++k) {
      for (int64_t q = seq_lens[s] - b.q_lens[s]; q < seq_lens[s]; ++q) {
        if (kv::key_visible(q, k, b.window)) {
          ++keys;
          break;
        }
      }
    }
    attention_kv_bytes_ += keys * 2 * model.kv_heads * hd * 2;
  }
  CUDA_CHECK(cudaDeviceSynchronize());
  device_bytes_ = d.bytes;
}

LayerStep::~LayerStep() = default;

Status LayerStep::run_attention(cudaStream_t stream, int32_t layer) {
  return impl_->attention(stream, layer);
}

Status LayerStep::run(cudaStream_t stream) {
  Impl& d = *impl_;
  const ModelShape& m = d.m;
  const int32_t T = d.total_q;
  const int32_t qkv_cols = (m.q_heads + 2 * m.kv_heads) * m.head_dim;
  const Dtype dt = d.opt.dtype;
  for (int32_t layer = 0; layer < d.opt.layers; ++layer) {
    if (Status st = linear(d.cublas, {dt, d.x, d.w_qkv, d.qkv, T, qkv_cols, m.hidden}, stream);
        !st.ok())
      return st;
    if (Status st = d.attention(stream, layer); !st.ok()) return st;
    if (Status st =
            linear(d.cublas, {dt, d.attn, d.w_o, d.o, T, m.hidden, m.q_heads * m.head_dim}, stream);
        !st.ok())
      return st;
    if (m.experts == 0) {
      if (Status st =
              linear(d.cublas, {dt, d.o, d.w_gate_up, d.gate_up, T, 2 * m.ffn, m.hidden}, stream);
          !st.ok())
        return st;
      if (Status st = silu_mul(dt, d.gate_up, d.act, T, m.ffn, stream); !st.ok()) return st;
      if (Status st = linear(d.cublas, {dt, d.act, d.w_down, d.x, T, m.hidden, m.ffn}, stream);
          !st.ok())
        return st;
    } else {
      if (Status st =
              linear(d.cublas, {dt, d.o, d.w_router, d.logits, T, m.experts, m.hidden}, stream);
          !st.ok())
        return st;
      const int64_t gu_elems = int64_t{2} * m.ffn * m.hidden, d_elems = int64_t{m.hidden} * m.ffn;
      for (size_t e = 0; e < d.expert_tokens.size(); ++e) {
        const int32_t c = d.expert_tokens[e];
        const void* wgu =
            static_cast<const char*>(d.w_gate_up) + static_cast<int64_t>(e) * gu_elems * 2;
        const void* wd = static_cast<const char*>(d.w_down) + static_cast<int64_t>(e) * d_elems * 2;
        if (Status st = linear(d.cublas, {dt, d.o, wgu, d.gate_up, c, 2 * m.ffn, m.hidden}, stream);
            !st.ok())
          return st;
        if (Status st = silu_mul(dt, d.gate_up, d.act, c, m.ffn, stream); !st.ok()) return st;
        // Expert outputs land in x in turn (no weighted sum): same bytes and FLOPs as the real
        // thing.
        if (Status st = linear(d.cublas, {dt, d.act, wd, d.x, c, m.hidden, m.ffn}, stream);
            !st.ok())
          return st;
      }
    }
  }
  return Status::Ok();
}

}  // namespace metronome::kernels
