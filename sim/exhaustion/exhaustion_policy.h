// Exhaustion: what a frame scheduler does with a frame that cannot get its blocks (the frame
// scheduler's engine.exhaustion; vLLM V1's scheduler has its own rule, docs/vllm.md). Chosen by
// the string engine.exhaustion through exhaustion_policies(), one file per policy. The engine asks
// the policy at the two moments exhaustion can act, and the policy acts through the engine's
// ExhaustionSite: before a frame is refused (make room), and once it is (what becomes of it).
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "base/time.h"
#include "sim/policy/policy_registry.h"

namespace metronome {

// What the frame scheduler lets an exhaustion policy do (Engine implements it).
class ExhaustionSite {
 public:
  virtual ~ExhaustionSite() = default;
  // Evicts sessions admitted after session `id` that hold blocks and are not in the running step,
  // newest first, until `need` blocks are free or only older sessions remain; true once they are
  // free. An evicted session recomputes its visible context when it next runs.
  virtual bool evict_newer_than(int64_t id, int64_t need, Time now) = 0;
  // Evicts session `id`, which holds blocks.
  virtual void evict(int64_t id, Time now) = 0;
};

class ExhaustionPolicy {
 public:
  virtual ~ExhaustionPolicy() = default;
  virtual std::string type() const = 0;
  // Whether the policy evicts sessions: the engine then keeps their admission order and serves
  // no cohorts (whose members it could not evict one by one), and the cost model prices the
  // recomputation.
  virtual bool preempts() const = 0;
  // A frame of session `id` needs `need` more blocks (per member) than the pool has free: true
  // when the policy made room, and the engine allocates again.
  virtual bool make_room(ExhaustionSite&, int64_t /*id*/, int64_t /*need*/, Time) const {
    return false;
  }
  // The frame did not get its blocks. kWait: it waits out of the ready queue until blocks are
  // freed (the session counts as stalled); kRetry: it stays at the ready queue's front and is
  // tried again at every step.
  enum class Refused { kWait, kRetry };
  virtual Refused on_refused(ExhaustionSite& site, int64_t id, bool holds_blocks,
                             Time now) const = 0;
};

// The registry (sim/exhaustion/exhaustion_policies.cpp); tests may add to it.
PolicyRegistry<ExhaustionPolicy>& exhaustion_policies();

}  // namespace metronome
