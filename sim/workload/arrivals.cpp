#include "sim/workload/arrivals.h"

#include "sim/config/config_limits.h"
#include "sim/config/scenario.h"

namespace metronome {

double parse_start_s(JsonSection& a) { return a.in_range("start_s", 0.0, 0, kMaxSeconds); }

int64_t parse_sessions(JsonSection& a) {
  return a.integer("sessions", std::nullopt, 0, static_cast<int64_t>(kMaxCallers));
}

std::string check_sessions_size(int64_t sessions) {
  if (static_cast<double>(sessions) <= kMaxCallers) return "";
  return "sessions: expected at most 1e7 callers per run, got " + std::to_string(sessions);
}

std::unique_ptr<ArrivalProcess> make_arrival_process(const ArrivalConfig& c) {
  return c.policy->make_process();
}

}  // namespace metronome
