// Least-squares fit of the calibrated cost model's terms (sim/cost/calibrated_cost_model.h) to step
// timings.
//
// Method: minimise the sum of squared *relative* errors, sum_i ((x_i . c - t_i) / t_i)^2, because a
// grid spans three orders of magnitude of step time and the simulator needs every shape right in
// proportion, not the largest ones in absolute seconds. Columns are scaled to unit norm and solved
// by column-pivoting Householder QR (Eigen); a rank below the number of terms means the grid cannot
// separate them, and the fit refuses. A negative coefficient has no physical meaning: unless
// allowed, the most negative term is dropped (reported, coefficient 0) and the fit repeated.
//
// Split: samples sorted by shape; every `heldout_every`-th (1-based positions k, 2k, ...) is held
// out, the rest train. R2 is over the training samples in seconds; held-out error is the median and
// max absolute percentage error of the prediction on the held-out samples.
#pragma once

#include <nlohmann/json.hpp>
#include <stdexcept>
#include <string>
#include <vector>

#include "base/config_error.h"
#include "calibrate/grid.h"
#include "sim/cost/calibrated_cost_model.h"

namespace metronome::calibrate {

// A refused fit: too few points, terms the grid cannot identify. A user's input problem.
class FitError : public ConfigError {
 public:
  using ConfigError::ConfigError;
};

// The median of v (the mean of the middle two for an even count); 0 for none.
double median_of(std::vector<double> v);

// A benchmarked step as the calibration file and the report both record it: its composition and
// the pass shape the cost terms read.
nlohmann::json point_json(const GridPoint& point, const PassShape& shape);

struct FitSample {
  std::string name;
  GridPoint point;  // the benchmarked composition (recorded in the calibration file)
  PassShape shape;
  double seconds = 0;  // measured (or analytic) step time, > 0
};

struct FitOptions {
  std::vector<CostTerm> terms;  // empty: default_terms(model)
  bool allow_negative = false;
  int heldout_every = 4;
  double warn_median_ape = 0.10;  // warn above these held-out errors
  double warn_max_ape = 0.25;
};

struct FitResult {
  std::vector<CalibrationTerm> terms;  // the requested terms, dropped ones with coefficient 0
  double r2 = 0;
  double heldout_median_ape = 0, heldout_max_ape = 0;
  int train_points = 0, heldout_points = 0;
  int heldout_every = 0;
  std::vector<std::string> warnings;
  std::vector<FitSample> samples;  // sorted as split
  std::vector<bool> heldout;       // [samples]
  std::vector<double> predicted;   // [samples] seconds
};

// fixed, sessions, query_tokens, kv_read_tokens, qk_pairs, and expert_layers for an MoE model.
std::vector<CostTerm> default_terms(const TermModel& m);

FitResult fit_cost_model(std::vector<FitSample> samples, const TermModel& model,
                         const FitOptions& options);

}  // namespace metronome::calibrate
