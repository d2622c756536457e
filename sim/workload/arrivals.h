// Arrival processes: when callers arrive. The scenario's workload.arrival section names one
// registered ArrivalPolicy by its `type` (arrival_policies(), sim/workload/arrival_policies.cpp);
// each policy is one file that reads and writes its own fields and makes the process a run draws
// its arrival instants from.
#pragma once

#include <cstdint>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "base/json_section.h"
#include "base/rng.h"
#include "base/time.h"
#include "sim/policy/policy_registry.h"

namespace metronome {

class ArrivalProcess {
 public:
  virtual ~ArrivalProcess() = default;
  // The next arrival time (non-decreasing), or nullopt when no caller is left.
  virtual std::optional<Time> next(Rng& rng) = 0;
};

class ArrivalPolicy {
 public:
  virtual ~ArrivalPolicy() = default;
  virtual std::string type() const = 0;
  // Writes exactly the fields the type's parse reads (never `type`), so parse(write) is identity.
  virtual void write(nlohmann::json& section) const = 0;
  // A fresh process for one run, drawing from the run's arrival stream.
  virtual std::unique_ptr<ArrivalProcess> make_process() const = 0;
  // The earliest arrival, s.
  virtual double start_s() const = 0;
  // Arrival instants drawn from the seed, not fixed by the scenario.
  virtual bool random() const = 0;
  // Every caller arrives at start_s: one cohort, whose frames the service-rate model follows.
  virtual bool one_cohort() const { return false; }
  // Callers a run to horizon_s brings: the count, or its mean where the count is drawn.
  virtual double expected_callers(double horizon_s) const = 0;
  // Callers live at once when every call lasts call_s: what the pool is asked to hold.
  virtual double live_callers(double call_s) const = 0;
  // Empty, or "field: why" when a run to horizon_s would bring more than kMaxCallers
  // (sim/config/config_limits.h) callers.
  virtual std::string check_size(double horizon_s) const = 0;
};

// The fields more than one type reads, read and checked once.
double parse_start_s(JsonSection& a);    // start_s, default 0
int64_t parse_sessions(JsonSection& a);  // sessions, required: callers in all
std::string check_sessions_size(int64_t sessions);

// The registry of arrival policies (sim/workload/arrival_policies.cpp); tests may add to it.
PolicyRegistry<ArrivalPolicy>& arrival_policies();

struct ArrivalConfig;  // sim/config/scenario.h
std::unique_ptr<ArrivalProcess> make_arrival_process(const ArrivalConfig& c);

}  // namespace metronome
