// `metronome calibrate import-vidur`: a Vidur profile (calibrate/vidur_profile.h) to a calibration
// file of our format (sim/cost/calibrated_cost_model.h), measured: true.
//
// Token-level terms (fixed, query_tokens) are fitted with calibrate/fit.h to whole passes built
// from the profile: layers x (one layer's ops) + emb, at every profiled num_tokens, plus the ops
// the profile lacks (output head, KV write) from the corrected roofline, marked in `scaling`.
// KV-dependent terms (sessions, kv_read_tokens, qk_pairs) are fitted to attention.csv when the
// directory has one, and otherwise come from the corrected roofline fitted to the same profile
// (origin "analytic"). Every op is also fitted on its own (fixed + per token), so that a model of
// another layer shape can scale the file (scale_calibration).
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "calibrate/fit.h"
#include "calibrate/roofline_correction_fit.h"
#include "calibrate/vidur_profile.h"
#include "sim/config/model.h"

namespace metronome::calibrate {

struct VidurImportOptions {
  std::string as_model;  // scenario catalog model; empty: the one with the profile's layer shape
  int64_t layers = 0;    // when no catalog model matches: the profiled model's layer count
  std::string gpu;       // scenario catalog GPU for the datasheet; empty: the profile's GPU
  std::string date;      // recorded in the file; empty: "not recorded"
  int heldout_every = 4;
};

struct VidurImport {
  nlohmann::json calibration;
  FitResult token_fit;
  std::optional<FitResult> attention_fit;
  RooflineCorrectionFit correction;
  std::string model_name;  // the catalog's name, or the profile's
  int64_t layers = 0;
  GpuConfig gpu;
};

VidurImport import_vidur(const VidurProfile& p, const VidurImportOptions& options);

}  // namespace metronome::calibrate
