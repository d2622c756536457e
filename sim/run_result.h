// Everything one run reports. Every number here is derivable from the resolved scenario, which the
// JSON output echoes beside it.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "sim/latency_histogram.h"

namespace metronome {

struct RunResult {
  // Outcome
  bool crashed = false;                    // a frame could not get blocks (stall or preemption)
  std::optional<double> first_stall_s;     // when the pool first refused an allocation
  std::optional<double> first_preempt_s;
  // Sessions
  int64_t sessions_arrived = 0;
  int64_t sessions_departed = 0;
  int64_t preemptions = 0;
  int64_t peak_live_sessions = 0;
  // Frames
  int64_t frames_due = 0;     // released before the caller left or the horizon
  int64_t frames_served = 0;
  int64_t frames_on_time = 0; // true latency within the deadline
  int64_t frames_silent = 0;  // due frames with no output by silence_after_s
  int64_t frames_reported_late = 0;
  int64_t tokens_produced = 0;
  LatencyHistogram reported_latency;  // per due frame, as the serving layer reports it
  LatencyHistogram true_latency;      // per due frame; never-served frames are censored
  // Engine and pool
  int64_t engine_steps = 0;
  double busy_s = 0;
  int64_t peak_pool_blocks = 0;
  int64_t final_pool_blocks = 0;
  int64_t blocks_allocated = 0;
  int64_t blocks_released = 0;
  int64_t max_resident_blocks_per_session = 0;  // largest any session held between steps
  double end_s = 0;
};

}  // namespace metronome
