// `metronome replay`: run a scenario for real (the real-time engine on the CPU reference kernels or
// the CUDA kernels, against the wall clock) and in the simulator with that backend's calibration,
// and report how far apart they are. Compiled into the metronome executable
// (app/CMakeLists.txt), registered by one line in app/main.cpp.
#include <filesystem>
#include <iostream>
#include <memory>

#include "app/commands.h"
#include "app/option_checks.h"
#include "app/scenario_options.h"
#include "base/config_error.h"
#include "base/output_dir.h"
#include "base/output_number.h"
#include "replay/replay.h"

namespace metronome::cli {

Run add_replay(CLI::App& app) {
  auto* cmd = app.add_subcommand(
      "replay",
      "Run a scenario for real (sessions on the wall clock, real KV blocks in real memory, real "
      "kernels) and in the simulator with the backend's calibration; report saturation time, "
      "latency percentiles, crash and silent frames side by side, with relative errors. The real "
      "run takes the scenario's horizon in wall-clock time.");
  struct Options {
    ScenarioOptions scenario;
    std::string backend = "cpu";
    std::optional<int64_t> num_blocks;
    std::string calibration;
    std::string out;
  };
  auto o = std::make_shared<Options>();
  o->scenario.add_to(*cmd);
  cmd->get_option("--scenario")
      ->description(
          "Scenario JSON file (required: the real run lasts the scenario's horizon in wall-clock "
          "time, 30 minutes for the built-in default), e.g. "
          "scenarios/replay/tiny_cpu_windowed.json");
  cmd->add_option("--backend", o->backend,
                  "cpu (CPU reference kernels; a tiny model runs in real time on 2 cores) or gpu "
                  "(CUDA kernels; needs a GPU)")
      ->check(CLI::IsMember({"cpu", "gpu"}));
  cmd->add_option("--num-blocks", o->num_blocks,
                  "KV pool size in blocks for both runs (engine.num_blocks), so that the cliff "
                  "arrives within a short run")
      ->check(kDecimalInteger)
      ->check(CLI::Range(int64_t{1}, int64_t{1} << 30));
  cmd->add_option("--calibration", o->calibration,
                  "Calibration file the simulation uses (default for cpu: the measured "
                  "results/calibration/tiny_cpu.json of the source tree; for gpu: the scenario's "
                  "own cost model)");
  cmd->add_option("--out", o->out,
                  "Directory for summary.json, measured.csv and simulated.csv (time series, "
                  "output.sample_period_s apart), frames.csv, steps.csv, pool.csv and the resolved "
                  "scenarios; created if missing");
  return [o]() {
    // A backend that cannot run here exits 3 (tests and scripts tell it from bad input, 2).
    const auto unavailable = [](const replay::BackendUnavailable& e) {
      std::cerr << "metronome replay: " << e.what() << "\n";
      return 3;
    };
    // A build without the GPU backend says so before it reads or resolves anything.
    if (o->backend == "gpu" && !replay::gpu_backend_compiled()) {
      try {
        replay::make_gpu_backend({});
      } catch (const replay::BackendUnavailable& e) {
        return unavailable(e);
      }
    }
    if (o->scenario.scenario.empty()) {
      throw ConfigError(
          "replay: --scenario: expected a scenario file (the real run lasts its horizon in "
          "wall-clock time; the built-in default's is 30 minutes), e.g. --scenario "
          "scenarios/replay/tiny_cpu_windowed.json");
    }
    std::vector<std::string> sets = o->scenario.sets;
    if (o->scenario.seed) sets.push_back("seed=" + std::to_string(*o->scenario.seed));
    if (o->num_blocks) sets.push_back("engine.num_blocks=" + std::to_string(*o->num_blocks));
    const Scenario real = load_scenario(o->scenario.scenario, sets);
    // The real engine runs the frame scheduler only: another would change the simulated side
    // alone, and the comparison would compare two different engines.
    if (real.engine.scheduler != "frame") {
      throw ConfigError(real.source + ": engine.scheduler: \"" + real.engine.scheduler +
                        "\" is not what the real engine runs; expected \"frame\" for a replay "
                        "(simulate compares schedulers)");
    }

    std::string calibration = o->calibration;
#ifdef METRONOME_SOURCE_DIR
    if (calibration.empty() && o->backend == "cpu") {
      calibration = std::string(METRONOME_SOURCE_DIR) + "/results/calibration/tiny_cpu.json";
      if (!std::filesystem::exists(calibration)) {
        throw ConfigError("--calibration: the default " + calibration +
                          " is missing; give a calibration file for the cpu backend");
      }
    }
#endif
    std::vector<std::string> sim_sets = sets;
    if (!calibration.empty()) {
      sim_sets.push_back("cost_model.type=calibrated");
      sim_sets.push_back("cost_model.file=" + std::filesystem::absolute(calibration).string());
    } else {
      std::cerr << "metronome replay: note: no calibration for the " << o->backend
                << " backend; the simulation uses the scenario's own cost model\n";
    }
    const Scenario simulated = load_scenario(o->scenario.scenario, sim_sets);
    // --out is checked (created, locked, the old summary.json removed) before the wall-clock run,
    // not after it.
    std::unique_ptr<OutputDir> out;
    if (!o->out.empty()) {
      out = std::make_unique<OutputDir>(o->out, "--out", std::vector<std::string>{});
    }

    replay::ReplayRun r;
    try {
      r = replay::replay(real, simulated, o->backend);
    } catch (const replay::BackendUnavailable& e) {
      return unavailable(e);
    }
    if (!o->out.empty()) replay::write_replay_dir(r, o->out);
    if (o->scenario.json) {
      std::cout << output_text(replay::replay_json(r)) << "\n";
    } else {
      std::cout << replay::replay_text(r);
    }
    return 0;
  };
}

}  // namespace metronome::cli
