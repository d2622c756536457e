// One caller's session as the engine sees it: a periodic real-time task whose KV stays pinned.
#pragma once

#include <cstdint>

#include "base/time.h"

namespace metronome {

// Everything about a session that identical callers share. Identical callers (same arrival, end
// and state: all at once, fixed length) are simulated as one cohort, and a session joins the cohort
// queued just before it only when this whole state compares equal (the defaulted ==): a field added
// here takes part in the merge check without anyone having to remember it.
struct CohortState {
  enum class State : uint8_t { kLive, kPreempted, kGone };

  // What a served frame does not read comes first; from frames_total on, the fields every frame
  // reads and writes are contiguous with Session's own, so a visit touches two cache lines, not
  // three (EngineCore::prefetch fetches that span).
  Time arrival = 0;
  Time end = kNever;         // the caller hangs up (kNever: after the horizon)
  int64_t frames_added = 0;  // vllm_v1: frames handed to the scheduler (next_release is the next's)
  int64_t reserve = 0;       // memory guard: the most blocks this session can hold (per member)
  int64_t frames_total = 0;  // frames released during the call
  int64_t next_frame = 0;    // index of the oldest frame not yet served
  Time next_release = 0;     // release time of next_frame
  int64_t ctx = 0;           // tokens in the session's history (KV logically appended)
  int64_t held = 0;          // blocks held in the pool now (per member)
  int64_t recompute = 0;     // tokens to recompute before the next frame (after a preemption)
  State state = State::kLive;
  bool in_step = false;
  bool stalled = false;
  // Another admitted caller arrived at the same instant, in a run with cohorts (Engine::set_cohorts
  // before the run). Only such callers can share a state, so
  // the merge check is skipped for the others (distinct callers never pay for it, nor touch the
  // queue's back); set on both before either is queued behind the other.
  bool twin = false;

  bool operator==(const CohortState&) const = default;
};

struct Session : CohortState {
  // The slot's incarnation, which tickets and events carry (engine.h): it outlives the slot's
  // reuse, so it is no part of the cohort state. It sits in CohortState's tail padding, beside the
  // fields every served frame reads, so a ticket is checked without touching another cache line.
  // 32 bits, as in the tickets (a ticket is 32 bytes): a slot would have to be reused 2^32 times
  // while a stale ticket for it waits in a queue to be mistaken for a live one.
  uint32_t incarnation = 0;
  // A cohort's `count` members have consecutive admit orders from `admit_order`; larger is newer,
  // and preemption takes the newest first.
  int64_t admit_order = 0;
  int64_t count = 1;

  // The usual case of a frame, which the engine serves in bulk: one live caller past its first
  // frame (no prompt), not waiting for blocks, with nothing to recompute.
  bool usual_single() const {
    return count == 1 && state == State::kLive && !stalled && next_frame > 0 && recompute == 0;
  }
};

// Whether a caller whose served frames next_frame counts has another to come, for which it is
// queued again. C: a Session, or the usual ring's copy of its per-frame fields
// (sim/scheduler/usual_ring.h).
template <class C>
bool has_next_frame(const C& c) {
  return c.next_frame < c.frames_total;
}

// The memory budget per live session (bench_sim's 1M-session case) counts on this.
static_assert(sizeof(Session) <= 104, "Session outgrew its 104 bytes");

}  // namespace metronome
