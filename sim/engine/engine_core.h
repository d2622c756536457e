// What a serving engine's step scheduler works on (sim/scheduler/step_scheduler.h): the session
// slots and the queue of sessions waiting for their next frame, the block pool, the event queue,
// the frame ledger and the run's result. The engine (sim/engine/engine.h) owns it, admits sessions
// into it and retires them; a scheduler takes frames from the queue, serves them in steps and
// requeues them.
#pragma once

#include <cstdint>
#include <limits>
#include <stdexcept>
#include <vector>

#include "base/rng.h"
#include "sim/config/scenario.h"
#include "sim/cost/cost_model.h"
#include "sim/engine/event_queue.h"
#include "sim/engine/frame_ledger.h"
#include "sim/engine/frame_rule.h"
#include "sim/engine/ready_queue.h"
#include "sim/engine/session.h"
#include "sim/output/run_observer.h"
#include "sim/output/run_result.h"
#include "sim/pool/block_counter.h"

namespace metronome {

// The scenario's frame period (at least 1 ns) and its frame rule, as the engine's parts read them.
Time frame_period(const Scenario& s);
FrameRule frame_rule(const Scenario& s);

struct EngineCore {
  // `cost` and `observer` (which may be null) must outlive the core; `pool_blocks` are usable.
  EngineCore(const Scenario& s, const CostModel& cost_model, RunObserver* run_observer,
             int64_t pool_blocks, bool control_on);

  const Scenario& scenario;
  const CostModel& cost;
  RunObserver* observer;
  // Scenario constants in engine units.
  Time period, horizon, jitter;
  FrameRule rule;  // the workload's kv::FrameGrowth on the KV policy and the frame's tokens
  BlockCounter pool;
  EventQueue events;
  std::vector<Session> sessions;
  std::vector<int64_t> free_slots;
  ReadyQueue ready;  // sessions waiting for their next frame
  uint64_t next_seq = 0;
  int64_t next_admit_order = 0;
  int64_t live = 0;     // admitted callers not departed
  int64_t stalled = 0;  // callers whose frame waits for blocks
  Time wake_at = kNever;
  Rng jitter_rng;
  RunResult result;
  FrameLedger ledger;

  // A slot's incarnation moves on when its session leaves or merges and when the slot is reused,
  // so a ticket or step member from before is stale by this one test.
  bool valid(const Ticket& t) const { return sessions[t.id].incarnation == t.incarnation; }
  Ticket ticket(int64_t id, uint64_t seq) const {
    const Session& s = sessions[id];
    return {static_cast<int32_t>(id), s.incarnation, seq, s.next_release, s.admit_order};
  }
  // Queues the session for its next frame, behind every ticket queued before.
  void queue(int64_t id) { ready.push_fresh(ticket(id, next_seq++)); }
  // A slot's next incarnation; never the tombstone of a taken blocked frame.
  void next_incarnation(int64_t id) {
    uint32_t& i = sessions[id].incarnation;
    if (++i == kTaken) ++i;
  }
  // A fresh session in a free slot, or a new one.
  int64_t new_slot();
  void purge_ready_front() {
    while (!ready.empty() && !valid(ready.front())) ready.pop_front();
  }
  // When the session's frame `frame` is released (its schedule, delayed by the frame jitter).
  Time release_time(const Session& s, int64_t frame) {
    Time t = s.arrival + frame * period;
    if (jitter > 0) t += static_cast<Time>(jitter_rng.uniform() * static_cast<double>(jitter));
    return t;
  }
  // A wake event at the next release among the queued sessions, once a step has taken every ready
  // one (or none could go).
  void wake_at_next_release(Time now);
  // A wake event at `release`, the next release of a queue the scheduler keeps, if it is later
  // than `now` and earlier than the wake already set.
  void wake_at_release(Time release, Time now);
  // The pool refused an allocation at `now`.
  void note_exhaustion(Time now) {
    if (!result.first_stall_s) result.first_stall_s = to_seconds(now);
  }

  // Sessions are visited in release order, which is random in their slots: with many live sessions
  // each visit would wait for memory, so the loops over a batch or the queue fetch a few ahead
  // once the slots outgrow the core's caches (below that the hints are pure cost).
  static constexpr size_t kAhead = 16;
  static constexpr size_t kPrefetchFromSlots = 4096;  // 4096 x 104-byte sessions: 416 KiB
  bool far() const { return sessions.size() >= kPrefetchFromSlots; }
  void prefetch(int64_t id) const {  // the first and last cache lines of the per-frame fields
    const Session& s = sessions[id];
    __builtin_prefetch(&s.frames_total);
    __builtin_prefetch(reinterpret_cast<const char*>(&s + 1) - 1);
  }
};

}  // namespace metronome
