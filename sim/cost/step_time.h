// The bound on one engine step's duration. A cost model returns seconds as a double; the engine's
// clock is int64 nanoseconds (base/time.h), which holds 9.2e9 s, and llround of anything larger
// (or of inf/NaN) is undefined: without a bound, a step of 1e20 s (memory bandwidth 1 B/s, a
// calibration coefficient of 1e308) silently became a 1 ns step. One hour per step is far beyond
// any real forward pass (seconds at most) and keeps now + step inside int64 for any horizon the
// scenario accepts (kMaxSeconds = 1e9 s).
#pragma once

#include <string>

#include "base/time.h"
#include "sim/cost/cost_model.h"

namespace metronome {

inline constexpr double kMaxStepSeconds = 3600;

// A step's seconds as Time, at least 1 ns. ConfigError naming the cost model (its label) and the
// offending value when `seconds` is not finite, negative, or above kMaxStepSeconds. The engine
// calls it where it turns pass_seconds() into an event time; the check is one comparison.
Time step_duration(double seconds, const CostModel& cost);

// Checks at load that the scenario's cost model cannot produce an out-of-range step: the smallest
// step (one session, one frame, no cached context) must take at most kMaxStepSeconds, and the
// largest step the pool allows (a full batch reading the whole pool, recomputing it under
// preempt_recompute) must stay below kMaxStepSeconds x 1000, far from int64 overflow. The error
// names the field that caused it: gpu.memory_bandwidth_bytes_per_s, gpu.bf16_flops,
// cost_model.step_overhead_s, or the calibration file's fit.terms[i].coefficient.
void check_step_bounds(const Scenario& s, const CostModel& cost);

}  // namespace metronome
