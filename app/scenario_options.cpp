#include "app/scenario_options.h"

#include <fmt/format.h>

#include <iostream>

#include "app/option_checks.h"
#include "sim/closed_form/service_rate.h"
#include "sim/cost/cost_model.h"
#include "sim/fleet/fleet_config.h"
#include "sim/pool/pool_sizing.h"

namespace metronome::cli {

void ScenarioOptions::add_to(CLI::App& app, bool runs) {
  app.add_option("--scenario", scenario,
                 "Scenario JSON file (default: the built-in scenarios/default.json: Moshi on one "
                 "H200, 300 sessions, unbounded KV, 30 simulated minutes)");
  app.add_option(
         "--set", sets,
         "Override one field, KEY=VALUE with a dotted key, e.g. --set "
         "workload.frame_period_s=0.08 --set kv_policy.type=windowed; repeatable; VALUE is "
         "JSON where it parses, else a string; model=NAME and gpu=NAME swap the description")
      ->type_name("KEY=VALUE");
  if (!runs) return;
  app.add_option("--seed", seed, "Random seed (overrides the scenario's \"seed\"; default 1)")
      ->check(kDecimalInteger);
  app.add_flag("--json", json, "Print the JSON result to stdout instead of a short summary");
}

namespace {

// An explicit pool (vLLM's logged count) larger than the memory the GPU leaves for KV: a count
// from another setup, or a model or GPU that is not the server's. The run would hold more KV than
// the card could.
void warn_oversized_pool(Scenario& s) {
  if (s.fleet || !s.engine.num_blocks) return;
  PoolSizing p;
  try {
    p = size_pool(s);
  } catch (const ConfigError&) {
    return;  // said where the run sizes its pool
  }
  const double kv = static_cast<double>(p.num_blocks) * static_cast<double>(p.block_bytes);
  if (kv <= p.usable_bytes) return;
  s.warnings.push_back(fmt::format(
      "engine.num_gpu_blocks {} x {:.3g} MB per block = {:.2f} GB of KV is more than the {:.2f} GB "
      "that {:.2f} GB x gpu_memory_utilization {:g}, less model {}'s weights and the activations, "
      "leave on {}: check that the model, GPU and dtype are the server's",
      p.num_blocks, static_cast<double>(p.block_bytes) / 1e6, kv / 1e9, p.usable_bytes / 1e9,
      s.gpu.memory_bytes / 1e9, s.engine.gpu_memory_utilization, s.model.name, s.gpu.name));
}

}  // namespace

Scenario ScenarioOptions::load() const {
  std::vector<std::string> all = sets;
  if (seed) {
    for (const std::string& set : sets) {
      if (set.substr(0, set.find('=')) == "seed") {
        throw ConfigError("--seed " + std::to_string(*seed) + " and --set " + set +
                          " both give the seed; expected one of them");
      }
    }
    all.push_back("seed=" + std::to_string(*seed));
  }
  Scenario s = load_scenario(scenario, all);
  warn_oversized_pool(s);
  // Loud: a warning is a value that was accepted but probably not meant.
  for (const auto& w : s.warnings) std::cerr << "metronome: warning: " << w << "\n";
  return s;
}

Scenario ScenarioOptions::load_engine(std::string_view command) const {
  Scenario s = load();
  refuse_fleet(s, command);
  return s;
}

void QualityFloorOptions::add_to(CLI::App& app) {
  app.add_option("--quality", quality,
                 "A `metronome quality --json` output: its (W, S) perplexity ratios to full "
                 "attention are the quality measure (with --max-ppl-ratio)");
  app.add_option("--max-ppl-ratio", max_ppl_ratio,
                 "Quality floor: the largest perplexity ratio to full attention acceptable "
                 "(needs --quality)")
      ->check(kFiniteNumber)
      ->check(CLI::Range(1.0, 1e6));
}

std::string cost_model_choice(const Scenario& s) {
  if (s.cost_model.chosen.empty()) return "";
  return "chosen     cost model " + s.cost_model.chosen + "\n";
}

std::string cost_model_spread(const Scenario& s, const FirstOrderPrediction& p) {
  std::vector<std::string> types = {"roofline"};
  if (s.gpu.roofline_correction.present) types.push_back("corrected_roofline");
  if (s.gpu.shape_aware_correction.present && !s.model.moe())
    types.push_back("shape_aware_roofline");
  if (s.cost_model.type == "calibrated") types.push_back("calibrated");
  if (types.size() < 2) return "";
  std::string line;
  double lo = 0, hi = 0;
  ServiceCheck any;
  for (const auto& t : types) {
    Scenario v = s;
    v.cost_model.type = t;
    const ServiceCheck c = check_service(v, p, *make_unchecked_cost_model(v));
    any = c;
    lo = line.empty() ? c.work_s : std::min(lo, c.work_s);
    hi = line.empty() ? c.work_s : std::max(hi, c.work_s);
    line += fmt::format("{}{} {:.1f} ms{}", line.empty() ? "" : ", ", t, c.work_s * 1e3,
                        t == s.cost_model.type ? " (used)" : "");
  }
  return fmt::format(
      "spread     one period's frames of {} sessions at {} cached tokens, in full steps of {}: {}; "
      "{:.2f}x apart{}\n",
      any.sessions, any.context, any.step_sessions, line, lo > 0 ? hi / lo : 0.0,
      (lo <= any.period_s) != (hi <= any.period_s)
          ? fmt::format(": whether the engine keeps up with the {:.0f} ms period depends on it",
                        any.period_s * 1e3)
          : "");
}

}  // namespace metronome::cli
