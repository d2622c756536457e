// The steps `metronome calibrate fit` and `metronome calibrate roofline` run, as functions for the
// command and the tests: benchmark JSON -> fit -> calibration JSON; roofline on a grid -> fit ->
// analytic calibration JSON.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "calibrate/bench_json.h"
#include "calibrate/fit.h"
#include "sim/config/model.h"
#include "sim/config/scenario.h"

namespace metronome::calibrate {

// The scenario catalog's description of a model (scenarios/models/<name>.json); ConfigError if
// unknown, blaming `referrer` (where the name came from: "--as", "FILE: context.metronome_model").
ModelConfig scenario_model(const std::string& name, const std::string& referrer);
TermModel term_model(const ModelConfig& m);

// Only the benchmarks of kind "step" are fitted; the others (attention, gemm) are listed in the
// file's source section as diagnostics. `result` (optional) receives the fit.
nlohmann::json fit_benchmarks(const BenchRun& run, const FitOptions& options,
                              FitResult* result = nullptr);

// The roofline of the scenario's model and GPU (without step overhead), evaluated on the grid's
// step points and fitted with the same terms: an analytic file, "measured": false.
nlohmann::json roofline_calibration(const Scenario& s, const Grid& grid, const FitOptions& options,
                                    FitResult* result = nullptr);

// Every named grid (calibrate/grid.h) as JSON: what the PyTorch device path
// (calibrate/torch/torch_bench.py) reads from calibrate/torch/grids.json.
nlohmann::json grids_json();

}  // namespace metronome::calibrate
