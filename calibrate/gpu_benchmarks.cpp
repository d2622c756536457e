#include "calibrate/gpu_benchmarks.h"

#include <benchmark/benchmark.h>
#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <cmath>
#include <memory>
#include <stdexcept>
#include <vector>

#include "kernels/cuda_check.h"
#include "kernels/layer_gemms.h"
#include "kernels/layer_step.h"

namespace metronome::calibrate {
namespace {

namespace mk = metronome::kernels;

// CUDA events on the benchmark's own stream: the time of the work enqueued between them, not of the
// host's launch loop.
class EventTimer {
 public:
  EventTimer() {
    CUDA_CHECK(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking));
    CUDA_CHECK(cudaEventCreate(&a_));
    CUDA_CHECK(cudaEventCreate(&b_));
  }
  ~EventTimer() {
    cudaEventDestroy(a_);
    cudaEventDestroy(b_);
    cudaStreamDestroy(stream_);
  }
  cudaStream_t stream() const { return stream_; }
  template <typename F>
  double seconds(F&& f) {
    CUDA_CHECK(cudaEventRecord(a_, stream_));
    f();
    CUDA_CHECK(cudaEventRecord(b_, stream_));
    CUDA_CHECK(cudaEventSynchronize(b_));
    float ms = 0;
    CUDA_CHECK(cudaEventElapsedTime(&ms, a_, b_));
    return ms * 1e-3;
  }

 private:
  cudaStream_t stream_{};
  cudaEvent_t a_{}, b_{};
};

// The dense linears of one layer (qkv, o, and the MLP or, for MoE, the router and the active
// experts' MLPs on their token counts) through cuBLAS, bf16 in, fp32 accumulation. Weights rotate
// over enough copies to exceed L2 for the small shapes; real layers are far larger than L2 anyway.
class LayerGemms {
 public:
  LayerGemms(const mk::ModelShape& m, int32_t tokens) : m_(m), t_(tokens) {
    CUBLAS_CHECK(cublasCreate(&handle_));
    const int64_t h = m.hidden, qc = int64_t{m.q_heads} * m.head_dim,
                  qkv = int64_t{m.q_heads + 2 * m.kv_heads} * m.head_dim, f = m.ffn;
    x_ = alloc(t_ * h, 1);
    qkv_ = alloc(t_ * qkv, 0);
    attn_ = alloc(t_ * qc, 2);
    o_ = alloc(t_ * h, 0);
    gu_ = alloc(t_ * 2 * f, 0);
    act_ = alloc(t_ * f, 0);
    logits_ = alloc(t_ * std::max(m.experts, 1), 0);
    w_qkv_ = alloc(qkv * h, 3);
    w_o_ = alloc(h * qc, 4);
    w_gu_ = alloc(2 * f * h, 5);
    w_d_ = alloc(h * f, 6);
    w_r_ = alloc(int64_t{std::max(m.experts, 1)} * h, 7);
    if (m.experts > 0) {
      expert_tokens_.assign(static_cast<size_t>(m.experts), 0);
      for (int64_t t = 0; t < t_; ++t) {
        for (int32_t j = 0; j < m.top_k; ++j)
          ++expert_tokens_[static_cast<size_t>((t * m.top_k + j) % m.experts)];
      }
    }
  }
  ~LayerGemms() {
    for (void* p : allocs_) cudaFree(p);
    if (handle_) cublasDestroy(handle_);
  }
  mk::Status run(cudaStream_t s) {
    const int32_t h = m_.hidden, qc = m_.q_heads * m_.head_dim,
                  qkv = (m_.q_heads + 2 * m_.kv_heads) * m_.head_dim, f = m_.ffn;
    auto lin = [&](const void* x, const void* w, void* y, int32_t rows, int32_t n, int32_t k) {
      mk::LinearParams p;
      p.x = x;
      p.w = w;
      p.y = y;
      p.m = rows;
      p.n = n;
      p.k = k;
      return mk::linear(handle_, p, s);
    };
    mk::Status st = lin(x_, w_qkv_, qkv_, t_, qkv, h);
    if (st.ok()) st = lin(attn_, w_o_, o_, t_, h, qc);
    if (!st.ok()) return st;
    if (m_.experts == 0) {
      if (st.ok()) st = lin(o_, w_gu_, gu_, t_, 2 * f, h);
      if (st.ok()) st = mk::silu_mul(mk::Dtype::kBF16, gu_, act_, t_, f, s);
      if (st.ok()) st = lin(act_, w_d_, x_, t_, h, f);
      return st;
    }
    st = lin(o_, w_r_, logits_, t_, m_.experts, h);
    for (int32_t c : expert_tokens_) {
      if (!st.ok() || c == 0) continue;
      st = lin(o_, w_gu_, gu_, c, 2 * f, h);
      if (st.ok()) st = mk::silu_mul(mk::Dtype::kBF16, gu_, act_, c, f, s);
      if (st.ok()) st = lin(act_, w_d_, x_, c, h, f);
    }
    return st;
  }

 private:
  void* alloc(int64_t elems, uint64_t seed) {
    void* p = nullptr;
    CUDA_CHECK(cudaMalloc(&p, static_cast<size_t>(std::max<int64_t>(elems, 8) * 2)));
    allocs_.push_back(p);
    STATUS_CHECK(mk::fill_uniform(mk::Dtype::kBF16, p, elems, 0.05f, seed, nullptr));
    return p;
  }
  mk::ModelShape m_;
  int32_t t_;
  cublasHandle_t handle_ = nullptr;
  std::vector<void*> allocs_;
  void *x_, *qkv_, *attn_, *o_, *gu_, *act_, *logits_, *w_qkv_, *w_o_, *w_gu_, *w_d_, *w_r_;
  std::vector<int32_t> expert_tokens_;
};

void gpu_benchmark(benchmark::State& state, mk::ModelShape m, GridPoint p, int warmup) {
  try {
    EventTimer timer;
    std::unique_ptr<mk::LayerStep> step;
    std::unique_ptr<LayerGemms> gemms;
    if (p.kind == BenchKind::kGemm) {
      gemms = std::make_unique<LayerGemms>(m, p.sessions * p.q_len);
    } else {
      mk::BatchComposition b;
      b.q_lens.assign(static_cast<size_t>(p.sessions), p.q_len);
      b.ctx_lens.assign(static_cast<size_t>(p.sessions), p.ctx);
      b.window = kv::Window{p.window, p.sinks};
      mk::LayerStepOptions o;
      o.layers = p.kind == BenchKind::kStep ? m.layers : 1;
      step = std::make_unique<mk::LayerStep>(m, std::move(b), o);
    }
    CUDA_CHECK(cudaDeviceSynchronize());
    mk::Status st;
    const auto once = [&] {
      if (!st.ok()) return;
      switch (p.kind) {
        case BenchKind::kStep:
          st = step->run(timer.stream());
          break;
        case BenchKind::kAttention:
          st = step->run_attention(timer.stream());
          break;
        case BenchKind::kGemm:
          st = gemms->run(timer.stream());
          break;
      }
    };
    for (int i = 0; i < warmup; ++i) timer.seconds(once);
    for (auto _ : state) state.SetIterationTime(timer.seconds(once));
    // Correctness is the kernels' tests' job; here a failed launch or an asynchronous fault
    // invalidates the timing.
    CUDA_CHECK(cudaStreamSynchronize(timer.stream()));
    CUDA_CHECK(cudaGetLastError());
    if (!st.ok()) {
      state.SkipWithError(st.error.c_str());
      return;
    }
  } catch (const std::exception& e) {
    cudaGetLastError();  // clear a sticky allocation error so the next point can run
    state.SkipWithError(e.what());
    return;
  }
  state.counters["sessions"] = p.sessions;
  state.counters["q_len"] = p.q_len;
  state.counters["ctx"] = p.ctx;
  state.counters["window"] = static_cast<double>(p.window);
  state.counters["sinks"] = static_cast<double>(p.sinks);
  state.counters["layers"] = p.kind == BenchKind::kStep ? m.layers : 1;
}

std::string version_text(int v) {
  return std::to_string(v / 1000) + "." + std::to_string((v % 1000) / 10);
}

}  // namespace

bool register_gpu_benchmarks(const kernels::ModelShape& m, const Grid& g, GpuInfo& info,
                             std::string& why) {
  int n = 0;
  const cudaError_t e = cudaGetDeviceCount(&n);
  if (e != cudaSuccess || n == 0) {
    why = e != cudaSuccess ? std::string("cudaGetDeviceCount: ") + cudaGetErrorString(e)
                           : "no CUDA device";
    return false;
  }
  cudaDeviceProp prop{};
  if (cudaGetDeviceProperties(&prop, 0) != cudaSuccess) {
    why = "cudaGetDeviceProperties failed";
    return false;
  }
  info.name = prop.name;
  int v = 0;
  if (cudaDriverGetVersion(&v) == cudaSuccess) info.driver = version_text(v);
  if (cudaRuntimeGetVersion(&v) == cudaSuccess) info.runtime = version_text(v);
  const std::string prefix = std::string(m.name) + "/gpu/";
  for (const auto& p : g.points) {
    benchmark::RegisterBenchmark((prefix + point_name(p)).c_str(), gpu_benchmark, m, p, g.warmup)
        ->UseManualTime()
        ->Unit(benchmark::kMillisecond)
        ->MinTime(g.min_time_s)
        ->Repetitions(g.repetitions);
  }
  return true;
}

}  // namespace metronome::calibrate
