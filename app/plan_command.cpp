#include <iostream>
#include <memory>

#include "app/commands.h"
#include "app/scenario_options.h"
#include "base/config_error.h"
#include "base/output_number.h"
#include "sim/analysis/plan.h"
#include "sim/analysis/recommend.h"

namespace metronome::cli {

Run add_plan(CLI::App& app) {
  auto* cmd = app.add_subcommand(
      "plan",
      "The cheapest fleet for the scenario's traffic (e.g. a workload.arrival profile): for each "
      "candidate GPU x tensor-parallel degree x window W x sinks S, the fewest replicas whose "
      "simulated fleet has no stalled replica, no call turned away and its true p99 within the "
      "frame deadline, priced by the GPU files' price_per_gpu_hour. Prints the best and the "
      "runners-up; progress on stderr.");
  struct Options {
    ScenarioOptions scenario;
    PlanSpec spec;
    QualityFloorOptions quality_floor;
    std::string autoscale;
  };
  auto o = std::make_shared<Options>();
  o->scenario.add_to(*cmd);
  cmd->add_option("--gpus", o->spec.gpus,
                  "Candidate GPUs, names or GPU files, each with price_per_gpu_hour (default "
                  "h100,h200)")
      ->delimiter(',');
  cmd->add_option("--tp", o->spec.tensor_parallel,
                  "Tensor-parallel degrees to try (default 1,2,4,8); those the model refuses are "
                  "skipped")
      ->delimiter(',')
      ->check(CLI::IsMember({int64_t{1}, int64_t{2}, int64_t{4}, int64_t{8}}));
  cmd->add_option("--windows", o->spec.windows,
                  "Window sizes W to try, tokens (default 240 480 960 1920)")
      ->delimiter(',')
      ->check(CLI::Range(int64_t{1}, int64_t{10'000'000}));
  cmd->add_option("--sinks", o->spec.sinks, "Sink sizes S to try, tokens (default 16)")
      ->delimiter(',')
      ->check(CLI::Range(int64_t{0}, int64_t{10'000'000}));
  cmd->add_option("--max-replicas", o->spec.max_replicas,
                  "Largest fleet tried per candidate (default 64)")
      ->check(CLI::Range(int64_t{1}, int64_t{10'000}));
  cmd->add_option("--autoscale", o->autoscale,
                  "Also try each candidate autoscaled: a fleet.autoscale section as JSON, without "
                  "max_replicas (the count searched), e.g. '{\"signal\": \"kv_usage\", "
                  "\"scale_up_above\": 0.6, \"scale_down_below\": 0.3, \"startup_s\": 120}'; "
                  "priced by the GPU-hours it ran");
  o->quality_floor.add_to(*cmd);
  cmd->add_option("-j,--jobs", o->spec.jobs,
                  "Worker threads over candidates (default 1); results do not depend on it")
      ->check(CLI::Range(1, 256));
  return [o]() {
    const Scenario s = o->scenario.load();
    PlanSpec spec = o->spec;
    if (s.fleet) throw ConfigError(s.source + ": fleet: plan sizes the fleet itself; remove it");
    if (spec.gpus.empty()) throw ConfigError("--gpus: expected at least one GPU");
    o->quality_floor.apply(spec);
    if (!o->autoscale.empty()) {
      spec.autoscale = nlohmann::json::parse(o->autoscale, nullptr, false);
      if (spec.autoscale.is_discarded() || !spec.autoscale.is_object()) {
        throw ConfigError("--autoscale: expected a JSON object (a fleet.autoscale section)");
      }
    }
    spec.progress = true;  // stderr_progress decides: terminal or not, --quiet
    const Plan p = plan(s, spec);
    if (o->scenario.json) {
      std::cout << output_text(plan_json(s, spec, p)) << "\n";
    } else {
      std::cout << plan_text(s, spec, p);
    }
    return 0;  // no fleet that meets the tests is an answer too: "best" is null
  };
}

}  // namespace metronome::cli
