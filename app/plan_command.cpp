#include <iostream>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "app/commands.h"
#include "app/list_option.h"
#include "app/mpi_shards.h"
#include "app/option_checks.h"
#include "app/scenario_options.h"
#include "base/config_error.h"
#include "base/json_file.h"
#include "base/output_number.h"
#include "sim/analysis/plan.h"
#include "sim/analysis/recommend.h"
#include "sim/sweep/sweep_spec.h"

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
    std::string autoscale, shard;
    std::vector<std::string> merge;
    bool mpi = false;
  };
  auto o = std::make_shared<Options>();
  o->scenario.add_to(*cmd);
  add_list_option(*cmd, "--gpus", o->spec.gpus,
                  "Candidate GPUs, names or GPU files, each with price_per_gpu_hour (default "
                  "h100,h200)");
  add_list_option(
      *cmd, "--tp", o->spec.tensor_parallel,
      "Tensor-parallel degrees to try (default 1,2,4,8); those the model refuses are "
      "skipped",
      {kDecimalInteger, CLI::IsMember({int64_t{1}, int64_t{2}, int64_t{4}, int64_t{8}})});
  add_list_option(*cmd, "--windows", o->spec.windows,
                  "Window sizes W to try, tokens (default 240 480 960 1920)",
                  {kDecimalInteger, CLI::Range(int64_t{1}, int64_t{10'000'000})});
  add_list_option(*cmd, "--sinks", o->spec.sinks, "Sink sizes S to try, tokens (default 16)",
                  {kDecimalInteger, CLI::Range(int64_t{0}, int64_t{10'000'000})});
  add_list_option(*cmd, "--kv", o->spec.kv_policies,
                  "KV policies to try (default windowed): windowed (each W x S) and unbounded "
                  "(every caller keeps its whole context; one candidate per GPU x TP)",
                  {CLI::IsMember({std::string("windowed"), std::string("unbounded")})});
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
  auto* shard = cmd->add_option(
      "--shard", o->shard,
      "I/N: search only the candidates i with i % N == I (in the order GPU x TP x KV x W x S) and "
      "print that shard's result as JSON, to combine with --merge (job arrays)");
  auto* merge = cmd->add_option(
      "--merge", o->merge,
      "Shard files (plan --shard I/N's outputs, every I once, of the same options as here): "
      "print the plan they make together, byte for byte what one process prints");
  auto* mpi = cmd->add_flag(
      "--mpi", o->mpi,
      "Under mpirun: rank I of N searches shard I/N and rank 0 prints the plan merged from every "
      "rank's (the single-process output, byte for byte). Needs a build with MPI (OpenMPI)");
  shard->excludes(merge)->excludes(mpi);
  merge->excludes(mpi);
  return [o]() {
    const Scenario s = o->scenario.load();
    PlanSpec spec = o->spec;
    if (s.fleet) throw ConfigError(s.source + ": fleet: plan sizes the fleet itself; remove it");
    if (spec.gpus.empty()) throw ConfigError("--gpus: expected at least one GPU");
    o->quality_floor.apply(spec);
    if (!o->autoscale.empty()) {
      // As strict as a scenario file's own fleet.autoscale (a key given twice is an error).
      const auto parsed = parse_json_if_json(o->autoscale, "--autoscale");
      if (!parsed || !parsed->is_object()) {
        throw ConfigError("--autoscale: expected a JSON object (a fleet.autoscale section)");
      }
      spec.autoscale = *parsed;
    }
    spec.progress = true;  // stderr_progress decides: terminal or not, --quiet
    // No fleet that meets the tests is an answer too ("best" is null): exit 0.
    auto print = [&](const Plan& p) {
      if (o->scenario.json) {
        std::cout << output_text(plan_json(s, spec, p)) << "\n";
      } else {
        std::cout << plan_text(s, spec, p);
      }
    };
    if (!o->shard.empty()) {
      spec.shard = parse_shard(o->shard);
      // Exact numbers (not output_text's rounding): the merge ranks on them.
      std::cout << plan_shard(s, spec).dump() << "\n";
      return 0;
    }
    if (!o->merge.empty()) {
      std::vector<std::pair<std::string, nlohmann::json>> shards;
      for (const auto& f : o->merge) shards.emplace_back(f, read_json_file(f, "plan shard"));
      print(merge_plan(s, spec, shards));
      return 0;
    }
    if (o->mpi) {
      return run_mpi_shards(
          "metronome plan",
          [&](Shard sh) {
            PlanSpec mine = spec;
            mine.shard = sh;
            mine.progress = sh.index == 0;
            return plan_shard(s, mine).dump();
          },
          [&](const std::vector<std::string>& ranks) {
            std::vector<std::pair<std::string, nlohmann::json>> shards;
            for (size_t r = 0; r < ranks.size(); ++r) {
              shards.emplace_back("rank " + std::to_string(r), nlohmann::json::parse(ranks[r]));
            }
            print(merge_plan(s, spec, shards));
          });
    }
    print(plan(s, spec));
    return 0;
  };
}

}  // namespace metronome::cli
