// The registry of cost models: cost_model.type names one, and its entry builds it from the
// scenario. Adding a cost model is its own file and one line here (sim/cost/cost_models.cpp);
// the scenario's parse takes the accepted types from this list.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "sim/cost/cost_model.h"

namespace metronome {

struct Scenario;

struct CostModelKind {
  std::string type;
  // ConfigError (without the scenario's name, which the caller adds) when the scenario lacks what
  // this kind needs.
  std::function<std::unique_ptr<CostModel>(const Scenario&)> make;
  // The GPU file's fields (top-level keys) this kind prices steps from: a --set of another kind's
  // is said to do nothing (sim/config/unused_sets.cpp).
  std::vector<std::string> gpu_fields;
};

const std::vector<CostModelKind>& cost_model_kinds();
std::vector<std::string> cost_model_types();
// Whether some kind prices steps from gpu.<field>, and whether kind `type` does.
bool some_cost_model_reads(const std::string& gpu_field);
bool cost_model_reads(const std::string& type, const std::string& gpu_field);

}  // namespace metronome
