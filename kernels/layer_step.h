// LayerStep: one engine step of L decoder layers on the GPU for a given batch composition, with
// random weights of a named model's shapes. It is what calibrate/ times to get per-step cost; its
// layer (decoder_layer) is also what the GPU replay backend runs, on the engine's block tables.
//
// Per layer:  qkv = x Wqkv^T  ->  append K, V (read in place from qkv) into the paged cache
//             ->  paged attention (q read in place)  ->  o = attn Wo^T
//             ->  dense: gate_up = o Wgu^T, act = silu(gate) * up, x' = act Wd^T
//                 MoE:   router logits = o Wr^T, then per active expert e with c_e tokens:
//                        gate_up_e = o[:c_e] Wgu_e^T, act, down_e = act Wd_e^T
// Left out on purpose (elementwise, a few percent of a step): RMSNorm, RoPE, residual adds, the
// gather/scatter of MoE tokens (experts read the first c_e rows). Routing is balanced and
// deterministic: token t's j-th expert is (t * top_k + j) mod experts.
//
// Memory: one set of weights serves every layer (a dense layer's weights are hundreds of MB, far
// beyond L2, so reuse across layers is not a cache effect); KV pools rotate over kv_pools distinct
// pools. The block tables are built once by the same SessionBlocks bookkeeping an engine uses, so
// run() is idempotent (each call re-appends the same frame) and can be timed repeatedly.
#pragma once

#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <cstdint>
#include <memory>
#include <vector>

#include "core/kv_window.h"
#include "kernels/cuda_check.h"
#include "kernels/dtype.h"
#include "kernels/model_shapes.h"
#include "kernels/paged_attention.h"
#include "kernels/paged_kv.h"

namespace metronome::kernels {

// The device buffers a decoder layer reads and writes: one weight set (every layer's; MoE experts'
// gate/up and down stacked) and the activations of a pass.
struct LayerBuffers {
  const void *w_qkv = nullptr, *w_o = nullptr, *w_gate_up = nullptr, *w_down = nullptr,
             *w_router = nullptr;
  void *x = nullptr, *qkv = nullptr, *attn = nullptr, *o = nullptr, *gate_up = nullptr,
       *act = nullptr, *logits = nullptr;
  void* workspace = nullptr;  // paged_attention_workspace_bytes(layer_attention_params(...))
  size_t workspace_bytes = 0;
};

// One layer's pass: the sessions of `batch` (device arrays) on the layer's KV pool.
struct LayerPass {
  PagedKv<void> kv;
  FrameBatch batch;
  int32_t total_q = 0;  // host copy of batch.q_start[num_sessions]
  kv::Window window{};
  bool attend = true;             // false: project and append K/V only (a write-only pass)
  int32_t* error_flag = nullptr;  // optional device int: set if a kernel touches a released block
};

// The attention launch of a layer's pass (its workspace size is the caller's to provide).
PagedAttentionParams layer_attention_params(const ModelShape& m, Dtype dtype, const LayerBuffers& b,
                                            const LayerPass& pass);
// Append K, V (read in place from qkv) and attend: the attention half of a layer.
Status layer_attention(const ModelShape& m, Dtype dtype, const LayerBuffers& b,
                       const LayerPass& pass, cudaStream_t stream);
// One decoder layer (the dataflow in this file's banner), enqueued on `stream`; writes x.
Status decoder_layer(cublasHandle_t cublas, const ModelShape& m, Dtype dtype, const LayerBuffers& b,
                     const LayerPass& pass, cudaStream_t stream);

struct BatchComposition {
  std::vector<int32_t> q_lens;    // [sessions] new tokens this step (1: decode)
  std::vector<int32_t> ctx_lens;  // [sessions] tokens cached before this step
  kv::Window window{};            // unbounded or windowed with sinks
};

struct LayerStepOptions {
  int32_t layers = 1;
  int32_t block_size = 16;
  int32_t kv_pools = 2;  // distinct KV pools the layers rotate over (each > L2 for real batches)
  Dtype dtype = Dtype::kBF16;
  uint64_t seed = 1;
};

class LayerStep {
 public:
  // Allocates weights, activations and KV pools on the current device and fills them with random
  // values. Throws CudaError when memory runs out, std::invalid_argument on a bad composition.
  LayerStep(const ModelShape& model, BatchComposition batch, LayerStepOptions options);
  ~LayerStep();
  LayerStep(const LayerStep&) = delete;
  LayerStep& operator=(const LayerStep&) = delete;

  // Enqueues one step (all layers) on `stream`.
  Status run(cudaStream_t stream);
  // Enqueues only the attention of one layer (append + attention), for attention-only timing.
  Status run_attention(cudaStream_t stream, int32_t layer = 0);

  int32_t total_q() const { return total_q_; }
  // Bytes of K and V one layer's attention must read (each visible key once per KV head).
  int64_t attention_kv_bytes() const { return attention_kv_bytes_; }
  // Device bytes this harness holds.
  int64_t device_bytes() const { return device_bytes_; }

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
  int32_t total_q_ = 0;
  int64_t attention_kv_bytes_ = 0;
  int64_t device_bytes_ = 0;
};

}  // namespace metronome::kernels
