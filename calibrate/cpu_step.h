// CpuStep: the CPU twin of kernels::LayerStep. One engine step of L decoder layers for a batch
// composition: the CPU decoder step (kernels/reference/decoder_step.h, which the CPU replay backend
// also runs) over block tables built for a grid point, with random weights of a named model's
// shapes. It lets the whole pipeline (benchmark, fit, simulation) run on a machine without
// a GPU; its timings describe this CPU running reference code, never a GPU.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "calibrate/grid.h"
#include "kernels/model_shapes.h"

namespace metronome::calibrate {

class CpuStep {
 public:
  // Throws std::invalid_argument on an empty or inconsistent composition.
  CpuStep(const kernels::ModelShape& model, const GridPoint& point, uint64_t seed = 1);
  ~CpuStep();
  CpuStep(const CpuStep&) = delete;
  CpuStep& operator=(const CpuStep&) = delete;

  // All layers. Idempotent: each call re-appends the same frame at the same positions.
  void run();
  // Append + attention of one layer.
  void run_attention(int32_t layer = 0);
  // The dense linears (and SwiGLU) of one layer over the step's tokens.
  void run_gemms();

  int32_t total_q() const;
  // False if any output holds a NaN or infinity (checked after timing).
  bool outputs_finite() const;
  // The last layer's MLP output: [total_q, hidden].
  const std::vector<float>& output() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace metronome::calibrate
