// A fleet's `autoscale` section (docs/fleet.md): replicas added when a load signal passes an upper
// threshold and drained when it falls below a lower one, between min_replicas and max_replicas.
//
//   "autoscale": {"signal": "sessions", "scale_up_above": 150, "scale_down_below": 60,
//                 "min_replicas": 2, "max_replicas": 16, "startup_s": 120, "interval_s": 10}
//
// Every interval_s the fleet reads the signal over its ready replicas: `sessions` (mean live
// sessions per ready replica), `kv_usage` (mean fraction of their KV pools in use) or `latency`
// (mean of their latency signals, ReplicaView::latency_s, in seconds). Above scale_up_above it
// starts as many replicas as would bring the signal down to the threshold at the same load,
// ceil(ready x signal / scale_up_above), less those ready or starting already; a new replica takes
// calls startup_s later (its model load). Below scale_down_below, with none starting, it drains
// one ready replica (the one with the fewest live sessions, the newest among equals): it takes no
// new call and leaves when its last call hangs up. The fleet's one group is the replica it scales;
// its count is how many are ready at 0 s.
#pragma once

#include <cstdint>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>

#include "base/json_section.h"

namespace metronome {

struct AutoscaleConfig {
  std::string signal;  // sessions | kv_usage | latency
  double scale_up_above = 0;
  double scale_down_below = 0;
  int64_t min_replicas = 1;
  int64_t max_replicas = 1;
  double startup_s = 0;    // from the decision to the first call it may take (model load)
  double interval_s = 10;  // between readings of the signal
};

struct ScaleDecision {
  int64_t start = 0;   // replicas to start now
  bool drain = false;  // drain one ready replica
};

// The rule, applied at each reading: `ready` replicas take calls, `starting` more are loading.
ScaleDecision decide_scale(const AutoscaleConfig& c, double signal, int64_t ready,
                           int64_t starting);

// `a`: fleet.autoscale; `initial`: the group's count, which must lie in [min, max].
std::shared_ptr<const AutoscaleConfig> parse_autoscale(JsonSection& a, int64_t initial,
                                                       double horizon_s);
nlohmann::json to_json(const AutoscaleConfig& c);

}  // namespace metronome
