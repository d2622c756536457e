// Everything one run reports. Every number here is derivable from the resolved scenario, which the
// JSON output echoes beside it.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "sim/output/latency_histogram.h"

namespace metronome {

// The admission controller's trace, summarised. N* is the number of sessions served in steady
// state: the median of the live sessions over the last half of the horizon, read at each control
// instant, with its 5th/95th percentiles; the cap's median and percentiles are kept beside it
// (nearest rank). `flags` marks a run whose N* is not a schedulable concurrency: "stalled" (the
// pool refused an allocation), "collapsed" (the cap ended below half of N*: the controller cut
// while the admitted callers stayed), "missed_deadlines" (over 1% of the last half's due frames
// late or silent), "never_raised" (an adaptive controller, AIMD or gradient, that never raised its
// cap: N* is its starting point, not a concurrency it found). flag_reasons says why, per flag.
struct AdmissionSummary {
  bool capped = false;    // a controller other than "none"
  bool adaptive = false;  // the cap moved online (aimd, gradient)
  std::optional<double> n_star, live_p5, live_p95;
  std::optional<double> cap_median, cap_p5, cap_p25, cap_p75, cap_p95;
  std::vector<std::string> flags;
  std::vector<std::string> flag_reasons;  // one sentence per flag, in the same order
  bool memory_guard = false;              // callers were refused when their worst case did not fit
  int64_t rejected_by_memory = 0;         // of sessions_rejected
  std::optional<int64_t> memory_cap;      // windowed with the guard: pool / per-session bound
  // Phase-aware joining (admission.join "spread"): how long callers waited for their phase.
  bool join_spread = false;
  double join_delay_mean_ms = 0, join_delay_max_ms = 0;
  int64_t initial_cap = 0, final_cap = 0, max_cap = 0;
  int64_t increases = 0, decreases = 0, control_intervals = 0;
  std::optional<double> first_decrease_s;
  std::optional<int64_t> cap_at_first_stall;   // cap when the pool first refused an allocation
  std::optional<int64_t> live_at_first_stall;  // sessions admitted then
};

struct RunResult {
  // Outcome
  std::optional<double> first_stall_s;  // when the pool first refused an allocation
  // A frame could not get blocks (stall or preemption).
  bool crashed() const { return first_stall_s.has_value(); }
  std::optional<double> first_preempt_s;
  // Sessions
  int64_t sessions_arrived = 0;
  int64_t sessions_departed = 0;
  int64_t sessions_rejected = 0;  // turned away at the admission cap (counted in sessions_arrived)
  // Calls the KV policy's context cap ended (KvPolicy::context_cap); set, from 0, only under one.
  std::optional<int64_t> sessions_context_capped;
  int64_t preemptions = 0;
  int64_t peak_live_sessions = 0;
  // Frames
  int64_t frames_due = 0;  // released before the caller left or the horizon
  int64_t frames_served = 0;
  int64_t frames_on_time = 0;  // true latency within the deadline
  int64_t frames_silent = 0;   // due frames with no output by silence_after_s
  int64_t frames_reported_late = 0;
  int64_t tokens_produced = 0;
  LatencyHistogram reported_latency;  // per due frame, as the serving layer reports it
  // The same over the frames served in the last half of the horizon: the steady state a capacity
  // probe judges (a window fills in its first half).
  LatencyHistogram steady_reported_latency;
  int64_t steady_frames_due = 0, steady_frames_silent = 0;  // over the same samples
  LatencyHistogram true_latency;  // per due frame; never-served frames are censored
  // Engine and pool
  int64_t engine_steps = 0;
  double busy_s = 0;
  int64_t peak_pool_blocks = 0;
  int64_t final_pool_blocks = 0;
  int64_t blocks_allocated = 0;
  int64_t blocks_released = 0;
  int64_t max_resident_blocks_per_session = 0;  // largest any session held between steps
  double end_s = 0;
  AdmissionSummary admission;
};

}  // namespace metronome
