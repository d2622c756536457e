// The first-order model of pool fill, without simulating the engine:
//   rho(t) = rho0 + sum over live sessions of r x age,  r = tokens/s per session / (block_size x
//   blocks) all at once:  t_sat = (1 - rho0) / (N r)
// in two forms: continuous (the paper's closed form, summed ages for staggered arrivals) and whole
// blocks (each session holds ceil(tokens / block_size) blocks, or its window's blocks), evaluated
// on this seed's arrival and duration draws, which are the simulator's own.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "sim/pool_sizing.h"
#include "sim/scenario.h"

namespace metronome {

struct FirstOrderPrediction {
  PoolSizing pool;
  double tokens_per_s_per_session = 0;  // kv_tokens_per_frame / frame_period_s
  double r_per_s = 0;                   // fraction of the pool one session fills per second
  double rho0 = 0;                      // pool fraction held at t = 0 (prompts of t = 0 arrivals)
  int64_t sessions = 0;                 // callers in this seed's schedule within the horizon
  int64_t peak_concurrent_sessions = 0;
  // Unbounded growth only: the continuous closed form (summed ages); nullopt if never full in
  // horizon.
  std::optional<double> t_sat_continuous_s;
  // Whole blocks, both policies: release time of the first frame that cannot get its blocks.
  std::optional<double> t_sat_blocks_s;
  // Windowed: the most blocks one session can hold (sinks + window + the frame being ingested) and
  // the most sessions that fit: the memory cap.
  std::optional<int64_t> max_blocks_per_session;
  std::optional<int64_t> memory_cap_sessions;
};

FirstOrderPrediction predict_first_order(const Scenario& s);

// rho(t) of the continuous form at the given times (for plots), for this seed's schedule.
std::vector<double> predicted_fill(const Scenario& s, const std::vector<double>& times_s);

}  // namespace metronome
