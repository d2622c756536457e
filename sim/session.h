// One caller's session as the engine sees it: a periodic real-time task whose KV stays pinned.
#pragma once

#include <cstdint>

#include "sim/time.h"

namespace metronome {

struct Session {
  enum class State : uint8_t { kLive, kPreempted, kGone };

  Time arrival = 0;
  Time end = kNever;         // the caller hangs up (kNever: after the horizon)
  int64_t frames_total = 0;  // frames released during the call
  int64_t next_frame = 0;    // index of the oldest frame not yet served
  int64_t frames_added = 0;  // vllm_v1: frames handed to the scheduler (next_release is the next's)
  Time next_release = 0;     // release time of next_frame
  int64_t ctx = 0;           // tokens in the session's history (KV logically appended)
  int64_t held = 0;          // blocks held in the pool now
  int64_t step_alloc = 0;    // blocks the running step holds for it (to free the excess after)
  int64_t recompute = 0;     // tokens to recompute before the next frame (after a preemption)
  int64_t admit_order = 0;   // larger is newer; preemption takes the newest first
  int64_t reserve = 0;       // memory guard: the most blocks this session can hold (per member)
  // Identical callers (same arrival, end and state: all at once, fixed length) are simulated as one
  // cohort of `count` members with consecutive admit orders; every other field is per member.
  int64_t count = 1;
  State state = State::kLive;
  bool in_step = false;
  bool stalled = false;
};

}  // namespace metronome
