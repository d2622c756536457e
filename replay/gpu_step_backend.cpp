// The GPU backend: kernels::decoder_layer (LayerStep's layer: append_kv, paged_attention, cuBLAS
// linears, SwiGLU) over a device KV pool of the engine's size, bf16, one pool per layer. Block
// tables come from the engine each pass (copied to the device on the backend's stream); the pass
// ends with a stream synchronisation so the engine's wall clock sees the real end of the step.
// Without CUDA in the build, or without a device, make_gpu_backend refuses with the reason.
#include <stdexcept>
#include <string>

#include "replay/step_backend.h"

#if defined(METRONOME_HAVE_CUDA)
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <vector>

#include "kernels/cuda_check.h"
#include "kernels/layer_gemms.h"
#include "kernels/layer_step.h"
#endif

namespace metronome::replay {

#if defined(METRONOME_HAVE_CUDA)
namespace {

using namespace metronome::kernels;

class GpuBackend final : public StepBackend {
 public:
  explicit GpuBackend(const BackendConfig& c) : c_(c), m_(c.model) {
    int count = 0;
    const cudaError_t e = cudaGetDeviceCount(&count);
    if (e != cudaSuccess || count == 0) {
      throw BackendUnavailable(std::string("gpu backend: no CUDA device (") +
                               (e != cudaSuccess ? cudaGetErrorString(e) : "0 devices") +
                               "); use --backend cpu on this machine");
    }
    cudaDeviceProp prop{};
    CUDA_CHECK(cudaGetDeviceProperties(&prop, 0));
    device_ = std::string(prop.name) + " (CUDA kernels, bf16)";
    if (m_.q_heads % m_.kv_heads != 0)
      throw std::invalid_argument("gpu backend: q_heads % kv_heads");
    CUDA_CHECK(cudaStreamCreate(&stream_));
    CUBLAS_CHECK(cublasCreate(&cublas_));
    const int64_t H = m_.hidden, hd = m_.head_dim, f = m_.ffn;
    const int64_t experts = std::max(m_.experts, 1);
    const float wa = 1.f / std::sqrt(static_cast<float>(H));
    buf_.w_qkv = alloc_random(qkv_cols() * H, wa, 1);
    buf_.w_o = alloc_random(H * m_.q_heads * hd, wa, 2);
    buf_.w_gate_up = alloc_random(experts * 2 * f * H, wa, 3);
    buf_.w_down = alloc_random(experts * H * f, 1.f / std::sqrt(static_cast<float>(f)), 4);
    if (m_.experts > 0) buf_.w_router = alloc_random(int64_t{m_.experts} * H, wa, 5);
    embed_ = alloc_random(kEmbedRows * H, 1.f, 6);
    const int64_t pool_elems = int64_t{c.num_blocks} * c.block_size * m_.kv_heads * hd;
    for (int32_t l = 0; l < m_.layers; ++l) {
      k_pools_.push_back(alloc(pool_elems * 2));
      v_pools_.push_back(alloc(pool_elems * 2));
      kv_bytes_ += 2 * pool_elems * 2;
    }
    error_flag_ = static_cast<int32_t*>(alloc(4));
    CUDA_CHECK(cudaMemset(error_flag_, 0, 4));
    CUDA_CHECK(cudaDeviceSynchronize());
  }

  ~GpuBackend() override {
    for (void* p : allocations_) cudaFree(p);
    if (cublas_) cublasDestroy(cublas_);
    if (stream_) cudaStreamDestroy(stream_);
  }

  void run(const PassBatch& p) override {
    const int32_t T = p.total_q();
    if (p.sessions() == 0 || T == 0) return;
    reserve(p);
    CUDA_CHECK(cudaMemcpyAsync(q_start_, p.q_start.data(), p.q_start.size() * 4,
                               cudaMemcpyHostToDevice, stream_));
    CUDA_CHECK(cudaMemcpyAsync(seq_lens_, p.seq_lens.data(), p.seq_lens.size() * 4,
                               cudaMemcpyHostToDevice, stream_));
    CUDA_CHECK(cudaMemcpyAsync(tables_, p.block_tables.data(), p.block_tables.size() * 4,
                               cudaMemcpyHostToDevice, stream_));
    FrameBatch fb;
    fb.num_sessions = p.sessions();
    fb.q_start = q_start_;
    fb.seq_lens = seq_lens_;
    fb.block_tables = tables_;
    fb.max_blocks = p.max_blocks;
    for (int32_t s = 0; s < p.sessions(); ++s) {
      fb.max_q_len = std::max(fb.max_q_len, p.q_start[s + 1] - p.q_start[s]);
    }
    fb.max_seq_len = *std::max_element(p.seq_lens.begin(), p.seq_lens.end());
    // Layer input: embedding rows (position-independent here: the kernels' cost does not depend on
    // the values). x = embed[0:T].
    const Dtype dt = Dtype::kBF16;
    CUDA_CHECK(cudaMemcpyAsync(
        buf_.x, embed_, static_cast<size_t>(std::min<int64_t>(T, kEmbedRows)) * m_.hidden * 2,
        cudaMemcpyDeviceToDevice, stream_));
    for (int32_t l = 0; l < m_.layers; ++l) {
      LayerPass pass;
      pass.kv = {k_pools_[l], v_pools_[l], c_.num_blocks, c_.block_size, m_.kv_heads, m_.head_dim};
      pass.batch = fb;
      pass.total_q = T;
      pass.window = c_.window;
      pass.attend = p.attend;
      pass.error_flag = error_flag_;
      const size_t ws = paged_attention_workspace_bytes(layer_attention_params(m_, dt, buf_, pass));
      if (ws > buf_.workspace_bytes) {
        CUDA_CHECK(cudaStreamSynchronize(stream_));
        buf_.workspace = alloc(static_cast<int64_t>(ws));
        buf_.workspace_bytes = ws;
      }
      STATUS_CHECK(decoder_layer(cublas_, m_, dt, buf_, pass, stream_));
    }
    CUDA_CHECK(cudaMemcpyAsync(&flag_host_, error_flag_, 4, cudaMemcpyDeviceToHost, stream_));
    CUDA_CHECK(cudaStreamSynchronize(stream_));
    if (flag_host_ != 0) {
      throw std::logic_error(
          "gpu backend: a kernel touched a released block (engine bookkeeping bug)");
    }
  }

  std::string name() const override { return "gpu"; }
  std::string device() const override { return device_; }
  int64_t kv_pool_bytes() const override { return kv_bytes_; }
  bool output_finite() const override { return true; }  // checked by the kernels' own tests

 private:
  static constexpr int64_t kEmbedRows = 4096;

  int32_t qkv_cols() const { return (m_.q_heads + 2 * m_.kv_heads) * m_.head_dim; }

  void* alloc(int64_t n_bytes) {
    void* p = nullptr;
    CUDA_CHECK(cudaMalloc(&p, static_cast<size_t>(std::max<int64_t>(n_bytes, 16))));
    allocations_.push_back(p);
    return p;
  }
  void* alloc_random(int64_t elems, float amplitude, uint64_t salt) {
    void* p = alloc(elems * 2);
    STATUS_CHECK(
        fill_uniform(Dtype::kBF16, p, elems, amplitude, c_.seed * 1000003 + salt, nullptr));
    return p;
  }

  // Grows activations and batch arrays to this pass's size (reallocation only on growth).
  void reserve(const PassBatch& p) {
    const int64_t T = p.total_q();
    if (T > capacity_q_) {
      CUDA_CHECK(cudaStreamSynchronize(stream_));
      capacity_q_ = std::max<int64_t>(T, 2 * capacity_q_);
      const int64_t C = capacity_q_, H = m_.hidden, f = m_.ffn;
      buf_.x = alloc(C * H * 2);
      buf_.qkv = alloc(C * qkv_cols() * 2);
      buf_.attn = alloc(C * m_.q_heads * m_.head_dim * 2);
      buf_.o = alloc(C * H * 2);
      buf_.gate_up = alloc(C * 2 * f * 2);
      buf_.act = alloc(C * f * 2);
      if (m_.experts > 0) buf_.logits = alloc(C * m_.experts * 2);
      if (T > kEmbedRows)
        throw std::invalid_argument("gpu backend: more than 4096 tokens in a pass");
    }
    const int64_t S = p.sessions(), tables = static_cast<int64_t>(p.block_tables.size());
    if (S > capacity_s_ || tables > capacity_tables_) {
      CUDA_CHECK(cudaStreamSynchronize(stream_));
      capacity_s_ = std::max<int64_t>(S, 2 * capacity_s_);
      capacity_tables_ = std::max<int64_t>(tables, 2 * capacity_tables_);
      q_start_ = static_cast<int32_t*>(alloc((capacity_s_ + 1) * 4));
      seq_lens_ = static_cast<int32_t*>(alloc(capacity_s_ * 4));
      tables_ = static_cast<int32_t*>(alloc(capacity_tables_ * 4));
    }
  }

  BackendConfig c_;
  ModelShape m_;
  std::string device_;
  cudaStream_t stream_ = nullptr;
  cublasHandle_t cublas_ = nullptr;
  std::vector<void*> allocations_;
  LayerBuffers buf_;  // weights, activations (grown by reserve) and the attention workspace
  void* embed_ = nullptr;
  std::vector<void*> k_pools_,
      v_pools_;  // [layers] each [num_blocks, block_size, kv_heads, head_dim]
  int32_t *q_start_ = nullptr, *seq_lens_ = nullptr, *tables_ = nullptr, *error_flag_ = nullptr;
  int32_t flag_host_ = 0;
  int64_t capacity_q_ = 0, capacity_s_ = 0, capacity_tables_ = 0;
  int64_t kv_bytes_ = 0;
};

}  // namespace

std::unique_ptr<StepBackend> make_gpu_backend(const BackendConfig& c) {
  return std::make_unique<GpuBackend>(c);
}
bool gpu_backend_compiled() { return true; }

#elif defined(METRONOME_CPU_ONLY_EXECUTABLE)

std::unique_ptr<StepBackend> make_gpu_backend(const BackendConfig&) {
  throw BackendUnavailable(
      "gpu backend: `metronome` runs the CPU backend only (it does not load the CUDA libraries); "
      "run the same command with metronome-gpu (built beside it where nvcc exists) on a machine "
      "with a GPU, or use --backend cpu");
}
bool gpu_backend_compiled() { return false; }

#else

std::unique_ptr<StepBackend> make_gpu_backend(const BackendConfig&) {
  throw BackendUnavailable(
      "gpu backend: this build has no CUDA (configured without nvcc or with METRONOME_CUDA=OFF); "
      "use --backend cpu, or build with CUDA on a machine with a GPU");
}
bool gpu_backend_compiled() { return false; }

#endif

}  // namespace metronome::replay
