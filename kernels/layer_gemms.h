// The dense parts of a decoder layer on the GPU: row-major linear layers through cuBLAS (bf16/f16
// in, fp32 accumulation), the SwiGLU activation, and a random fill for weights and activations.
#pragma once

#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <cstdint>

#include "kernels/cuda_check.h"
#include "kernels/dtype.h"

namespace metronome::kernels {

// y = x w^T, PyTorch's Linear without bias.
struct LinearParams {
  Dtype dtype = Dtype::kBF16;
  const void* x = nullptr;  // [m, k] row-major
  const void* w = nullptr;  // [n, k] row-major (out features, in features)
  void* y = nullptr;        // [m, n] row-major
  int32_t m = 0, n = 0, k = 0;
};
// The handle's stream is set to `stream` for the call.
Status linear(cublasHandle_t handle, const LinearParams& p, cudaStream_t stream);

// out[i, j] = silu(gate_up[i, j]) * gate_up[i, f + j]; gate_up [m, 2f], out [m, f].
Status silu_mul(Dtype dtype, const void* gate_up, void* out, int32_t m, int32_t f,
                cudaStream_t stream);

// x[i] = amplitude * u_i, u_i uniform in [-1, 1) from a hash of (seed, i): reproducible, no state.
Status fill_uniform(Dtype dtype, void* x, int64_t n, float amplitude, uint64_t seed,
                    cudaStream_t stream);

}  // namespace metronome::kernels
