#include <iostream>
#include <memory>

#include "app/commands.h"
#include "app/scenario_options.h"
#include "base/output_number.h"
#include "base/version.h"
#include "sim/analysis/report.h"
#include "sim/closed_form/first_order.h"
#include "sim/closed_form/service_rate.h"

namespace metronome::cli {

Run add_predict(CLI::App& app) {
  auto* cmd = app.add_subcommand(
      "predict",
      "Predict when the KV pool saturates (t_sat) from the first-order model, without simulating: "
      "rho(t) = rho0 + N r t for simultaneous callers, summed session ages for staggered ones, in "
      "continuous and whole-block form; for windowed KV, the per-session bound and memory cap.");
  auto o = std::make_shared<ScenarioOptions>();
  o->add_to(*cmd);
  return [o]() {
    const Scenario s = o->load_engine("predict");
    auto p = predict_first_order(s);
    p.service = check_service(s, p, *make_cost_model(s));
    if (o->json) {
      nlohmann::json j = {{"metronome_version", version_string()},
                          {"scenario", to_json(s)},
                          {"prediction", prediction_json(s, p)}};
      if (!s.warnings.empty()) j["warnings"] = s.warnings;
      if (!s.cost_model.chosen.empty()) j["cost_model_chosen"] = s.cost_model.chosen;
      std::cout << output_text(j) << "\n";
    } else {
      std::cout << prediction_text(s, p) << frame_passes_text(s, p) << cost_model_choice(s)
                << cost_model_spread(s, p);
    }
    return 0;
  };
}

}  // namespace metronome::cli
