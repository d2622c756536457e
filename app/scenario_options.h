// The options every scenario-driven subcommand shares: --scenario, --set, --seed, --json.
#pragma once

#include <CLI/CLI.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/config_error.h"
#include "sim/analysis/recommend.h"
#include "sim/closed_form/first_order.h"
#include "sim/config/scenario.h"

namespace metronome::cli {

struct ScenarioOptions {
  std::string scenario;
  std::vector<std::string> sets;
  std::optional<uint64_t> seed;
  bool json = false;

  // `runs`: the command runs the scenario (--seed and --json mean something); admit does not.
  void add_to(CLI::App& app, bool runs = true);
  Scenario load() const;
  // load() for a command that answers for one engine (`command`: its name): a fleet scenario is
  // refused (ConfigError, exit 2), saying what to run instead, rather than answered for one
  // replica as if it were the fleet.
  Scenario load_engine(std::string_view command) const;
};

// --quality FILE and --max-ppl-ratio R, the quality floor recommend and plan both take: fills a
// spec's ppl_ratio, max_ppl_ratio and quality_source (RecommendSpec, PlanSpec).
struct QualityFloorOptions {
  std::string quality;
  double max_ppl_ratio = 0;

  void add_to(CLI::App& app);
  template <class Spec>
  void apply(Spec& spec) const {
    if (max_ppl_ratio > 0) {
      if (quality.empty()) throw ConfigError("--max-ppl-ratio: needs --quality FILE");
      spec.max_ppl_ratio = max_ppl_ratio;
    }
    if (!quality.empty()) {
      spec.ppl_ratio = read_ppl_ratios(quality);
      spec.quality_source = quality_source(quality);
    }
  }
};

// One line for predict and simulate: one period's frames priced by each cost model the GPU has
// (the raw datasheet roofline, the roofline corrected to measured kernel times, and the scenario's
// calibration), so a user sees how far the answer moves with the choice.
std::string cost_model_spread(const Scenario& s, const FirstOrderPrediction& p);
// Where the scenario named no cost model: which one was chosen and why (choose_cost_model), as a
// summary line; empty otherwise.
std::string cost_model_choice(const Scenario& s);

}  // namespace metronome::cli
