#include "sim/cost/cost_models.h"

#include <algorithm>

#include "sim/config/scenario.h"
#include "sim/cost/calibrated_cost_model.h"
#include "sim/cost/corrected_roofline_cost_model.h"
#include "sim/cost/fixed_cost_model.h"
#include "sim/cost/roofline_cost_model.h"
#include "sim/cost/shape_aware_roofline_cost_model.h"

namespace metronome {

const std::vector<CostModelKind>& cost_model_kinds() {
  static const std::vector<std::string> datasheet = {"memory_bandwidth_bytes_per_s", "bf16_flops"};
  static const std::vector<CostModelKind> kinds = {
      {"roofline",
       [](const Scenario& s) {
         return std::make_unique<RooflineCostModel>(s.model, s.gpu, s.cost_model.step_overhead_s);
       },
       datasheet},
      {"corrected_roofline",
       [](const Scenario& s) {
         return std::make_unique<CorrectedRooflineCostModel>(s.model, s.gpu,
                                                             s.cost_model.step_overhead_s);
       },
       {"memory_bandwidth_bytes_per_s", "bf16_flops", "roofline_correction"}},
      {"shape_aware_roofline",
       [](const Scenario& s) {
         return std::make_unique<ShapeAwareRooflineCostModel>(s.model, s.gpu,
                                                              s.cost_model.step_overhead_s);
       },
       datasheet},
      {"calibrated", &make_calibrated_cost_model, {}},
      {"fixed",
       [](const Scenario& s) {
         return std::make_unique<FixedCostModel>(s.cost_model.step_overhead_s);
       },
       {}},
  };
  return kinds;
}

bool cost_model_reads(const std::string& type, const std::string& gpu_field) {
  for (const auto& k : cost_model_kinds()) {
    if (k.type == type) return std::ranges::find(k.gpu_fields, gpu_field) != k.gpu_fields.end();
  }
  return false;
}

bool some_cost_model_reads(const std::string& gpu_field) {
  return std::ranges::any_of(cost_model_kinds(), [&](const CostModelKind& k) {
    return cost_model_reads(k.type, gpu_field);
  });
}

std::vector<std::string> cost_model_types() {
  std::vector<std::string> t;
  for (const auto& k : cost_model_kinds()) t.push_back(k.type);
  return t;
}

}  // namespace metronome
