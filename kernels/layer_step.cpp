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
  LayerBuffers buf;  // weights (one set for all layers) and activations
  // KV pools and batch arrays.
  std::vector<void*> k_pools, v_pools;
  int32_t num_blocks = 0;
  int32_t *q_start = nullptr, *seq_lens = nullptr, *tables = nullptr;
  FrameBatch fb;
  int32_t total_q = 0;
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

  LayerPass pass(int32_t layer) const {
    const int32_t pool = layer % opt.kv_pools;
    LayerPass p;
    p.kv = {k_pools[pool], v_pools[pool], num_blocks, opt.block_size, m.kv_heads, m.head_dim};
    p.batch = fb;
    p.total_q = total_q;
    p.window = batch.window;
    return p;
  }
};

PagedAttentionParams layer_attention_params(const ModelShape& m, Dtype dtype, const LayerBuffers& b,
                                            const LayerPass& pass) {
  PagedAttentionParams p;
  p.dtype = dtype;
  p.kv = {pass.kv.k,          pass.kv.v,        pass.kv.num_blocks,
          pass.kv.block_size, pass.kv.kv_heads, pass.kv.head_dim};
  p.batch = pass.batch;
  p.total_q = pass.total_q;
  p.window = pass.window;
  p.q_heads = m.q_heads;
  p.scale = 1.f / std::sqrt(static_cast<float>(m.head_dim));
  p.q = b.qkv;
  p.q_row_stride = int64_t{m.q_heads + 2 * m.kv_heads} * m.head_dim;
  p.out = b.attn;
  p.workspace = b.workspace;
  p.workspace_bytes = b.workspace_bytes;
  p.error_flag = pass.error_flag;
  return p;
}

Status layer_attention(const ModelShape& m, Dtype dtype, const LayerBuffers& b,
                       const LayerPass& pass, cudaStream_t stream) {
  AppendKvParams ap;
  ap.dtype = dtype;
  ap.kv = pass.kv;
  ap.batch = pass.batch;
  const int64_t q_cols = int64_t{m.q_heads} * m.head_dim;
  ap.k_new = static_cast<const char*>(b.qkv) + q_cols * 2;
  ap.v_new = static_cast<const char*>(b.qkv) + (q_cols + int64_t{m.kv_heads} * m.head_dim) * 2;
  ap.new_row_stride = int64_t{m.q_heads + 2 * m.kv_heads} * m.head_dim;
  ap.error_flag = pass.error_flag;
  if (Status st = append_kv(ap, stream); !st.ok()) return st;
  if (!pass.attend) return Status::Ok();
  return paged_attention(layer_attention_params(m, dtype, b, pass), stream);
}

Status decoder_layer(cublasHandle_t cublas, const ModelShape& m, Dtype dt, const LayerBuffers& b,
                     const LayerPass& pass, cudaStream_t stream) {
  const int32_t T = pass.total_q;
  const int32_t qkv_cols = (m.q_heads + 2 * m.kv_heads) * m.head_dim;
  if (Status st = linear(cublas, {dt, b.x, b.w_qkv, b.qkv, T, qkv_cols, m.hidden}, stream);
      !st.ok())
    return st;
  if (Status st = layer_attention(m, dt, b, pass, stream); !st.ok()) return st;
  if (!pass.attend) return Status::Ok();
  if (Status st =
          linear(cublas, {dt, b.attn, b.w_o, b.o, T, m.hidden, m.q_heads * m.head_dim}, stream);
      !st.ok())
    return st;
  if (m.experts == 0) {
    if (Status st =
            linear(cublas, {dt, b.o, b.w_gate_up, b.gate_up, T, 2 * m.ffn, m.hidden}, stream);
        !st.ok())
      return st;
    if (Status st = silu_mul(dt, b.gate_up, b.act, T, m.ffn, stream); !st.ok()) return st;
    return linear(cublas, {dt, b.act, b.w_down, b.x, T, m.hidden, m.ffn}, stream);
  }
  if (Status st = linear(cublas, {dt, b.o, b.w_router, b.logits, T, m.experts, m.hidden}, stream);
      !st.ok())
    return st;
  const int64_t gu_elems = int64_t{2} * m.ffn * m.hidden, d_elems = int64_t{m.hidden} * m.ffn;
  const std::vector<int32_t> rows = expert_rows(m, T);
  for (size_t e = 0; e < rows.size(); ++e) {
    const int32_t c = rows[e];
    const void* wgu =
        static_cast<const char*>(b.w_gate_up) + static_cast<int64_t>(e) * gu_elems * 2;
    const void* wd = static_cast<const char*>(b.w_down) + static_cast<int64_t>(e) * d_elems * 2;
    if (Status st = linear(cublas, {dt, b.o, wgu, b.gate_up, c, 2 * m.ffn, m.hidden}, stream);
        !st.ok())
      return st;
    if (Status st = silu_mul(dt, b.gate_up, b.act, c, m.ffn, stream); !st.ok()) return st;
    // Expert outputs land in x in turn (no weighted sum): same bytes and FLOPs as the real thing.
    if (Status st = linear(cublas, {dt, b.act, wd, b.x, c, m.hidden, m.ffn}, stream); !st.ok())
      return st;
  }
  return Status::Ok();
}

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
  LayerBuffers& buf = d.buf;
  buf.w_qkv = d.alloc_random(qkv_cols * H, wa, 1);
  buf.w_o = d.alloc_random(H * model.q_heads * hd, wa, 2);
  const int64_t experts = model.experts > 0 ? model.experts : 1;
  buf.w_gate_up = d.alloc_random(experts * 2 * f * H, wa, 3);
  buf.w_down = d.alloc_random(experts * H * f, 1.f / std::sqrt(static_cast<float>(f)), 4);
  if (model.experts > 0) buf.w_router = d.alloc_random(int64_t{model.experts} * H, wa, 5);
  buf.x = d.alloc_random(T * H, 1.f, 6);
  buf.qkv = d.alloc(T * qkv_cols * 2);
  buf.attn = d.alloc(T * model.q_heads * hd * 2);
  buf.o = d.alloc(T * H * 2);
  // Dense: [T, 2f]; MoE: the largest expert batch is ceil(T * top_k / active) <= T.
  buf.gate_up = d.alloc(T * 2 * f * 2);
  buf.act = d.alloc(T * f * 2);
  if (model.experts > 0) buf.logits = d.alloc(T * model.experts * 2);
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
  buf.workspace_bytes =
      paged_attention_workspace_bytes(layer_attention_params(model, d.opt.dtype, buf, d.pass(0)));
  if (buf.workspace_bytes > 0) buf.workspace = d.alloc(static_cast<int64_t>(buf.workspace_bytes));
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
  const Impl& d = *impl_;
  return layer_attention(d.m, d.opt.dtype, d.buf, d.pass(layer), stream);
}

Status LayerStep::run(cudaStream_t stream) {
  const Impl& d = *impl_;
  for (int32_t layer = 0; layer < d.opt.layers; ++layer) {
    if (Status st = decoder_layer(d.cublas, d.m, d.opt.dtype, d.buf, d.pass(layer), stream);
        !st.ok())
      return st;
  }
  return Status::Ok();
}

}  // namespace metronome::kernels
