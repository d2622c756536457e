// The CPU backend: the CPU decoder step (kernels/reference/decoder_step.h) over a host KV pool of
// the engine's size, one HostKvCache per layer. The same step CpuStep times for the CPU calibration
// (calibrate/cpu_step.cpp), so the simulator's calibrated cost describes this code on this CPU.
#include <algorithm>
#include <cmath>
#include <random>
#include <stdexcept>
#include <string>

#include "kernels/paged_kv.h"
#include "kernels/reference/decoder_step.h"
#include "replay/step_backend.h"

namespace metronome::replay {
namespace {

namespace ref = kernels::reference;

class CpuBackend final : public StepBackend {
 public:
  explicit CpuBackend(const BackendConfig& c) : c_(c), rng_(c.seed), step_(make_step(c, rng_)) {
    // Token embeddings: a fixed random table indexed by position, so a pass's input is cheap to
    // make.
    ref::fill_uniform(embed_, kEmbedRows * static_cast<size_t>(c.model.hidden), 1.f, rng_);
  }

  void run(const PassBatch& p) override {
    const int32_t tq = p.total_q();
    if (p.sessions() == 0 || tq == 0) return;
    step_.reserve(tq);
    kernels::FrameBatch fb;
    fb.num_sessions = p.sessions();
    fb.q_start = p.q_start.data();
    fb.seq_lens = p.seq_lens.data();
    fb.block_tables = p.block_tables.data();
    fb.max_blocks = p.max_blocks;
    fb.max_q_len = 0;
    for (int32_t s = 0; s < p.sessions(); ++s) fb.max_q_len = std::max(fb.max_q_len, fb.q_len(s));
    fb.max_seq_len = *std::max_element(p.seq_lens.begin(), p.seq_lens.end());

    // Layer input: the embedding row of each token's position.
    const size_t h = static_cast<size_t>(c_.model.hidden);
    std::vector<float>& x = step_.input();
    for (int32_t s = 0; s < p.sessions(); ++s) {
      for (int32_t i = 0; i < fb.q_len(s); ++i) {
        const int64_t pos = p.seq_lens[s] - fb.q_len(s) + i;
        const float* row = embed_.data() + static_cast<size_t>(pos % kEmbedRows) * h;
        std::copy(row, row + h, x.begin() + static_cast<ptrdiff_t>((p.q_start[s] + i) * h));
      }
    }
    const std::vector<float>& y = step_.output();
    for (int32_t l = 0; l < c_.model.layers; ++l) {
      step_.layer(l, fb, c_.window, p.attend);
      if (!p.attend) continue;
      // Residual: the next layer's input (elementwise, not in the calibrated cost terms).
      for (size_t i = 0; i < static_cast<size_t>(tq) * h; ++i) x[i] += y[i];
    }
    last_q_ = p.attend ? tq : 0;
  }

  std::string name() const override { return "cpu"; }
  std::string device() const override { return "CPU reference kernels (host memory)"; }
  int64_t kv_pool_bytes() const override {
    int64_t b = 0;
    for (int32_t l = 0; l < c_.model.layers; ++l) {
      const auto& c = step_.cache(l);
      b += static_cast<int64_t>((c.k().size() + c.v().size()) * sizeof(float));
    }
    return b;
  }
  bool output_finite() const override {
    const size_t n = static_cast<size_t>(last_q_) * static_cast<size_t>(c_.model.hidden);
    const std::vector<float>& x = step_.input();
    return std::all_of(x.begin(), x.begin() + static_cast<ptrdiff_t>(n),
                       [](float e) { return std::isfinite(e); });
  }

 private:
  static constexpr size_t kEmbedRows = 509;  // prime: positions do not alias block boundaries

  static ref::DecoderStep make_step(const BackendConfig& c, std::mt19937_64& rng) {
    if (c.model.q_heads % c.model.kv_heads != 0)
      throw std::invalid_argument("cpu backend: q_heads % kv_heads");
    if (c.num_blocks < 1) throw std::invalid_argument("cpu backend: num_blocks must be >= 1");
    return ref::DecoderStep(c.model, c.num_blocks, c.block_size, rng);
  }

  BackendConfig c_;
  std::mt19937_64 rng_;
  ref::DecoderStep step_;
  std::vector<float> embed_;
  int32_t last_q_ = 0;
};

}  // namespace

std::unique_ptr<StepBackend> make_cpu_backend(const BackendConfig& c) {
  return std::make_unique<CpuBackend>(c);
}

std::unique_ptr<StepBackend> make_backend(const std::string& name, const BackendConfig& c) {
  if (name == "cpu") return make_cpu_backend(c);
  if (name == "gpu") return make_gpu_backend(c);
  throw std::invalid_argument("unknown backend \"" + name + "\" (expected cpu or gpu)");
}

}  // namespace metronome::replay
