// Replay: one scenario run for real (RealtimeEngine on a backend, against the wall clock) and in
// the simulator (with the calibration of that backend), and how far apart they are.
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "replay/realtime_engine.h"
#include "sim/closed_form/first_order.h"
#include "sim/config/scenario.h"
#include "sim/output/run_observer.h"
#include "sim/output/run_result.h"

namespace metronome::replay {

struct ReplayRun {
  Scenario real;       // what the real engine ran
  Scenario simulated;  // the same with the backend's cost model (a calibration file)
  FirstOrderPrediction prediction;
  RealtimeResult measured;
  RunResult sim;
  std::string cost_label;
  // Every output.sample_period_s (the measured side's: measured.samples).
  std::vector<Sample> simulated_samples;
};

// Runs `real` on a backend of that name (the real engine, wall clock), then `simulated` in the
// simulator. The two scenarios must differ only in their cost model.
ReplayRun replay(const Scenario& real, const Scenario& simulated, const std::string& backend);

// (a - b) / b; nullopt when either is missing or not finite, or b is 0.
std::optional<double> relative_error(std::optional<double> a, std::optional<double> b);

nlohmann::json replay_json(const ReplayRun& r);
std::string replay_text(const ReplayRun& r);
// Writes measured.csv, simulated.csv (TimeSeriesWriter columns), frames.csv (every measured frame),
// steps.csv (every measured step: wall start and end, thread CPU time), pool.csv (measured pool
// changes), the two resolved scenarios and, last, summary.json into dir (which the caller has
// opened as an OutputDir, so that the previous summary.json is gone).
void write_replay_dir(const ReplayRun& r, const std::string& dir);

}  // namespace metronome::replay
