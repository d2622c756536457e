// Fits the corrected roofline's fractions and overheads (sim/config/gpu.h RooflineCorrection) to
// one GPU's measured token-level layer times (Vidur's mlp.csv), and states the roofline's error
// before and after, on a held-out split.
//
// Per layer, at n tokens: measured(n) = the sum of the layer's ops; the corrected roofline is
//   layer_overhead + GEMM bytes(n) / (f_bw B) + pointwise bytes(n) / (f_pw B) + flops(n) / (f_fl
//   F),
// bytes and flops per op from sim/cost/layer_ops.h. A layer's sum alone cannot separate them (it is
// linear in n: two numbers), so every op is an equation of its own: linear in (1/f_bw, 1/f_pw,
// 1/f_fl, per-kernel overhead), weighted by 1/layer time, solved by least squares (Eigen
// column-pivoting QR). A fraction above 1 is pinned at 1 and a negative overhead at 0, then
// refitted. layer_overhead = kernels per layer x per-kernel overhead; pass_overhead likewise (emb,
// head). "Before" is the datasheet roofline the simulator runs as cost_model.type "roofline":
// max(weight bytes / B, flops / F) per layer, no activations, no overhead.
// Split: rows sorted by tokens, every heldout_every-th held out (as calibrate/fit.h).
#pragma once

#include <array>
#include <nlohmann/json.hpp>
#include <vector>

#include "calibrate/vidur_profile.h"
#include "sim/config/gpu.h"

namespace metronome::calibrate {

struct ErrorStats {
  int points = 0;
  double median = 0, p90 = 0, max = 0;  // absolute relative error
  double median_ratio = 0;              // median of predicted / measured
};
ErrorStats error_stats(const std::vector<double>& predicted, const std::vector<double>& measured);

struct RooflineCorrectionFit {
  RooflineCorrection correction;
  ErrorStats before_heldout, after_heldout, before_all, after_all;
  int train_points = 0, heldout_points = 0, heldout_every = 0;
  double kernel_overhead_s = 0;  // per profiled kernel; layer and pass overheads are multiples
  std::array<bool, 3> pinned{};  // bandwidth, pointwise bandwidth, FLOP/s fraction held at 1
  std::vector<int64_t> tokens;   // [rows]
  std::vector<double> measured, before, after;  // [rows] one layer, seconds
  std::vector<bool> heldout;                    // [rows]
};

// `gpu` gives the datasheet bandwidth and FLOP/s; the result's fitted_on is gpu.name.
RooflineCorrectionFit fit_roofline_correction(const VidurProfile& p, const GpuConfig& gpu,
                                              int heldout_every = 4);

// The same form fitted on every row of several profiles (no held-out split): what the old form
// does when given the same layers as the shape-aware one (calibrate/roofline_transfer_fit.h).
RooflineCorrection fit_roofline_correction_on(const std::vector<VidurProfile>& profiles,
                                              const GpuConfig& gpu);

// The GPU file's roofline_correction block (with its error table), and a report for people.
nlohmann::json correction_json(const RooflineCorrectionFit& f, const std::string& source);
std::string correction_text(const RooflineCorrectionFit& f);

// The layer time under the corrected roofline with these parameters (for tests and the report).
double corrected_layer_seconds(const LayerShape& s, const RooflineCorrection& c,
                               const GpuConfig& gpu, double tokens);
double datasheet_layer_seconds(const LayerShape& s, const GpuConfig& gpu, double tokens);

}  // namespace metronome::calibrate
