// One caller (or a few, at once) under a KV policy given as its JSON section, and the pool's blocks
// after each engine step, for the KV policies' tests.
#pragma once

#include <string>
#include <vector>

#include "sim/engine/engine.h"
#include "sim/output/run_observer.h"
#include "tests/sim/test_scenarios.h"

namespace metronome::testing {

// The pool's used blocks once each step has ended (the engine frees before it reports).
struct PoolAfterSteps : RunObserver {
  std::vector<int64_t> used;
  void on_step(Time, Time, int64_t, int64_t pool_used) override { used.push_back(pool_used); }
};

// `callers` Moshi callers at once for 240 s (3000 frames of 80 ms) under `kv_policy`, each frame
// appending `per_frame` tokens after a prompt of `prompt` tokens, in blocks of 16.
inline Scenario callers_under(int64_t callers, const std::string& kv_policy, int64_t per_frame,
                              int64_t prompt = 0, std::vector<std::string> extra = {}) {
  extra.push_back("kv_policy=" + kv_policy);
  extra.push_back("workload.kv_tokens_per_frame=" + std::to_string(per_frame));
  extra.push_back("workload.prompt_tokens=" + std::to_string(prompt));
  extra.push_back("engine.block_size=16");
  return moshi(callers, "unbounded", extra);
}

}  // namespace metronome::testing
