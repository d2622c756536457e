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

#include "sim/config/scenario.h"
#include "sim/pool/pool_sizing.h"

namespace metronome {

// Whether the engine serves frames as fast as they are released up to the cliff (service_rate.h).
struct ServiceCheck {
  int64_t sessions = 0;  // live at the cliff (peak concurrency of the schedule)
  int64_t context = 0;   // mean cached tokens per session there: the pool's tokens shared out
  double period_s = 0;   // frame period
  double work_s = 0;     // engine time to serve one frame of every session there, in full steps
  bool keeps_up = true;  // work_s <= period_s
  // The first step of that period, pass by pass (the frame scheduler's FramePasses): a frame's
  // first output token comes at the end of the ingest pass, each further one a decode pass later,
  // so once its step starts a frame takes ttft_s + decode_passes x tpot_s (queueing comes before).
  int64_t step_sessions = 0;     // sessions in that step (at most engine.max_num_seqs)
  double ttft_s = 0;             // the ingest pass (time to first token within the step)
  std::optional<double> tpot_s;  // one decode pass (time per output token); null: one token
  int64_t decode_passes = 0;     // output_tokens_per_frame - 1
  // Callers all at once, unbounded KV: frames served at the service rate, whole blocks. Null
  // otherwise, or when the pool does not fill within the horizon.
  std::optional<double> t_sat_service_limited_s;
};

struct FirstOrderPrediction {
  PoolSizing pool;
  double tokens_per_s_per_session = 0;  // kv_tokens_per_frame / frame_period_s
  double r_per_s = 0;                   // fraction of the pool one session fills per second
  double rho0 = 0;                      // pool fraction held at t = 0 (prompts of t = 0 arrivals)
  int64_t sessions = 0;                 // callers in this seed's schedule within the horizon
  int64_t peak_concurrent_sessions = 0;
  // Callers live when the pool first fills (at t_sat_blocks_s; 0 where it never does), and the
  // most frames any call serves within the horizon: what check_service prices.
  int64_t sessions_at_t_sat = 0;
  int64_t longest_call_frames = 0;
  // Unbounded growth only: the continuous closed form (summed ages); nullopt if never full in
  // horizon.
  std::optional<double> t_sat_continuous_s;
  // Whole blocks, both policies: release time of the first frame that cannot get its blocks.
  std::optional<double> t_sat_blocks_s;
  // Windowed: the most blocks one session can hold (sinks + window + the frame being ingested) and
  // the most sessions that fit: the memory cap.
  std::optional<int64_t> max_blocks_per_session;
  std::optional<int64_t> memory_cap_sessions;
  std::optional<ServiceCheck> service;  // set by check_service() where a cost model is at hand
};

FirstOrderPrediction predict_first_order(const Scenario& s);

// rho(t) of the continuous form at the given times (for plots), for this seed's schedule.
std::vector<double> predicted_fill(const Scenario& s, const std::vector<double>& times_s);

}  // namespace metronome
