// `metronome simulate` on a scenario with a fleet section (docs/fleet.md): the fleet's summary on
// stdout, and with --out the fleet's files and one single-engine run folder per replica.
#pragma once

#include <string>

#include "sim/config/scenario.h"

namespace metronome::cli {

struct FleetRunOptions {
  std::string out;
  bool json = false;
  int threads = 1;
};

int simulate_fleet(const Scenario& s, const FleetRunOptions& o);

}  // namespace metronome::cli
