#include "sim/cost/cost_model.h"

#include <algorithm>
#include <cctype>
#include <iostream>

#include "sim/config_error.h"
#include "sim/cost/calibrated_cost_model.h"
#include "sim/cost/corrected_roofline_cost_model.h"
#include "sim/cost/fixed_cost_model.h"
#include "sim/cost/roofline_cost_model.h"
#include "sim/cost/step_time.h"
#include "sim/scenario.h"

namespace metronome {
namespace {

std::string lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return std::tolower(c); });
  return s;
}

}  // namespace

std::unique_ptr<CostModel> make_cost_model(const Scenario& s) {
  std::unique_ptr<CostModel> m = make_unchecked_cost_model(s);
  check_step_bounds(s, *m);
  return m;
}

std::unique_ptr<CostModel> make_unchecked_cost_model(const Scenario& s) {
  if (s.cost_model.type == "fixed")
    return std::make_unique<FixedCostModel>(s.cost_model.step_overhead_s);
  if (s.cost_model.type == "roofline") {
    return std::make_unique<RooflineCostModel>(s.model, s.gpu, s.cost_model.step_overhead_s);
  }
  if (s.cost_model.type == "corrected_roofline") {
    try {
      return std::make_unique<CorrectedRooflineCostModel>(s.model, s.gpu,
                                                          s.cost_model.step_overhead_s);
    } catch (const ConfigError& e) {
      throw ConfigError(s.source + ": " + e.what());
    }
  }
  Calibration c = read_calibration(s.cost_model.file);
  // A calibration of another model has the wrong coefficients for every term: scale it op by op
  // where the file says how (an imported profile), refuse it otherwise.
  if (c.model_name != s.model.name && c.has_scaling) {
    try {
      c = scale_calibration(c, s.model);
    } catch (const ConfigError& e) {
      throw ConfigError(s.source + ": cost_model.file: " + e.what());
    }
  }
  if (c.model_name != s.model.name) {
    throw ConfigError(s.source + ": cost_model.file: " + c.source + " calibrates model \"" +
                      c.model_name + "\", the scenario runs \"" + s.model.name +
                      "\"; calibrate this model or use cost_model.type \"roofline\"");
  }
  if (c.model.layers != s.model.layers) {
    throw ConfigError(s.source + ": cost_model.file: " + c.source + " has model.layers " +
                      std::to_string(c.model.layers) + ", the scenario's model has " +
                      std::to_string(s.model.layers));
  }
  // Another device is legitimate (a CPU calibration in CI, a GPU without a file yet) but must be
  // visible: the pool is sized from the scenario's GPU while the time comes from the file's device.
  if (c.backend == "cpu") {
    std::cerr << "metronome: warning: " << c.source << " was measured on a CPU (" << c.device_name
              << "), not on the scenario's GPU \"" << s.gpu.name << "\"\n";
  } else if (lower(c.device_name).find(lower(s.gpu.name)) == std::string::npos) {
    std::cerr << "metronome: warning: " << c.source << " describes device \"" << c.device_name
              << "\", the scenario's GPU is \"" << s.gpu.name << "\"\n";
  }
  return std::make_unique<CalibratedCostModel>(std::move(c), s.cost_model.step_overhead_s);
}

}  // namespace metronome
