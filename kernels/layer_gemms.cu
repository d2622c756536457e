// Dense decoder-layer pieces: cuBLAS linear layers, SwiGLU, random fill.
//
// linear: y[m, n] = sum_k x[m, k] w[n, k]. dtypes: bf16 or f16 in and out, fp32 accumulation
// (CUBLAS_COMPUTE_32F). cuBLAS is column-major; a row-major [r, c] matrix is a column-major [c, r]
// one, so with X = x^T [k, m], W = w^T [k, n] and Y = y^T [n, m] (all column-major, no copies):
//     Y = W^T X   ->   gemm(op(A) = T on w (lda k), op(B) = N on x (ldb k), C = y (ldc n), n, m, k)
// silu_mul: out[i, j] = g / (1 + e^-g) * u with g = gate_up[i, j], u = gate_up[i, f + j]; fp32
// math.
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include "kernels/layer_gemms.h"

namespace metronome::kernels {
namespace {

template <typename T>
__device__ __forceinline__ float to_f(T x);
template <>
__device__ __forceinline__ float to_f(__nv_bfloat16 x) {
  return __bfloat162float(x);
}
template <>
__device__ __forceinline__ float to_f(__half x) {
  return __half2float(x);
}
template <typename T>
__device__ __forceinline__ T from_f(float x);
template <>
__device__ __forceinline__ __nv_bfloat16 from_f(float x) {
  return __float2bfloat16_rn(x);
}
template <>
__device__ __forceinline__ __half from_f(float x) {
  return __float2half_rn(x);
}

template <typename T>
__global__ void silu_mul_kernel(const T* __restrict__ gate_up, T* __restrict__ out, int32_t m,
                                int32_t f) {
  const int64_t n = int64_t{m} * f;
  for (int64_t idx = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; idx < n;
       idx += int64_t{gridDim.x} * blockDim.x) {
    const int64_t i = idx / f, j = idx % f;
    const float g = to_f(gate_up[i * 2 * f + j]);
    const float u = to_f(gate_up[i * 2 * f + f + j]);
    out[idx] = from_f<T>(g / (1.f + __expf(-g)) * u);
  }
}

// splitmix64: a counter-based generator, so any element is reproducible on its own.
__device__ __forceinline__ uint64_t mix(uint64_t z) {
  z += 0x9e3779b97f4a7c15ull;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

template <typename T>
__global__ void fill_uniform_kernel(T* x, int64_t n, float amplitude, uint64_t seed) {
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < n;
       i += int64_t{gridDim.x} * blockDim.x) {
    const float u =
        static_cast<float>(mix(seed ^ mix(static_cast<uint64_t>(i))) >> 40) * (2.f / 16777216.f) -
        1.f;  // 24 random bits -> [-1, 1)
    x[i] = from_f<T>(amplitude * u);
  }
}

unsigned grid_for(int64_t n) {
  const int64_t blocks = (n + 255) / 256;
  return static_cast<unsigned>(blocks < 65536 ? (blocks > 0 ? blocks : 1) : 65536);
}

}  // namespace

Status linear(cublasHandle_t handle, const LinearParams& p, cudaStream_t stream) {
  if (!handle || !p.x || !p.w || !p.y) return Status::Invalid("linear: null pointer or handle");
  if (p.m < 0 || p.n < 1 || p.k < 1) return Status::Invalid("linear: bad shape");
  if (p.m == 0) return Status::Ok();
  const cudaDataType_t t = p.dtype == Dtype::kBF16 ? CUDA_R_16BF : CUDA_R_16F;
  const float alpha = 1.f, beta = 0.f;
  if (cublasSetStream(handle, stream) != CUBLAS_STATUS_SUCCESS) return {"linear: cublasSetStream"};
  // Row-major y = x w^T as column-major y^T = (w^T)^T x^T; see the banner.
  const cublasStatus_t st =
      cublasGemmEx(handle, CUBLAS_OP_T, CUBLAS_OP_N, p.n, p.m, p.k, &alpha, p.w, t, p.k, p.x, t,
                   p.k, &beta, p.y, t, p.n, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT);
  if (st != CUBLAS_STATUS_SUCCESS) return {std::string("linear: ") + cublasGetStatusString(st)};
  return Status::Ok();
}

Status silu_mul(Dtype dtype, const void* gate_up, void* out, int32_t m, int32_t f,
                cudaStream_t stream) {
  if (!gate_up || !out || m < 0 || f < 1) return Status::Invalid("silu_mul: bad arguments");
  if (m == 0) return Status::Ok();
  const unsigned grid = grid_for(int64_t{m} * f);
  if (dtype == Dtype::kBF16) {
    silu_mul_kernel<<<grid, 256, 0, stream>>>(static_cast<const __nv_bfloat16*>(gate_up),
                                              static_cast<__nv_bfloat16*>(out), m, f);
  } else {
    silu_mul_kernel<<<grid, 256, 0, stream>>>(static_cast<const __half*>(gate_up),
                                              static_cast<__half*>(out), m, f);
  }
  return cuda_status(cudaGetLastError(), "silu_mul launch");
}

Status fill_uniform(Dtype dtype, void* x, int64_t n, float amplitude, uint64_t seed,
                    cudaStream_t stream) {
  if (!x || n < 0) return Status::Invalid("fill_uniform: bad arguments");
  if (n == 0) return Status::Ok();
  if (dtype == Dtype::kBF16) {
    fill_uniform_kernel<<<grid_for(n), 256, 0, stream>>>(static_cast<__nv_bfloat16*>(x), n,
                                                         amplitude, seed);
  } else {
    fill_uniform_kernel<<<grid_for(n), 256, 0, stream>>>(static_cast<__half*>(x), n, amplitude,
                                                         seed);
  }
  return cuda_status(cudaGetLastError(), "fill_uniform launch");
}

}  // namespace metronome::kernels
