// How many KV blocks the engine has, sized as vLLM sizes its pool:
//   num_blocks = floor((gpu_memory_utilization x memory - weights - activations) / block_bytes)
// unless the scenario gives num_blocks explicitly. A replica over k GPUs (engine.tensor_parallel)
// sizes each GPU's share: weights / k and its slice of the KV heads per block, which is
//   num_blocks = floor((k x (gpu_memory_utilization x memory - activations) - weights)
//                      / (block_size x 2 x layers x max(kv_heads, k) x head_dim x bytes))
// (fewer KV heads than GPUs: each GPU keeps a copy of one, as vLLM does). Weights are split
// evenly: norms and replicated K/V projections, kept whole on every GPU, are not added.
#pragma once

#include <cstdint>

#include "sim/config/scenario.h"

namespace metronome {

struct PoolSizing {
  int64_t kv_bytes_per_token = 0;  // stored over all the replica's GPUs (copies included)
  int64_t block_bytes = 0;
  double usable_bytes = 0;  // memory left for KV by the sizing rule, over all the GPUs
  int64_t num_blocks = 0;
  bool overridden = false;  // engine.num_blocks was given
};

// Throws ConfigError when the pool cannot hold even one session's first frame, or, with bounded
// KV, one session at its most.
PoolSizing size_pool(const Scenario& s);

// KV heads stored per layer over a replica's GPUs: the model's, or one per GPU where there are
// fewer KV heads than GPUs.
int64_t stored_kv_heads(const Scenario& s);

// Bounded KV: the most blocks one session ever holds while a frame is served
// (KvPolicy::max_step_blocks). 0 for unbounded KV, which has no bound.
int64_t max_blocks_per_session(const Scenario& s);

}  // namespace metronome
