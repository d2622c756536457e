// Capacity of one model on one GPU for one workload: the two caps on concurrent sessions.
//   memory cap    windowed KV: the pool over the per-session bound (sinks + window + the frame in
//                 flight, whole blocks), fixed in time. Unbounded KV: resident KV grows with the
//                 call, so the cap depends on how long calls last: the largest N whose KV at the
//                 end of a call of min(call length, horizon) fits the pool; it shrinks without
//                 bound as calls lengthen.
//   deadline cap  the largest N whose steady per-frame latency (reported p95, after a probe of
//                 probe_s simulated seconds (default_probe_s) with N callers spread evenly over one
//                 frame period, the pool made large enough never to bind) stays under fraction x
//                 deadline; found by doubling then bisection, assuming latency grows with N.
//                 Steady: the p95 over the probe's second half, once every window has filled,
//                 with under 1% of that half's due frames silent.
//   pace cap      the frame scheduler's: the most N whose frames, served in full steps, take at
//                 most a frame period at the probe's last contexts
//                 (sim/closed_form/service_rate.h). Past it the engine falls further behind every
//                 period; a probe of a few periods can miss that, so the deadline search never
//                 passes it.
// The smaller of the memory and deadline caps binds.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "sim/config/scenario.h"

namespace metronome {

class Progress;

struct CapacityReport {
  int64_t memory_cap = 0;
  int64_t blocks_per_caller = 0;  // the most a caller holds over a call of call_s
  // Unbounded KV, or calls that end before the policy's bound: the cap is for calls of call_s.
  bool memory_cap_depends_on_call_length = false;
  double call_s = 0;
  int64_t deadline_cap = 0;         // callers evenly spread over a period: the best case; binds
  std::optional<int64_t> pace_cap;  // frame scheduler only; deadline caps never exceed it
  // Poisson scenarios: at the random phases of `phase_draws` draws of callers (seeds seed,
  // seed + 1, ...), the median and the range across draws, beside the evenly spread cap. Few
  // sessions with long windows make phase bunching matter: the range says how much.
  int64_t deadline_cap_random = 0, deadline_cap_random_min = 0, deadline_cap_random_max = 0;
  int64_t phase_draws = 0;
  bool random_phases = false;
  double fraction = 0;  // of the deadline
  double probe_s = 0;
  int64_t probes = 0;      // simulated runs
  std::string binding;     // "memory" | "deadline"
  std::string cost_model;  // the probes' cost model, its label
};

// probe_s <= 0: long enough to reach steady state (windowed: twice the time to fill S + W;
// unbounded: the call length within the horizon, where per-frame cost is largest).
double default_probe_s(const Scenario& s);
// progress (may be null) counts the probes; their number is not known in advance.
CapacityReport compute_capacity(const Scenario& s, double fraction, double probe_s = 0,
                                int phase_draws = 1, Progress* progress = nullptr);
nlohmann::json capacity_json(const Scenario& s, const CapacityReport& c);
std::string capacity_text(const Scenario& s, const CapacityReport& c);

}  // namespace metronome
