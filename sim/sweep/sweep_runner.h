// Runs a sweep (grid points x seeds) over threads and writes, in --out DIR:
//   runs.jsonl, runs.csv    one row per run, in run order (grid point, then seed), each row written
//                           whole and flushed, so an interrupted sweep leaves only complete rows;
//   aggregate.json/.csv     one row per grid point (all of its seeds): crash probability with a 95%
//                           Wilson interval, saturation time vs the first-order prediction, N*,
//                           latency percentiles, silent frames, rejections (not written by a shard;
//                           sweep-merge writes it);
//   sweep.json              the spec, version, shard, runs planned and written, complete or not;
//   scenario.json           the resolved base scenario (before the grid).
// Rows depend only on (spec, run): results are byte-identical whatever the thread count, and the
// merge of shards equals the single-process output.
#pragma once

#include <atomic>
#include <functional>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "sim/sweep/sweep_spec.h"

namespace metronome {

struct SweepOptions {
  int jobs = 0;  // 0: all hardware threads
  Shard shard;
  std::string out_dir;
  bool progress = false;                    // progress on stderr (base/progress.h)
  const std::atomic<bool>* stop = nullptr;  // set (e.g. by SIGINT): take no new runs, finish, close
  // Receives each distinct warning of the grid's scenarios once, before any run, naming the grid
  // points it concerns where not all (Scenario::warnings).
  std::function<void(const std::string&)> warn;
};

struct SweepOutcome {
  int64_t planned = 0;  // runs in this shard
  int64_t written = 0;
  bool complete = false;
};

SweepOutcome run_sweep(const SweepSpec& spec, const SweepOptions& options);

// The grid points' warnings, each once, with the points it concerns where not every one.
std::vector<std::string> grid_warnings(const std::vector<Scenario>& points);

// Combines shard output directories into `out_dir`, exactly as one process would have written it.
// Throws ConfigError when the shards come from different sweeps, overlap, or leave runs missing.
void merge_sweeps(const std::vector<std::string>& dirs, const std::string& out_dir);

// One run's row and the per-point aggregate (exposed for tests).
nlohmann::ordered_json run_row(const SweepSpec& spec, int64_t run);
nlohmann::ordered_json aggregate_point(const SweepSpec& spec, int64_t point,
                                       const std::vector<nlohmann::ordered_json>& rows);

}  // namespace metronome
