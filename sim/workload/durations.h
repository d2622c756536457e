// Session (call) durations. The scenario's workload.duration section names one registered
// DurationPolicy by its `type` (duration_policies(), sim/workload/duration_policies.cpp); each
// policy is one file that reads and writes its own fields and makes the distribution a run draws
// call lengths from.
#pragma once

#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "base/json_section.h"
#include "base/rng.h"
#include "base/time.h"
#include "sim/policy/policy_registry.h"

namespace metronome {

class DurationDistribution {
 public:
  virtual ~DurationDistribution() = default;
  // A duration in seconds, > 0. Heavy tails may exceed any horizon; the engine handles that.
  virtual double sample(Rng& rng) = 0;
  virtual double mean() const = 0;
};

class DurationPolicy {
 public:
  virtual ~DurationPolicy() = default;
  virtual std::string type() const = 0;
  // Writes exactly the fields the type's parse reads (never `type`), so parse(write) is identity.
  virtual void write(nlohmann::json& section) const = 0;
  virtual std::unique_ptr<DurationDistribution> make_distribution() const = 0;
  // Every call's length, s, where the scenario fixes it; nullopt where each call's is drawn
  // (unknown when the caller is admitted).
  virtual std::optional<double> fixed_s() const { return std::nullopt; }
  // A typical call's length, s: the fixed length, or the distribution's centre as its type
  // states it (the mean, the median).
  virtual double typical_s() const = 0;
};

// A call length in (0, 1e9] s, required: every type's seconds field.
double parse_call_seconds(JsonSection& d, std::string_view key);

// The registry of duration policies (sim/workload/duration_policies.cpp); tests may add to it.
PolicyRegistry<DurationPolicy>& duration_policies();

struct DurationConfig;  // sim/config/scenario.h
std::unique_ptr<DurationDistribution> make_duration_distribution(const DurationConfig& c);

}  // namespace metronome
