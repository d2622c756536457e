#include "sim/pool/pool_sizing.h"

#include <algorithm>
#include <cmath>
#include <string>

#include "base/config_error.h"

namespace metronome {

int64_t max_blocks_per_session(const Scenario& s) {
  if (!s.kv_policy.bounded()) return 0;
  return s.kv_policy.policy->max_step_blocks(s.workload.growth(), s.engine.block_size);
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
  const int64_t first = s.kv_rule().step_blocks_at(0);
  if (p.num_blocks < first) {
    throw ConfigError(s.source + ": engine: the pool of " + std::to_string(p.num_blocks) +
                      " blocks cannot hold one session's first frame (" + std::to_string(first) +
                      " blocks of " + std::to_string(s.engine.block_size) +
                      " tokens: prompt_tokens + kv_tokens_per_frame)");
  }
  if (const int64_t most = max_blocks_per_session(s); most > p.num_blocks) {
    throw ConfigError(s.source + ": engine: the pool of " + std::to_string(p.num_blocks) +
                      " blocks cannot hold one " + s.kv_policy.type() + " session (" +
                      std::to_string(most) +
                      " blocks at its most: " + s.kv_policy.policy->describe() + ")");
  }
  return p;
}

}  // namespace metronome
