#include "sim/cost/cost_model.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <iostream>

#include "base/config_error.h"
#include "sim/cost/calibrated_cost_model.h"
#include "sim/cost/corrected_roofline_cost_model.h"
#include "sim/cost/fixed_cost_model.h"
#include "sim/cost/roofline_cost_model.h"
#include "sim/cost/step_time.h"
#include "sim/cost/tensor_parallel_cost_model.h"
#include "sim/scenario.h"

namespace metronome {
namespace {

std::string lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return std::tolower(c); });
  return s;
}

}  // namespace

void choose_cost_model(Scenario& s) {
  std::string passed = "no measured calibration";  // or why it was passed over
  if (const std::string& file = s.gpu.measured_calibration; !file.empty()) {
    try {
      if (s.model.experts > 0) {
        throw ConfigError("its per-op scaling does not cover experts (model " + s.model.name + ")");
      }
      Calibration c = read_calibration(file);
      if (c.model_name != s.model.name) {
        if (!c.has_scaling) {
          throw ConfigError("it calibrates model " + c.model_name + " and cannot be scaled");
        }
        c = scale_calibration(c, s.model);
      }
      s.cost_model.type = "calibrated";
      s.cost_model.file = file;
      s.cost_model.chosen = fmt::format(
          "calibrated (the best {} has: its measured calibration {}{}); --set "
          "cost_model.type=corrected_roofline or roofline for the analytic ones",
          s.gpu.name, std::filesystem::path(file).filename().string(),
          c.model_name != s.model.name || !c.scaled_from.empty()
              ? ", scaled op by op to " + s.model.name
              : "");
      return;
    } catch (const std::exception& e) {  // a missing or unreadable file included
      passed = fmt::format("its measured calibration {} does not apply ({})",
                           std::filesystem::path(file).filename().string(), e.what());
    }
  }
  if (s.gpu.roofline_correction.present) {
    s.cost_model.type = "corrected_roofline";
    s.cost_model.chosen = fmt::format(
        "corrected_roofline (the best {} has: {}; its roofline_correction, "
        "fitted on {}); --set cost_model.type=roofline for the datasheet roofline",
        s.gpu.name, passed, s.gpu.roofline_correction.fitted_on);
  } else {
    s.cost_model.type = "roofline";
    s.cost_model.chosen = fmt::format("roofline (the best {} has: {}, and no roofline_correction)",
                                      s.gpu.name, passed);
  }
}

std::unique_ptr<CostModel> make_cost_model(const Scenario& s) {
  std::unique_ptr<CostModel> m = make_unchecked_cost_model(s);
  check_step_bounds(s, *m);
  return m;
}

std::unique_ptr<CostModel> make_unchecked_cost_model(const Scenario& s) {
  if (const int64_t k = s.engine.tensor_parallel; k > 1) {
    // The scenario's own cost model, built for one GPU's slice, wrapped with the all-reduces.
    Scenario slice = s;
    slice.model = tensor_parallel_slice(s.model, k);
    slice.engine.tensor_parallel = 1;
    return std::make_unique<TensorParallelCostModel>(make_unchecked_cost_model(slice), s.model,
                                                     s.gpu, k);
  }
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
