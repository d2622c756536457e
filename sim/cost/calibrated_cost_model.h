// Per-pass cost from a calibration file (calibrate/ writes it from benchmark timings, or from the
// roofline for an analytic file): a sum of fitted terms that follow the physics of a pass,
//
//   t = c_fixed                                   launch overhead + weights read once (dense)
//     + c_sessions       x sessions               per-session attention setup
//     + c_query_tokens   x query_tokens           per-token GEMM work
//     + c_kv_read_tokens x kv_read_tokens         per attended cached KV token (bandwidth)
//     + c_qk_pairs       x qk_pairs               attention compute
//     + c_expert_layers  x layers x E (1 - (1 - k/E)^query_tokens)   MoE: experts the batch touches
//
// plus the scenario's cost_model.step_overhead_s (the scheduler, which no kernel benchmark sees).
// The simulator reads the file, never a kernel library.
//
// File schema (schema_version 1, JSON object):
//   kind "metronome.calibration", schema_version 1, measured (bool), backend
//   "gpu"|"cpu"|"analytic", label, date (ISO 8601), model {name, layers, experts, experts_active},
//   device {name, driver, cuda_runtime}, source {...}, grid {...},
//   fit {method, terms [{name, coefficient, unit, dropped}], r2, train_points, heldout_points,
//        heldout_median_ape, heldout_max_ape, warnings [...]}, points [...]
//   optional: a term's "origin" ("measured" | "analytic") when a file mixes them (an imported
//   profile measures the token-level terms; the KV-dependent ones stay analytic until measured);
//   "scaling" {profiled {model, layers, shape {hidden, heads, kv_heads, head_dim, ffn, vocab,
//   gated_mlp}}, ops [{name, fixed_s, per_token_s}], analytic_fixed_s, analytic_per_token_s,
//   effective_bandwidth_bytes_per_s, effective_flops}: what a model of another layer shape needs
//   to reuse the file (scale_calibration).
#pragma once

#include <array>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "sim/config/model.h"
#include "sim/cost/cost_model.h"
#include "sim/cost/layer_ops.h"

namespace metronome {

struct Scenario;

inline constexpr int kCalibrationSchemaVersion = 1;
inline constexpr std::string_view kCalibrationKind = "metronome.calibration";

enum class CostTerm { kFixed, kSessions, kQueryTokens, kKvReadTokens, kQkPairs, kExpertLayers };
inline constexpr std::array<CostTerm, 6> kAllCostTerms = {
    CostTerm::kFixed,        CostTerm::kSessions, CostTerm::kQueryTokens,
    CostTerm::kKvReadTokens, CostTerm::kQkPairs,  CostTerm::kExpertLayers};

std::string_view term_name(CostTerm t);
std::string_view term_unit(CostTerm t);  // of the coefficient: "s", "s/session", ...
bool term_from_name(std::string_view name, CostTerm& out);

// What the MoE term needs to know about the model.
struct TermModel {
  int64_t layers = 0;
  int64_t experts = 0;         // 0: dense, the MoE term is 0
  int64_t experts_active = 0;  // top-k
  // Expected distinct experts per layer touched by `tokens` tokens routed uniformly top-k.
  double experts_touched(int64_t tokens) const;
};

// The value a term's coefficient multiplies, for one pass.
double term_feature(CostTerm t, const PassShape& s, const TermModel& m);

struct CalibrationTerm {
  CostTerm term;
  double coefficient = 0;  // seconds per unit of the feature
  bool dropped = false;    // left out of the fit (negative or not identifiable): contributes 0
  std::string origin;      // "measured" | "analytic" | "" (as the file)
};

// One measured op of the profiled layer, fitted as fixed + per_token x tokens (per layer; emb and
// other per-pass ops per pass).
struct ScalingOp {
  std::string name;
  double fixed_s = 0, per_token_s = 0;
};

struct CalibrationScaling {
  std::string profiled_model;
  int64_t layers = 0;
  LayerShape shape;
  std::vector<ScalingOp> ops;
  // The part of the fixed and query_tokens terms that is analytic (ops the profile lacks, such as
  // the output head), removed before scaling the measured part and recomputed for the target.
  double analytic_fixed_s = 0, analytic_per_token_s = 0;
  double effective_bandwidth = 0, effective_flops = 0;  // corrected roofline, for analytic terms
};

// The parts of a calibration file the simulator uses.
struct Calibration {
  std::string source;  // the file, for messages
  bool measured = false;
  std::string backend;  // gpu | cpu | analytic
  std::string label;
  std::string date;
  std::string model_name;
  TermModel model;
  std::string device_name, driver;
  std::vector<CalibrationTerm> terms;
  double r2 = 0, heldout_median_ape = 0, heldout_max_ape = 0;
  bool has_scaling = false;
  CalibrationScaling scaling;
  std::string scaled_from;  // set by scale_calibration: what the terms were scaled from

  double seconds(const PassShape& s) const;  // sum of the terms, without step overhead
};

// Validates everything (ConfigError naming `source`, the field and what was expected).
Calibration parse_calibration(const nlohmann::json& j, const std::string& source);
Calibration read_calibration(const std::string& path);

// The calibration's terms for `target`, a model whose layer shape differs from the profiled one:
// each measured op's fixed part scaled by its weight bytes, its per-token part by its FLOPs (bytes
// for pointwise ops), summed over the target's layers; analytic terms recomputed for the target's
// KV and heads. ConfigError if the file has no scaling section or the target is MoE.
Calibration scale_calibration(const Calibration& c, const ModelConfig& target);
// A calibration of the model's own name is taken as measured on this very model, never scaled
// (so an edit of its shape does not reach the step times); one of another model is scaled op by op
// where its file says how, refused otherwise.
inline bool measured_on(const Calibration& c, const ModelConfig& m) {
  return c.model_name == m.name;
}

class CalibratedCostModel final : public CostModel {
 public:
  CalibratedCostModel(Calibration c, double step_overhead_s);

  double pass_seconds(const PassShape& shape) const override;
  std::string label() const override;
  bool measured() const override { return c_.measured; }
  const Calibration& calibration() const { return c_; }

 private:
  Calibration c_;
  double overhead_s_;
};

// cost_model.type "calibrated": the scenario's file, scaled to its model where the file says how;
// ConfigError when it calibrates another model it cannot be scaled to, or another layer count.
// Warns on stderr when the file's device is not the scenario's GPU.
std::unique_ptr<CostModel> make_calibrated_cost_model(const Scenario& s);

}  // namespace metronome
