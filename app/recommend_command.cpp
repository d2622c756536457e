#include <fstream>
#include <iostream>
#include <memory>

#include "app/commands.h"
#include "app/list_option.h"
#include "app/option_checks.h"
#include "app/scenario_options.h"
#include "base/config_error.h"
#include "base/json_file.h"
#include "base/json_section.h"
#include "base/output_number.h"
#include "sim/analysis/recommend.h"

namespace metronome::cli {

Run add_recommend(CLI::App& app) {
  auto* cmd = app.add_subcommand(
      "recommend",
      "Pick the window W and sinks S that serve the most sessions on time: for each (W, S) of a "
      "grid, the memory cap, the deadline cap and N* (sessions served at steady state under the "
      "scenario's admission controller, default AIMD) across seeds; the best cell meets the "
      "quality floor and has no stalled, collapsed or late run. Prints the ranked table.");
  struct Options {
    ScenarioOptions scenario;
    std::vector<int64_t> windows{240, 480, 960, 1920};
    std::vector<int64_t> sinks{0, 4, 16};
    int64_t seeds = 5;
    int64_t min_window = 0, min_sinks = 0;
    QualityFloorOptions quality_floor;
    double quality_within_pct = 5;
    int jobs = 1;
  };
  auto o = std::make_shared<Options>();
  o->scenario.add_to(*cmd);
  add_list_option(*cmd, "--windows", o->windows,
                  "Window sizes W to try, tokens (default 240 480 960 1920)",
                  {kDecimalInteger, CLI::Range(int64_t{1}, int64_t{10'000'000})});
  add_list_option(*cmd, "--sinks", o->sinks, "Sink sizes S to try, tokens (default 0 4 16)",
                  {kDecimalInteger, CLI::Range(int64_t{0}, int64_t{10'000'000})});
  cmd->add_option("--seeds", o->seeds, "Seeds per cell for N* (default 5: seed, seed+1, ...)")
      ->check(CLI::Range(int64_t{1}, int64_t{10'000}));
  cmd->add_option("--min-window", o->min_window,
                  "Quality floor: the smallest window acceptable, tokens (default 0)")
      ->check(kDecimalInteger)
      ->check(CLI::Range(int64_t{0}, int64_t{10'000'000}));
  cmd->add_option("--min-sinks", o->min_sinks,
                  "Quality floor: the fewest sink tokens acceptable (default 0)")
      ->check(kDecimalInteger)
      ->check(CLI::Range(int64_t{0}, int64_t{10'000'000}));
  o->quality_floor.add_to(*cmd);
  cmd->add_option("--quality-within", o->quality_within_pct,
                  "Also show the eligible (W, S) of best quality (lowest perplexity ratio, else "
                  "the most tokens kept) whose N* is within this percentage of the best N* "
                  "(default 5)")
      ->check(kFiniteNumber)
      ->check(CLI::Range(0.0, 100.0));
  cmd->add_option("-j,--jobs", o->jobs, "Worker threads (default 1); results do not depend on it")
      ->check(CLI::Range(1, 256));
  return [o]() {
    // N* needs a controller. Where the scenario has none, AIMD: loaded under the user's --sets so
    // that their admission.* fields are AIMD's (not warned about as ignored, then dropped).
    ScenarioOptions options = o->scenario;
    // (A fleet is refused below, by the scenario's own name.)
    if (const Scenario peek = load_scenario(options.scenario, options.sets);
        !peek.fleet && !peek.admission.policy->limits()) {
      options.sets.insert(options.sets.begin(), "admission.type=aimd");
    }
    Scenario s = options.load_engine("recommend");
    if (!s.admission.policy->limits()) {  // --set admission.type=none: AIMD with its defaults
      const nlohmann::json aimd = {{"type", "aimd"}};
      JsonSection section(aimd, s.source, "admission");
      s.admission.policy = admission_policies().parse(section, std::nullopt);
    }
    RecommendSpec spec;
    spec.windows = o->windows;
    spec.sinks = o->sinks;
    spec.seeds = o->seeds;
    spec.min_window = o->min_window;
    spec.min_sinks = o->min_sinks;
    spec.jobs = o->jobs;
    spec.progress = true;  // stderr_progress decides: terminal or not, --quiet
    o->quality_floor.apply(spec);
    spec.quality_within = o->quality_within_pct / 100;
    const Recommendation r = recommend(s, spec);
    if (o->scenario.json) {
      std::cout << output_text(recommend_json(s, spec, r)) << "\n";
    } else {
      std::cout << recommend_text(s, r);
    }
    return 0;  // no eligible cell is an answer too: "best" is null
  };
}

}  // namespace metronome::cli
