// Session (call) duration distributions. Chosen by workload.duration.type.
#pragma once

#include <memory>

#include "base/rng.h"
#include "base/time.h"
#include "sim/scenario.h"

namespace metronome {

class DurationDistribution {
 public:
  virtual ~DurationDistribution() = default;
  // A duration in seconds, > 0. Heavy tails may exceed any horizon; the engine handles that.
  virtual double sample(Rng& rng) = 0;
  virtual double mean() const = 0;
};

std::unique_ptr<DurationDistribution> make_duration_distribution(const DurationConfig& c);

}  // namespace metronome
