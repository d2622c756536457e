// A GPU's datasheet numbers, used to size the pool and by the roofline cost model, and the
// roofline's correction fitted to measured kernel times on that GPU (when there are some).
#pragma once

#include <array>
#include <optional>
#include <string>

namespace metronome {

// The corrected roofline (sim/cost/corrected_roofline_cost_model.h):
//   t_pass = pass_overhead_s + layers x layer_overhead_s
//          + GEMM bytes / (bandwidth_fraction x bandwidth)
//          + pointwise bytes / (pointwise_bandwidth_fraction x bandwidth)
//          + flops / (flops_fraction x bf16_flops)
// Fitted by `metronome calibrate import-vidur` (calibrate/roofline_correction_fit.h).
struct RooflineCorrection {
  bool present = false;
  double bandwidth_fraction = 1;            // GEMM weights and activations, KV, experts
  double pointwise_bandwidth_fraction = 1;  // norms, rope, activation, residual add, embedding
  double flops_fraction = 1;                // of bf16_flops
  double layer_overhead_s = 0;  // per layer: its kernels x the fitted per-kernel overhead
  double pass_overhead_s = 0;   // per pass: embedding and output head kernels
  std::string fitted_on;        // the GPU whose measurements gave these numbers
  std::string source;           // what was measured, by whom, and the fit's error
};

// The shape-aware roofline (sim/cost/shape_aware_roofline_cost_model.h), per op at n tokens with
// m = bytes / bandwidth and c = FLOPs / bf16_flops:
//   GEMM:      gemm_kernel_s + gemm_memory [m >= c] m + gemm_compute [c > m] c
//              + gemm_overlap min(m, c)
//   pointwise: pointwise_kernel_s + pointwise[kind] m   (kind: norm, rope, activation, add)
// Fitted on several layer shapes by `metronome calibrate import-vidur --transfer-model`
// (calibrate/roofline_transfer_fit.h), which also says how far it holds for a shape not fitted on.
// The GPU file's names of the four pointwise rates, in ShapeAwareCorrection::pointwise's order.
inline constexpr std::array<const char*, 4> kPointwiseKinds = {"norm", "rope", "activation", "add"};

struct ShapeAwareCorrection {
  bool present = false;
  double gemm_memory = 1, gemm_compute = 1, gemm_overlap = 1, gemm_kernel_s = 0;
  std::array<double, 4> pointwise{1, 1, 1, 1};  // norm, rope, activation, residual add
  double pointwise_kernel_s = 0;
  std::string fitted_on;  // the GPU whose measurements gave these numbers
  std::string source;     // which profiles, by whom, and the held-out error
};

struct GpuConfig {
  std::string name;
  // Total memory as the device reports it (nvidia-smi memory.total, MiB x 2^20), which is what
  // vLLM multiplies by gpu_memory_utilization, not the datasheet's decimal "GB".
  double memory_bytes = 0;
  std::string memory_source;  // where memory_bytes was read, and how sure it is
  double memory_bandwidth_bytes_per_s = 0;
  double bf16_flops = 0;  // dense, not the sparse datasheet figure
  RooflineCorrection roofline_correction;
  ShapeAwareCorrection shape_aware_correction;
  // A measured calibration of this GPU (an absolute path once the file is resolved; empty: none).
  // cost_model.type "auto" prices steps with it, scaled to the scenario's model where the file
  // says how (sim/cost/cost_model.h: choose_cost_model).
  std::string measured_calibration;
  // The GPU-to-GPU link a tensor-parallel replica's all-reduces cross (engine.tensor_parallel > 1;
  // 0: not stated, and tensor parallelism is refused): bandwidth each way per GPU, a fixed time
  // per all-reduce, and where both numbers come from.
  double interconnect_bandwidth_bytes_per_s = 0;
  double interconnect_latency_s = 0;
  std::string interconnect_source;
  // What one GPU-hour costs (`metronome plan` prices fleets by it; unset: not stated), and where
  // the number comes from.
  std::optional<double> price_per_gpu_hour;
  std::string price_source;
  // The file the description was read from (the shipped catalog's or a path), for messages.
  std::string loaded_from;
};

}  // namespace metronome
