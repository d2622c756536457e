// What a --set did not do: the assignments of a loaded scenario that reach nothing it runs (a field
// only another policy type reads, one a fleet group sets for itself, a datasheet value a measured
// cost model never prices from). Each is a warning, so that a change a user asked for never looks
// applied when it was not. Fields a file keeps for another type, ready for a `--set ...type=` flip,
// are the file's business and stay quiet.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "sim/config/scenario.h"

namespace metronome {

// The key of a --set assignment KEY=VALUE (all of it, without a '=').
std::string set_key(const std::string& assignment);

// `described`: the scenario's JSON with its descriptions swapped in (model=, gpu=) but no field
// set yet; `resolved`: with every --set applied; `s`: what parse_scenario made of it.
std::vector<std::string> unused_set_warnings(const Scenario& s, const nlohmann::json& described,
                                             const nlohmann::json& resolved,
                                             const std::vector<std::string>& sets);

}  // namespace metronome
