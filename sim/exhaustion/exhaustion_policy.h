// Exhaustion: what a frame scheduler does with a frame that cannot get its blocks (the frame
// scheduler's engine.exhaustion; vLLM V1's scheduler has its own rule, docs/vllm.md). Chosen by
// the string engine.exhaustion through exhaustion_policies(), one file per policy.
#pragma once

#include <memory>
#include <string>

#include "sim/policy/policy_registry.h"

namespace metronome {

class ExhaustionPolicy {
 public:
  virtual ~ExhaustionPolicy() = default;
  virtual std::string type() const = 0;
  // The engines' response to a frame without blocks: evict the newest admitted sessions that hold
  // blocks until the frame fits (they recompute their visible context when they run again), or
  // leave it waiting until blocks free up.
  enum class Response { kWait, kPreemptNewest };
  virtual Response response() const = 0;
  bool preempts() const { return response() == Response::kPreemptNewest; }
};

// The registry (sim/exhaustion/exhaustion_policies.cpp); tests may add to it.
PolicyRegistry<ExhaustionPolicy>& exhaustion_policies();

}  // namespace metronome
