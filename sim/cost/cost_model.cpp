#include "sim/cost/cost_model.h"

#include <fmt/format.h>

#include <filesystem>
#include <iostream>

#include "base/config_error.h"
#include "sim/config/scenario.h"
#include "sim/cost/calibrated_cost_model.h"
#include "sim/cost/cost_models.h"
#include "sim/cost/step_time.h"
#include "sim/cost/tensor_parallel_cost_model.h"

namespace metronome {
void choose_cost_model(Scenario& s) {
  // A calibration file given under "auto" is the user's own measurement: the scenario is a
  // calibrated one on that file, as if it said so (nothing was chosen for it: plan keeps it too).
  if (!s.cost_model.file.empty()) {
    s.cost_model.type = "calibrated";
    return;
  }
  std::string passed = "no measured calibration";  // or why it was passed over
  if (const std::string& file = s.gpu.measured_calibration; !file.empty()) {
    try {
      if (s.model.experts > 0) {
        throw ConfigError("its per-op scaling does not cover experts (model " + s.model.name + ")");
      }
      Calibration c = read_calibration(file);
      if (!measured_on(c, s.model)) {
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
          !measured_on(c, s.model) || !c.scaled_from.empty()
              ? ", scaled op by op to " + s.model.name
              : "");
      return;
    } catch (const std::exception& e) {  // a missing or unreadable file included
      passed = fmt::format("its measured calibration {} does not apply ({})",
                           std::filesystem::path(file).filename().string(), e.what());
      // A file the GPU names that is not there is not a choice but a lost input: the same
      // scenario and seed would give other numbers where it is (the chosen line alone said so).
      std::error_code ec;
      if (!std::filesystem::is_regular_file(file, ec)) {
        s.warnings.push_back(fmt::format(
            "gpu {}: measured_calibration {} cannot be read, so the analytic cost model runs "
            "instead; expected the file (it ships in the source tree's results/calibration/)",
            s.gpu.name, file));
      }
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
  for (const auto& kind : cost_model_kinds()) {
    if (kind.type != s.cost_model.type) continue;
    try {
      return kind.make(s);
    } catch (const ConfigError& e) {
      throw ConfigError(s.source + ": " + e.what());
    }
  }
  throw std::logic_error("cost_model.type \"" + s.cost_model.type +
                         "\" is not registered (parse_cost_model accepts only registered types)");
}

}  // namespace metronome
