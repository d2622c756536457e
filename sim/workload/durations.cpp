#include "sim/workload/durations.h"

#include "sim/config/scenario.h"

namespace metronome {

double parse_call_seconds(JsonSection& d, std::string_view key) {
  return d.in_range(key, std::nullopt, 1e-9, kMaxSeconds);
}

std::unique_ptr<DurationDistribution> make_duration_distribution(const DurationConfig& c) {
  return c.policy->make_distribution();
}

}  // namespace metronome
