// How many KV blocks the engine has, sized as vLLM sizes its pool:
//   num_blocks = floor((gpu_memory_utilization x memory - weights - activations) / block_bytes)
// unless the scenario gives num_blocks explicitly.
#pragma once

#include <cstdint>

#include "sim/scenario.h"

namespace metronome {

struct PoolSizing {
  int64_t kv_bytes_per_token = 0;
  int64_t block_bytes = 0;
  double usable_bytes = 0;  // memory left for KV by the sizing rule
  int64_t num_blocks = 0;
  bool overridden = false;  // engine.num_blocks was given
};

// Throws ConfigError when the pool cannot hold even one session's first frame, or, with bounded
// KV, one session at its most.
PoolSizing size_pool(const Scenario& s);

// Bounded KV: the most blocks one session ever holds while a frame is served
// (KvPolicy::max_step_blocks). 0 for unbounded KV, which has no bound.
int64_t max_blocks_per_session(const Scenario& s);

}  // namespace metronome
