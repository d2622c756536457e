#include "sim/cost/cost_models.h"

#include "sim/config/scenario.h"
#include "sim/cost/calibrated_cost_model.h"
#include "sim/cost/corrected_roofline_cost_model.h"
#include "sim/cost/fixed_cost_model.h"
#include "sim/cost/roofline_cost_model.h"
#include "sim/cost/shape_aware_roofline_cost_model.h"

namespace metronome {

const std::vector<CostModelKind>& cost_model_kinds() {
  static const std::vector<CostModelKind> kinds = {
      {"roofline",
       [](const Scenario& s) {
         return std::make_unique<RooflineCostModel>(s.model, s.gpu, s.cost_model.step_overhead_s);
       }},
      {"corrected_roofline",
       [](const Scenario& s) {
         return std::make_unique<CorrectedRooflineCostModel>(s.model, s.gpu,
                                                             s.cost_model.step_overhead_s);
       }},
      {"shape_aware_roofline",
       [](const Scenario& s) {
         return std::make_unique<ShapeAwareRooflineCostModel>(s.model, s.gpu,
                                                              s.cost_model.step_overhead_s);
       }},
      {"calibrated", &make_calibrated_cost_model},
      {"fixed",
       [](const Scenario& s) {
         return std::make_unique<FixedCostModel>(s.cost_model.step_overhead_s);
       }},
  };
  return kinds;
}

std::vector<std::string> cost_model_types() {
  std::vector<std::string> t;
  for (const auto& k : cost_model_kinds()) t.push_back(k.type);
  return t;
}

}  // namespace metronome
