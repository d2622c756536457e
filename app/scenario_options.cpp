#include "app/scenario_options.h"

#include "app/option_checks.h"

namespace metronome::cli {

void ScenarioOptions::add_to(CLI::App& app) {
  app.add_option("--scenario", scenario,
                 "Scenario JSON file (default: the built-in scenarios/default.json: Moshi on one "
                 "H200, 300 sessions, unbounded KV, 30 simulated minutes)");
  app.add_option(
         "--set", sets,
         "Override one field, KEY=VALUE with a dotted key, e.g. --set "
         "workload.frame_period_s=0.08 --set kv_policy.type=windowed; repeatable; VALUE is "
         "JSON where it parses, else a string; model=NAME and gpu=NAME swap the description")
      ->type_name("KEY=VALUE");
  app.add_option("--seed", seed, "Random seed (overrides the scenario's \"seed\"; default 1)")
      ->check(kDecimalInteger);
  app.add_flag("--json", json, "Print the JSON result to stdout instead of a short summary");
}

Scenario ScenarioOptions::load() const {
  std::vector<std::string> all = sets;
  if (seed) all.push_back("seed=" + std::to_string(*seed));
  return load_scenario(scenario, all);
}

}  // namespace metronome::cli
