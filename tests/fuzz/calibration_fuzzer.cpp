// libFuzzer target over the calibration reader (sim/cost/calibrated_cost_model.h) and what reads
// an accepted file: the cost model on a few pass shapes, the step bounds of a scenario that uses
// it, and `calibrate report` (calibrate/report.h). Any outcome but success or a ConfigError is a
// finding, and so is a non-finite or negative pass time from an accepted file, a non-finite number
// in the report's JSON, or "inf"/"nan" in its text (outside the two label lines, which quote the
// file's own strings).
#include <cmath>
#include <string>

#include "base/config_error.h"
#include "base/json_file.h"
#include "calibrate/report.h"
#include "sim/config/scenario.h"
#include "sim/cost/calibrated_cost_model.h"
#include "sim/cost/step_time.h"
#include "tests/fuzz/fuzz_input.h"

using namespace metronome;

namespace {

bool all_finite(const nlohmann::json& j) {
  if (j.is_number_float()) return std::isfinite(j.get<double>());
  if (j.is_structured()) {
    for (const auto& v : j) {
      if (!all_finite(v)) return false;
    }
  }
  return true;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const fuzz::Input in = fuzz::split_input(data, size);
  try {
    const nlohmann::json file = parse_json(in.json, "fuzz.json");
    const Calibration c = parse_calibration(file, "fuzz.json");
    const CalibratedCostModel model(c, 0.001);
    for (int64_t sessions : {1, 7, 256}) {
      for (int64_t ctx : {0, 100, 100000}) {
        PassShape p;
        p.sessions = sessions;
        p.query_tokens = sessions * 4;
        p.kv_read_tokens = sessions * ctx;
        p.qk_pairs = static_cast<double>(p.query_tokens) * static_cast<double>(ctx + 4);
        const double t = model.pass_seconds(p);
        if (!std::isfinite(t) || t < 0) fuzz::wrong("an accepted calibration gave a bad pass time");
      }
    }
    // The same file through a scenario: the step bound, then the report. Only the shipped
    // models can match a calibration's model name; others are refused by load_scenario.
    Scenario s = load_scenario("", {"model=" + c.model_name});
    if (s.model.layers != c.model.layers) return 0;
    check_step_bounds(s, model);
    const auto r = calibrate::compare_with_roofline(file, c, s, std::nullopt);
    if (!all_finite(calibrate::report_json(r))) fuzz::wrong("calibrate report JSON has inf/nan");
    const std::string t = calibrate::report_text(r);
    const size_t numbers = t.find('\n', t.find('\n') + 1);  // after the two label lines
    if (numbers != std::string::npos && (t.find("inf", numbers) != std::string::npos ||
                                         t.find("nan", numbers) != std::string::npos)) {
      fuzz::wrong("calibrate report printed inf or nan");
    }
  } catch (const ConfigError&) {
  }
  return 0;
}
