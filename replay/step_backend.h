// StepBackend: the compute of the real-time engine. It owns the KV memory of a pool of num_blocks
// blocks per layer (real memory: host floats for the CPU references, device bf16 for the GPU
// kernels) and a decoder stack with random weights of the scenario model's shapes, and runs one
// forward pass for a batch of sessions whose block tables the engine (replay/realtime_engine.h)
// built from the same kernels::BlockPool / SessionBlocks bookkeeping.
//
// A pass, per layer:  qkv = x Wqkv^T -> append K, V at each session's new positions
//                     -> paged attention (kv::key_visible) -> o = attn Wo^T -> MLP (SwiGLU) -> x +=
//                     y
// A write-only pass (attend = false) projects and appends K/V only: the KV of a frame's last output
// token, which a real engine writes when it feeds that token back in.
#pragma once

#include <cstdint>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "core/kv_window.h"
#include "kernels/model_shapes.h"

namespace metronome::replay {

// One pass's sessions, in host memory. Session s brings q_len(s) = q_start[s+1] - q_start[s] new
// tokens at positions [seq_lens[s] - q_len(s), seq_lens[s]) (kernels::FrameBatch's contract).
struct PassBatch {
  std::vector<int32_t> q_start{0};    // [sessions + 1]
  std::vector<int32_t> seq_lens;      // [sessions]
  std::vector<int32_t> block_tables;  // [sessions, max_blocks] physical block or -1
  int32_t max_blocks = 0;
  bool attend = true;  // false: project and append K/V only

  int32_t sessions() const { return static_cast<int32_t>(seq_lens.size()); }
  int32_t total_q() const { return q_start.back(); }
};

struct BackendConfig {
  kernels::ModelShape model{};
  kv::Window window{};
  int32_t num_blocks = 0;  // blocks per layer's pool: the engine's kernels::BlockPool size
  int32_t block_size = 16;
  uint64_t seed = 1;
};

class StepBackend {
 public:
  virtual ~StepBackend() = default;
  // Runs one pass over all layers and returns when its results are complete (the GPU backend
  // synchronises its stream): the engine's clock reads the end of the step after this.
  virtual void run(const PassBatch& pass) = 0;
  virtual std::string name() const = 0;    // "cpu" | "gpu"
  virtual std::string device() const = 0;  // what ran it, for the report
  // Bytes allocated for the KV pools (all layers, K and V).
  virtual int64_t kv_pool_bytes() const = 0;
  // False if the last pass's output holds a NaN or infinity.
  virtual bool output_finite() const = 0;
};

// A backend that cannot run here (no CUDA in this build, or no GPU on this machine).
class BackendUnavailable : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// "cpu": the CPU references (kernels/reference). Plain C++, always available.
std::unique_ptr<StepBackend> make_cpu_backend(const BackendConfig& c);
// "gpu": the CUDA kernels. Throws BackendUnavailable with the reason when this build has no CUDA or
// the machine has no GPU.
std::unique_ptr<StepBackend> make_gpu_backend(const BackendConfig& c);
// By name; throws std::invalid_argument for an unknown one.
std::unique_ptr<StepBackend> make_backend(const std::string& name, const BackendConfig& c);
// True where this build compiled the GPU backend.
bool gpu_backend_compiled();

}  // namespace metronome::replay
