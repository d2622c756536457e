#include "sim/pool_sizing.h"

#include <algorithm>
#include <cmath>
#include <string>

#include "base/config_error.h"

namespace metronome {

int64_t max_blocks_per_session(const Scenario& s) {
  if (!s.kv_policy.bounded()) return 0;
  const kv::FrameGrowth g = s.workload.growth();
  const kv::Window win = s.kv_policy.window();
  const kv::BlockSize bs(s.engine.block_size);
  // Once the window is full the holding cycles with the block alignment: scanning that far is
  // exact.
  const int64_t settle = (win.window + win.sinks + g.prompt) / std::max<int64_t>(1, g.per_frame) +
                         2 * s.engine.block_size + 4;
  if (settle > 2'000'000) {  // too far to scan: the bound, sinks + window + frame 0, rounded up
    return kv::ceil_div(win.sinks, s.engine.block_size) +
           kv::ceil_div(win.window + g.appended(0), s.engine.block_size) + 1;
  }
  int64_t most = 0;
  for (int64_t m = 0; m <= settle; ++m) most = std::max(most, g.step_blocks_at(m, win, bs));
  return most;
}

int64_t stored_kv_heads(const Scenario& s) {
  return std::max(s.model.kv_heads, s.engine.tensor_parallel);
}

PoolSizing size_pool(const Scenario& s) {
  PoolSizing p;
  // Over k GPUs: each holds 1/k of the weights and of the KV heads (a copy of one where there are
  // fewer than k), so a block is the whole model's KV at k x the per-GPU slice, and the pool is
  // what k GPUs leave after their share of the weights and their own activations. k = 1 is the
  // one-GPU rule exactly (x 1 changes no bit).
  const auto k = static_cast<double>(s.engine.tensor_parallel);
  p.kv_bytes_per_token = s.model.kv_bytes_per_token() / s.model.kv_heads * stored_kv_heads(s);
  p.block_bytes = p.kv_bytes_per_token * s.engine.block_size;
  p.usable_bytes = k * s.engine.gpu_memory_utilization * s.gpu.memory_bytes - s.model.weight_bytes -
                   k * s.engine.activation_reserve_bytes;
  if (s.engine.num_blocks) {
    p.num_blocks = *s.engine.num_blocks;
    p.overridden = true;
  } else {
    if (p.usable_bytes < static_cast<double>(p.block_bytes)) {
      throw ConfigError(s.source + ": engine: the KV pool holds no block: " +
                        std::to_string(s.engine.gpu_memory_utilization) + " x " +
                        std::to_string(s.gpu.memory_bytes) + " B of GPU memory - " +
                        std::to_string(s.model.weight_bytes) + " B of weights - " +
                        std::to_string(s.engine.activation_reserve_bytes) +
                        " B of activations leaves " + std::to_string(p.usable_bytes) +
                        " B, less than one block of " + std::to_string(p.block_bytes) + " B");
    }
    p.num_blocks =
        static_cast<int64_t>(std::floor(p.usable_bytes / static_cast<double>(p.block_bytes)));
  }
  // One session must at least fit its first step (prompt, first frame, sinks), else nothing can
  // run.
  const int64_t first =
      s.workload.growth().step_blocks_at(0, s.kv_policy.window(), s.engine.block_size);
  if (p.num_blocks < first) {
    throw ConfigError(s.source + ": engine: the pool of " + std::to_string(p.num_blocks) +
                      " blocks cannot hold one session's first frame (" + std::to_string(first) +
                      " blocks of " + std::to_string(s.engine.block_size) +
                      " tokens: prompt_tokens + kv_tokens_per_frame)");
  }
  if (const int64_t most = max_blocks_per_session(s); most > p.num_blocks) {
    throw ConfigError(s.source + ": engine: the pool of " + std::to_string(p.num_blocks) +
                      " blocks cannot hold one windowed session (" + std::to_string(most) +
                      " blocks: kv_policy.sink_tokens + kv_policy.window_tokens + the frame)");
  }
  return p;
}

}  // namespace metronome
