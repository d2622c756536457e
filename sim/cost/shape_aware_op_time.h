// One op's time under the shape-aware roofline (sim/config/gpu.h ShapeAwareCorrection): the rule
// the cost model prices passes with and the fit (calibrate/roofline_transfer_fit.h) fits, written
// once. The time is linear in the nine coefficients: the dot product of the coefficients with the
// op's terms, so the fit's features and the simulator's price cannot drift apart.
#pragma once

#include <array>
#include <string_view>

#include "sim/config/gpu.h"
#include "sim/cost/layer_ops.h"

namespace metronome {

inline constexpr int kShapeAwareCoefficients = 9;
using ShapeAwareTerms = std::array<double, kShapeAwareCoefficients>;

// The coefficients in term order: GEMM memory, compute, overlap, per-GEMM kernel; pointwise norm,
// rope, activation, add; per-pointwise kernel.
ShapeAwareTerms coefficients(const ShapeAwareCorrection& c);

// Which pointwise coefficient an op moves its bytes at: 0 norm, 1 rope, 2 activation, 3 residual
// add. The embedding gather is a copy of activations like the add (Vidur times it once per pass,
// so no fit sees it). ConfigError for a name that is none of these.
int pointwise_kind(std::string_view op_name);

// A token-level op (sim/cost/layer_ops.h) at `tokens`, on one GPU's datasheet.
ShapeAwareTerms op_terms(const TokenOp& op, double tokens, const GpuConfig& gpu);
// Work shaped like a GEMM but launched inside another kernel (attention over the cached KV): its
// memory-bound and compute-bound seconds at the datasheet, without a kernel of its own.
ShapeAwareTerms gemm_like_terms(double memory_s, double compute_s);

double shape_aware_seconds(const ShapeAwareCorrection& c, const ShapeAwareTerms& terms);

}  // namespace metronome
