// Writes a calibration file (schema: sim/cost/calibrated_cost_model.h) from a fit, for a measured
// benchmark run or for the roofline evaluated on a grid (analytic). The simulator's reader
// validates every field this writes; a round-trip test keeps the two in step.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "calibrate/fit.h"

namespace metronome::calibrate {

struct CalibrationMeta {
  bool measured = true;
  std::string backend;  // gpu | cpu | analytic
  std::string label;
  std::string comment;
  std::string date;  // ISO 8601; empty: now (UTC)
  std::string model_name;
  TermModel model;
  std::string device_name, driver, cuda_runtime, host;
  nlohmann::json source = nlohmann::json::object();  // where the timings came from
  nlohmann::json grid = nlohmann::json::object();
  nlohmann::json scaling;  // null: none (see sim/cost/calibrated_cost_model.h)
  std::string fit_method;  // empty: the fitter's default description
};

nlohmann::json calibration_json(const CalibrationMeta& meta, const FitResult& fit);
// ConfigError naming `option` and `path` unless the file can be written: it exists and is not a
// regular file (require_writable_target), or its nearest existing folder is not a writable folder.
// Checking every output first keeps a command with two outputs from writing one and failing on
// the other.
void check_json_target(const std::string& path, const std::string& option);
// check_json_target, the folder created, then write_file_atomically.
void write_json_file(const std::string& path, const nlohmann::json& j,
                     const std::string& option = "--out");
std::string utc_now_iso8601();

}  // namespace metronome::calibrate
