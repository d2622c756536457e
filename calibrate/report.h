// Compares a calibration with the roofline (analytic, the scenario's model and GPU datasheet) on
// the same grid of step shapes: per point the calibrated time, the roofline's, and the measurement
// where the file has one. Both without the scheduler's step overhead, which the simulator adds to
// either.
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "calibrate/grid.h"
#include "sim/config/scenario.h"
#include "sim/cost/calibrated_cost_model.h"

namespace metronome::calibrate {

struct ReportRow {
  GridPoint point;
  PassShape shape;
  std::optional<double> measured_s;
  double calibrated_s = 0;
  double roofline_s = 0;
};

struct CalibrationReport {
  std::string calibration, roofline;  // labels
  std::string grid;                   // "the calibration's own points" or a grid name
  std::vector<ReportRow> rows;
  double median_ratio = 0, min_ratio = 0, max_ratio = 0;  // calibrated / roofline
  std::optional<double> roofline_median_ape;  // of the roofline against the measurements
};

// `file_json`: the calibration file (for its points); `grid`: compare on this grid instead.
CalibrationReport compare_with_roofline(const nlohmann::json& file_json, const Calibration& c,
                                        const Scenario& s, const std::optional<Grid>& grid);
nlohmann::json report_json(const CalibrationReport& r);
std::string report_text(const CalibrationReport& r);

}  // namespace metronome::calibrate
