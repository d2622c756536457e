#include <unistd.h>

#include <atomic>
#include <csignal>
#include <filesystem>
#include <iostream>
#include <memory>
#include <stdexcept>

#include "app/commands.h"
#include "app/mpi_shards.h"
#include "app/option_checks.h"
#include "base/config_error.h"
#include "sim/config/scenario.h"
#include "sim/sweep/sweep_runner.h"

namespace metronome::cli {
namespace {

std::atomic<bool> g_stop{false};
extern "C" void on_sigint(int) { g_stop.store(true); }

// MPI mode: the shards of --shard, one per rank, each into OUT/.rank-I, merged on rank 0 by the
// same code as sweep-merge.
int run_mpi(const SweepSpec& spec, const SweepOptions& opt) {
  if (opt.shard.count != 1) throw ConfigError("--mpi: the ranks choose the shards; drop --shard");
  const std::string out = opt.out_dir;
  auto rank_dir = [&out](size_t rank) { return out + "/.rank-" + std::to_string(rank); };
  return run_mpi_shards(
      "metronome sweep",
      [&](Shard s) {
        SweepOptions o = opt;
        o.shard = s;
        o.out_dir = rank_dir(static_cast<size_t>(s.index));
        o.progress = opt.progress && s.index == 0;
        if (s.index != 0) o.warn = nullptr;  // said once, by rank 0
        if (!run_sweep(spec, o).complete) throw std::runtime_error("not every run was written");
        return std::string();
      },
      [&](const std::vector<std::string>& ranks) {
        std::vector<std::string> dirs;
        for (size_t r = 0; r < ranks.size(); ++r) dirs.push_back(rank_dir(r));
        merge_sweeps(dirs, out);
        for (const auto& d : dirs) std::filesystem::remove_all(d);
        std::cerr << "metronome sweep: " << ranks.size() << " ranks merged into " << out << "\n";
      });
}

}  // namespace

Run add_sweep(CLI::App& app) {
  auto* cmd = app.add_subcommand(
      "sweep",
      "Run a scenario over a grid of any fields times a list of seeds, in parallel, and write one "
      "row per run (runs.csv, runs.jsonl) and one per grid point (aggregate.csv, aggregate.json: "
      "crash probability with a 95% Wilson interval, saturation time vs the first-order model, N*, "
      "latency, silent frames, rejections). Rows are identical whatever -j is. Ctrl-C stops new "
      "runs, writes the finished ones and closes the files.");
  struct Options {
    std::string scenario, file, out, seeds, shard;
    std::vector<std::string> sets, grid;
    int jobs = 0;
    bool mpi = false;
  };
  auto o = std::make_shared<Options>();
  cmd->add_option("--scenario", o->scenario, "Base scenario JSON (default: the built-in default)");
  cmd->add_option("--set", o->sets,
                  "Override one field of the base scenario, KEY=VALUE; repeatable")
      ->type_name("KEY=VALUE");
  cmd->add_option("--grid", o->grid,
                  "One grid axis, KEY=V1,V2,... (values JSON where they parse); repeatable, the "
                  "first axis varies slowest, e.g. --grid kv_policy.type=unbounded,windowed")
      ->type_name("KEY=V1,V2");
  cmd->add_option("--sweep", o->file,
                  "A sweep JSON file {scenario, set, grid, seeds}; --set/--grid/--seeds add to it");
  cmd->add_option("--seeds", o->seeds,
                  "N (seeds 1..N), A..B or A,B,C, in place of the scenario's seed "
                  "(default: that seed)");
  cmd->add_option("--out", o->out, "Output directory (created)")->required();
  cmd->add_option("-j,--jobs", o->jobs, "Parallel runs (default: all hardware threads)")
      ->check(kDecimalInteger)
      ->check(CLI::Range(0, 4096));
  cmd->add_option(
      "--shard", o->shard,
      "I/N: run only runs with run % N == I (for job arrays); combine with sweep-merge");
  cmd->add_flag("--mpi", o->mpi,
                "Under mpirun: rank I of N runs shard I/N into OUT/.rank-I, then rank 0 merges the "
                "shards into OUT (the single-process result, byte for byte) and removes them. OUT "
                "must be on a filesystem every rank sees. Needs a build with MPI (OpenMPI)");
  return [o]() {
    // Signals first: loading and checking a large grid takes time, and Ctrl-C must work there too.
    if (!o->mpi) {
      struct sigaction sa = {};
      sa.sa_handler = on_sigint;
      sigemptyset(&sa.sa_mask);
      sigaction(SIGINT, &sa, nullptr);
      sigaction(SIGTERM, &sa, nullptr);
    }
    SweepSpec spec;
    if (!o->file.empty()) spec = load_sweep_file(o->file);
    if (!o->scenario.empty()) spec.scenario = o->scenario;
    spec.sets.insert(spec.sets.end(), o->sets.begin(), o->sets.end());
    for (const auto& g : o->grid) spec.axes.push_back(parse_grid_axis(g));
    if (!o->seeds.empty()) spec.seeds = parse_seeds(o->seeds);
    // Without seeds given, the scenario's own seed: a sweep of one run is that scenario's run.
    if (spec.seeds.empty())
      spec.seeds = {spec.scenario.empty() ? 1 : load_scenario(spec.scenario, spec.sets).seed};
    spec.check_limits();
    SweepOptions opt;
    opt.jobs = o->jobs;
    if (!o->shard.empty()) opt.shard = parse_shard(o->shard);
    opt.out_dir = o->out;
    opt.progress = true;  // stderr_progress decides: terminal or not, --quiet
    opt.warn = [](const std::string& w) { std::cerr << "metronome: warning: " << w << "\n"; };
    if (o->mpi) return run_mpi(spec, opt);
    opt.stop = &g_stop;
    const SweepOutcome r = run_sweep(spec, opt);
    std::cerr << "metronome sweep: " << r.written << " of " << r.planned << " runs written to "
              << o->out << (r.complete ? "" : " (interrupted: rows are complete, the rest not run)")
              << "\n";
    return r.complete ? 0 : 130;
  };
}

Run add_sweep_merge(CLI::App& app) {
  auto* cmd = app.add_subcommand(
      "sweep-merge",
      "Combine the output directories of `sweep --shard I/N` runs into one directory, byte for "
      "byte what a single process would have written (runs, aggregate, sweep.json).");
  struct Options {
    std::vector<std::string> dirs;
    std::string out;
  };
  auto o = std::make_shared<Options>();
  cmd->add_option("dirs", o->dirs, "Shard output directories")->required();
  cmd->add_option("--out", o->out, "Merged output directory (created)")->required();
  return [o]() {
    merge_sweeps(o->dirs, o->out);
    return 0;
  };
}

}  // namespace metronome::cli
