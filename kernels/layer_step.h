// LayerStep: one engine step of L decoder layers on the GPU for a given batch composition, with
// random weights of a named model's shapes. It is what calibrate/ times to get per-step cost.
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

#include "kernels/cuda_check.h"
#include "kernels/dtype.h"
#include "core/kv_window.h"
#include "kernels/model_shapes.h"

namespace metronome::kernels {

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
