// A caller's call on the run's clock, from its start and drawn length: when it hangs up and how
// many frames it releases. The engine admits callers by it and a recorded run is booked by it
// (sim/output/recorded_run.h), so that both count the same frames as due.
#pragma once

#include <algorithm>
#include <cstdint>

#include "base/time.h"
#include "core/kv_window.h"

namespace metronome {

struct CallSpan {
  Time end;        // the hang-up; kNever for a call that outlives the horizon
  int64_t frames;  // frames released during the call (for kNever, enough to pass the horizon)
};

// A call that hangs up exactly at the horizon does not outlive it: it departs then (events at the
// horizon are handled), with its own frames, and the instant of its hang-up is no frame of it.
// Compared in whole nanoseconds, so that 0.1 s against a horizon of 0.1 s is equal. A length far
// past the horizon is not converted (it may not fit in Time).
inline CallSpan call_span(Time start, double duration_s, Time horizon, Time period) {
  const Time left = horizon - start;
  const Time call = duration_s > 2 * to_seconds(left) + 1
                        ? left + 1
                        : std::max<Time>(1, from_seconds(duration_s));
  if (call > left) return {kNever, std::max<Time>(0, left) / period + 2};
  return {start + call, kv::ceil_div(call, period)};
}

// A call whose context reaches the KV policy's cap (KvPolicy::context_cap) ends once its
// `cap_frames` frames are out, when the next would be released, unless it hangs up first (or at
// that instant) or the run ends before. True when the cap ends it.
inline bool cap_call(CallSpan& call, Time start, int64_t cap_frames, Time horizon, Time period) {
  if (start > horizon || cap_frames > (horizon - start) / period) return false;
  const Time end = start + cap_frames * period;
  if (call.end != kNever && call.end <= end) return false;
  call = {end, cap_frames};
  return true;
}

}  // namespace metronome
