// Arrival processes: when callers arrive. Chosen by workload.arrival.type.
#pragma once

#include <memory>
#include <optional>

#include "base/rng.h"
#include "base/time.h"
#include "sim/scenario.h"

namespace metronome {

class ArrivalProcess {
 public:
  virtual ~ArrivalProcess() = default;
  // The next arrival time (non-decreasing), or nullopt when no caller is left.
  virtual std::optional<Time> next(Rng& rng) = 0;
};

std::unique_ptr<ArrivalProcess> make_arrival_process(const ArrivalConfig& c);

}  // namespace metronome
