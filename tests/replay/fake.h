// A clock that jumps and a backend that checks each pass's block tables and takes a fixed time, so
// that the real engine's accounting can be tested exactly and fast.
#pragma once

#include <stdexcept>
#include <string>
#include <vector>

#include "core/kv_window.h"
#include "replay/clock.h"
#include "replay/step_backend.h"

namespace metronome::replay::testing {

class FakeClock final : public Clock {
 public:
  void start() override { t_ = 0; }
  Time now() const override { return t_; }
  void sleep_until(Time t) override { t_ = std::max(t_, t); }
  void advance(Time d) { t_ += d; }

 private:
  Time t_ = 0;
};

class FakeBackend final : public StepBackend {
 public:
  FakeBackend(FakeClock& clock, kv::Window window, int32_t block_size, Time per_pass,
              Time per_token = 0)
      : clock_(clock),
        window_(window),
        bs_(block_size),
        per_pass_(per_pass),
        per_token_(per_token) {}

  // Every written position's block is allocated; in an attending pass every visible key's block is.
  void run(const PassBatch& p) override {
    for (int32_t s = 0; s < p.sessions(); ++s) {
      const int32_t q = p.q_start[s + 1] - p.q_start[s];
      const int64_t first = p.seq_lens[s] - q;
      for (int64_t pos = first; pos < p.seq_lens[s]; ++pos) {
        if (block(p, s, pos) < 0) throw std::logic_error("write into a released block");
        if (!p.attend) continue;
        for (int64_t k = 0; k <= pos; ++k) {
          if (kv::key_visible(pos, k, window_) && block(p, s, k) < 0) {
            throw std::logic_error("visible key " + std::to_string(k) + " in a released block");
          }
        }
      }
    }
    passes.push_back(p);
    clock_.advance(per_pass_ + per_token_ * p.total_q());
  }
  std::string name() const override { return "fake"; }
  std::string device() const override { return "fake backend"; }
  int64_t kv_pool_bytes() const override { return 0; }
  bool output_finite() const override { return true; }

  std::vector<PassBatch> passes;

 private:
  int32_t block(const PassBatch& p, int32_t s, int64_t pos) const {
    const int64_t b = pos / bs_;
    if (b >= p.max_blocks) throw std::logic_error("position beyond the block table");
    return p.block_tables[static_cast<size_t>(s) * p.max_blocks + b];
  }
  FakeClock& clock_;
  kv::Window window_;
  int32_t bs_;
  Time per_pass_, per_token_;
};

}  // namespace metronome::replay::testing
