// The AIMD controller's look ahead: with windowed KV a session's per-frame cost keeps growing for
// W frames after admission, so the latency it reads now understates the latency the same sessions
// will cause once settled. The forecast replays one stretch of the frame scheduler's periodic
// regime (each caller's frames at its own phase, every released frame batched into the next step,
// steps priced by the cost model) with the callers' contexts as they are and as they will settle,
// and scales the observed latency by the ratio of the two quantiles. Phases matter: callers that
// cluster make long steps, and the longer each session's attention, the more a cluster costs.
#pragma once

#include <cstdint>
#include <vector>

#include "base/time.h"
#include "core/kv_window.h"
#include "sim/cost/cost_model.h"

namespace metronome {

struct ForecastCaller {
  Time phase;      // release time of its frames modulo the frame period, in [0, period)
  int64_t count;   // identical callers sharing the phase (a cohort)
  int64_t cached;  // cached visible keys its frame attends to
};

// Phase order, the replay's; ties keep their order (a stable sort). An object, not a function:
// the sorts inline it (through a function pointer it was a call per comparison).
inline constexpr auto earlier_phase = [](const ForecastCaller& a, const ForecastCaller& b) {
  return a.phase < b.phase;
};

struct ForecastShape {
  Time period;          // frame period
  int64_t n_in, n_out;  // tokens in and out per frame
  int64_t max_batch;    // most sessions per step
  kv::Window window;
};

// The q-quantile of per-frame latency (seconds) over the frames released in the last two of four
// frame periods, the engine idle at the start: long enough for a stable regime to repeat, and a
// regime whose steps outgrow the period shows as a latency that keeps growing. Callers need not
// be sorted: they are stably sorted by phase unless they already are (earlier_phase). An empty set
// gives 0.
double periodic_latency_quantile(std::vector<ForecastCaller> callers, const ForecastShape& shape,
                                 const CostModel& cost, double q);

}  // namespace metronome
