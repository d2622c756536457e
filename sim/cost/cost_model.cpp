#include "sim/cost/cost_model.h"

#include "sim/config_error.h"
#include "sim/cost/roofline_cost_model.h"
#include "sim/scenario.h"

namespace metronome {

std::unique_ptr<CostModel> make_cost_model(const Scenario& s) {
  if (s.cost_model.type == "roofline") {
    return std::make_unique<RooflineCostModel>(s.model, s.gpu, s.cost_model.step_overhead_s);
  }
  throw ConfigError(s.source + ": cost_model.type: \"calibrated\" needs a calibration file reader, "
                               "which this build does not have yet; use \"roofline\"");
}

}  // namespace metronome
