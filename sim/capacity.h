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
// The smaller binds.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "sim/scenario.h"

namespace metronome {

struct CapacityReport {
  int64_t memory_cap = 0;
  bool memory_cap_grows_with_time = false;  // unbounded KV: the cap is for calls of call_s
  double call_s = 0;
  int64_t deadline_cap = 0;         // callers evenly spread over a period: the best case; binds
  int64_t deadline_cap_random = 0;  // Poisson scenarios: one draw of random phases, beside it
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
CapacityReport compute_capacity(const Scenario& s, double fraction, double probe_s = 0);
nlohmann::json capacity_json(const Scenario& s, const CapacityReport& c);
std::string capacity_text(const Scenario& s, const CapacityReport& c);

}  // namespace metronome
