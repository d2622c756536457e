// What the gateway sees of one replica when a call arrives: the engine's own gauges, read at the
// call's instant after every event before it (Engine::advance), never a forecast.
#pragma once

#include <cstdint>

#include "base/time.h"

namespace metronome {

struct ReplicaView {
  int64_t live = 0;         // sessions it holds
  int64_t free_blocks = 0;  // KV blocks free in its pool
  int64_t pool_blocks = 0;  // its pool's size
  int64_t queue_depth = 0;  // sessions whose frame waits for blocks (vLLM: waiting requests)
  // The replica's own latency signal: its admission controller's last reading where it runs a
  // control loop, else the duration of its last step (a frame's wait once it is taken), in s.
  double latency_s = 0;

  // Fraction of the pool in use: vLLM's kv_cache_usage_perc / 100.
  double kv_usage() const {
    return pool_blocks > 0
               ? static_cast<double>(pool_blocks - free_blocks) / static_cast<double>(pool_blocks)
               : 1.0;
  }
};

}  // namespace metronome
