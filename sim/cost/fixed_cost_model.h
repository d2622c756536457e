// Every forward pass costs the same: cost_model.step_overhead_s. Not a prediction of any GPU; it
// makes time a step counter, which is how the vLLM conformance cases and closed-form tests count.
#pragma once

#include <fmt/format.h>

#include "sim/cost/cost_model.h"

namespace metronome {

class FixedCostModel : public CostModel {
 public:
  explicit FixedCostModel(double step_s) : step_s_(step_s) {}
  double pass_seconds(const PassShape&) const override { return step_s_; }
  std::string label() const override {
    return fmt::format("fixed: {:g} ms per pass (no GPU model)", step_s_ * 1e3);
  }
  bool measured() const override { return false; }

 private:
  double step_s_;
};

}  // namespace metronome
