// What one forward pass of the engine costs, given the shape of its batch. The simulator asks this
// interface for every step; a roofline (analytic) and a calibration (measured) implement it.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

namespace metronome {

struct Scenario;

// One forward pass over a continuous batch. Sums over the sessions in the batch.
struct PassShape {
  int64_t sessions = 0;      // sessions with at least one query token
  int64_t query_tokens = 0;  // tokens computed this pass (prefill of a frame: tens; decode: 1 each)
  int64_t kv_read_tokens = 0;  // cached keys read, once per session per pass (flash-style)
  double qk_pairs = 0;  // query-key products: attention FLOPs are 4 x layers x heads x d x this
};

class CostModel {
 public:
  virtual ~CostModel() = default;
  virtual double pass_seconds(const PassShape& shape) const = 0;
  // "analytic: roofline of H200 datasheet" or "measured: <file>", for every output that uses it.
  virtual std::string label() const = 0;
  virtual bool measured() const = 0;
};

// Builds the cost model the scenario names (cost_model.type) and checks that no step it prices can
// leave the engine's int64 clock (check_step_bounds in sim/cost/step_time.h): ConfigError naming
// the field otherwise.
std::unique_ptr<CostModel> make_cost_model(const Scenario& s);
// The same without the step bounds (for tests of the bounds themselves).
std::unique_ptr<CostModel> make_unchecked_cost_model(const Scenario& s);

// cost_model.type "auto" (a scenario that names none): the best the GPU has. Its measured
// calibration (GpuConfig::measured_calibration) where it has one that applies to the model (the
// same model, or one the file can be scaled to; not a mixture of experts), else the corrected
// roofline where the GPU file has a roofline_correction, else the datasheet roofline. Sets
// s.cost_model.type (and file), and s.cost_model.chosen to which and why.
void choose_cost_model(Scenario& s);

}  // namespace metronome
