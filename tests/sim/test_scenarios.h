// Small scenarios built in code for tests, from the shipped model and GPU files.
#pragma once

#include <string>
#include <vector>

#include "sim/config/scenario.h"

namespace metronome::testing {

// Moshi on H200 with N callers at once, 80 ms frames, one KV token per frame, a short horizon;
// windowed: 480 + 16 sinks.
inline Scenario moshi(int64_t sessions, const std::string& policy = "unbounded",
                      std::vector<std::string> extra = {}) {
  std::vector<std::string> sets = {
      "workload.arrival={\"type\":\"all_at_once\",\"sessions\":" + std::to_string(sessions) + "}",
      "kv_policy.type=" + policy, "horizon_s=240",
      "workload.duration={\"type\":\"fixed\",\"seconds\":240}"};
  if (policy == "windowed") {
    sets.insert(sets.end(), {"kv_policy.window_tokens=480", "kv_policy.sink_tokens=16"});
  }
  sets.insert(sets.end(), extra.begin(), extra.end());
  return load_scenario("", sets);
}

}  // namespace metronome::testing
