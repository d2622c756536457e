#include "calibrate/vidur_import.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "calibrate/calibration_writer.h"
#include "calibrate/pipeline.h"
#include "sim/config/catalog.h"
#include "sim/config/scenario.h"

namespace metronome::calibrate {
namespace {

// The vocabulary is not compared: no profiled op depends on it (the output head is not profiled,
// and Vidur pads it: its Llama-2-7B rows say 32768 where the model has 32000).
bool same_shape(const LayerShape& a, const ModelConfig& m, int tp) {
  return a.hidden == m.hidden_size && a.heads * tp == m.attention_heads &&
         std::max<int64_t>(1, m.kv_heads / tp) == a.kv_heads && a.head_dim == m.head_dim &&
         a.ffn * tp == m.ffn_size && !m.moe();
}

// fixed + per_token x tokens by relative least squares on the training rows; a negative part is
// dropped and the other refitted (an op can be pure launch cost, or have none at all).
ScalingOp fit_op(std::string_view name, const std::vector<double>& tokens,
                 const std::vector<double>& seconds, const std::vector<bool>& heldout) {
  ScalingOp op;
  op.name = std::string(name);
  double s11 = 0, s12 = 0, s22 = 0, b1 = 0, b2 = 0;
  for (size_t i = 0; i < tokens.size(); ++i) {
    if (heldout[i] || !(seconds[i] > 0)) continue;  // a 0 ms median carries no scale
    const double w = 1.0 / seconds[i], x1 = w, x2 = tokens[i] * w;
    s11 += x1 * x1;
    s12 += x1 * x2;
    s22 += x2 * x2;
    b1 += x1;
    b2 += x2;
  }
  const double det = s11 * s22 - s12 * s12;
  if (s11 == 0) return op;
  double a = 0, b = 0;
  if (det > 1e-12 * s11 * s22) {
    a = (b1 * s22 - b2 * s12) / det;
    b = (s11 * b2 - s12 * b1) / det;
  }
  if (!(det > 1e-12 * s11 * s22) || a < 0 || b < 0) {
    const double only_a = b1 / s11, only_b = s22 > 0 ? b2 / s22 : 0;
    if (a < 0 || !(det > 1e-12 * s11 * s22)) {
      a = 0;
      b = only_b;
    } else {
      a = only_a;
      b = 0;
    }
  }
  op.fixed_s = std::max(0.0, a);
  op.per_token_s = std::max(0.0, b);
  return op;
}

std::string model_for(const VidurProfile& p, const VidurImportOptions& o, int64_t& layers,
                      ModelConfig& model) {
  if (!o.as_model.empty()) {
    model = scenario_model(o.as_model, "--as");
    if (!same_shape(p.shape, model, p.tensor_parallel)) {
      throw ConfigError(fmt::format(
          "--as {}: its layer shape (hidden {}, heads {}/{}, FFN {}, vocab {}) differs from the "
          "profile's {} (hidden {}, heads {}/{}, FFN {}, vocab {}); import it under its own "
          "name and let the simulator scale it",
          o.as_model, model.hidden_size, model.attention_heads, model.kv_heads, model.ffn_size,
          model.vocab_size, p.mlp_path, p.shape.hidden, p.shape.heads * p.tensor_parallel,
          p.shape.kv_heads * p.tensor_parallel, p.shape.ffn * p.tensor_parallel, p.shape.vocab));
    }
    layers = model.layers;
    return model.name;
  }
  std::vector<std::string> names = embedded_names("models");
  std::sort(names.begin(), names.end());
  for (const auto& n : names) {
    const ModelConfig m = scenario_model(n, "the shipped models");
    if (same_shape(p.shape, m, p.tensor_parallel)) {
      model = m;
      layers = o.layers > 0 ? o.layers : m.layers;
      if (layers != m.layers) {
        throw ConfigError(fmt::format("--layers {}: model \"{}\" of the same shape has {} layers",
                                      o.layers, n, m.layers));
      }
      return n;
    }
  }
  if (o.layers <= 0) {
    throw ConfigError(fmt::format(
        "{}: no model in scenarios/models has this layer shape (hidden {}, heads {}/{}, FFN {}, "
        "vocab {}): give the profiled model's layer count with --layers, or add its model file",
        p.mlp_path, p.shape.hidden, p.shape.heads * p.tensor_parallel,
        p.shape.kv_heads * p.tensor_parallel, p.shape.ffn * p.tensor_parallel, p.shape.vocab));
  }
  layers = o.layers;
  model = ModelConfig{};
  model.name = p.model;
  model.layers = layers;
  model.hidden_size = p.shape.hidden;
  model.attention_heads = p.shape.heads;
  model.kv_heads = p.shape.kv_heads;
  model.head_dim = p.shape.head_dim;
  model.ffn_size = p.shape.ffn;
  model.vocab_size = p.shape.vocab;
  return p.model;
}

}  // namespace

VidurImport import_vidur(const VidurProfile& p, const VidurImportOptions& o) {
  VidurImport r;
  ModelConfig model;
  r.model_name = model_for(p, o, r.layers, model);
  const std::string gpu_name = !o.gpu.empty() ? o.gpu : p.gpu;
  if (gpu_name.empty()) {
    throw ConfigError(
        p.mlp_path + ": which GPU measured this profile? (the directory does not say): give --gpu");
  }
  r.gpu = load_scenario("", {"gpu=" + gpu_name}).gpu;
  r.correction = fit_roofline_correction(p, r.gpu, o.heldout_every);
  const auto& cor = r.correction.correction;
  const double eff_bw = cor.bandwidth_fraction * r.gpu.memory_bandwidth_bytes_per_s;
  const double eff_fl = cor.flops_fraction * r.gpu.bf16_flops;

  // Whole passes from the profile: one ingest pass of n tokens for one session.
  const double layers = static_cast<double>(r.layers);
  std::vector<FitSample> samples;
  for (const auto& row : p.mlp) {
    GridPoint g;
    g.kind = BenchKind::kStep;
    g.sessions = 1;
    g.q_len = static_cast<int32_t>(std::min<int64_t>(row.tokens, 1 << 30));
    PassShape shape;
    shape.sessions = 1;
    shape.query_tokens = row.tokens;
    samples.push_back({fmt::format("vidur/mlp/tokens:{}", row.tokens), g, shape,
                       layers * row.layer_seconds() + row.seconds[0]});
  }
  TermModel tm{r.layers, 0, 0};
  FitOptions fo;
  fo.terms = {CostTerm::kFixed, CostTerm::kQueryTokens};
  fo.heldout_every = o.heldout_every;
  try {
    r.token_fit = fit_cost_model(samples, tm, fo);
  } catch (const FitError& e) {
    throw FitError(p.mlp_path + ": " + e.what());
  }

  // Each op on its own, for scaling to another layer shape.
  std::vector<double> tokens;
  std::vector<bool> held;
  for (size_t i = 0; i < p.mlp.size(); ++i) {
    tokens.push_back(static_cast<double>(p.mlp[i].tokens));
    held.push_back((i + 1) % static_cast<size_t>(o.heldout_every) == 0);
  }
  nlohmann::json ops = nlohmann::json::array();
  for (size_t k = 0; k < kVidurMlpOps.size(); ++k) {
    std::vector<double> t;
    for (const auto& row : p.mlp) t.push_back(row.seconds[k]);
    const ScalingOp op = fit_op(kVidurMlpOps[k], tokens, t, held);
    ops.push_back({{"name", op.name}, {"fixed_s", op.fixed_s}, {"per_token_s", op.per_token_s}});
  }

  // What the profile lacks, from the corrected roofline: the output head and each new token's KV.
  double extra_fixed = 0, extra_tok = 0;
  for (const auto& op : token_ops(layer_shape(model))) {
    if (op.in_vidur_profile) continue;
    extra_fixed += op.bytes_fixed / eff_bw;
    extra_tok += op.bytes_per_token / eff_bw + op.flops_per_token / eff_fl;
  }
  extra_tok += static_cast<double>(model.kv_bytes_per_token()) / eff_bw;

  std::vector<CalibrationTerm> terms;
  for (const auto& t : r.token_fit.terms) {
    CalibrationTerm c = t;
    c.origin = "measured";
    if (c.term == CostTerm::kFixed) c.coefficient += extra_fixed;
    if (c.term == CostTerm::kQueryTokens) c.coefficient += extra_tok;
    terms.push_back(c);
  }
  nlohmann::json attention_source;
  if (!p.attention.empty()) {
    std::vector<FitSample> as;
    for (const auto& a : p.attention) {
      GridPoint g;
      g.kind = BenchKind::kStep;
      g.sessions = static_cast<int32_t>(a.batch);
      g.q_len = static_cast<int32_t>(a.chunk);
      g.ctx = static_cast<int32_t>(a.kv_cache);
      PassShape s;
      s.sessions = a.batch;
      s.query_tokens = a.batch * a.chunk;
      s.kv_read_tokens = a.batch * a.kv_cache;
      const double c = static_cast<double>(a.chunk), kv = static_cast<double>(a.kv_cache);
      s.qk_pairs = static_cast<double>(a.batch) * (c * kv + c * (c + 1) / 2);  // causal
      as.push_back({fmt::format("vidur/attention/{}/b:{}/q:{}/kv:{}",
                                a.prefill ? "prefill" : "decode", a.batch, a.chunk, a.kv_cache),
                    g, s, layers * a.seconds});
    }
    FitOptions ao;
    ao.terms = {CostTerm::kSessions, CostTerm::kKvReadTokens, CostTerm::kQkPairs};
    ao.heldout_every = o.heldout_every;
    try {
      r.attention_fit = fit_cost_model(as, tm, ao);
    } catch (const FitError& e) {
      throw FitError(p.attention_path + ": " + e.what());
    }
    for (const auto& t : r.attention_fit->terms) {
      CalibrationTerm c = t;
      c.origin = "measured";
      terms.push_back(c);
    }
    attention_source = {{"attention_csv", p.attention_path},
                        {"backend", p.attention_backend},
                        {"rows", p.attention.size()},
                        {"r2", r.attention_fit->r2},
                        {"heldout_median_ape", r.attention_fit->heldout_median_ape},
                        {"heldout_max_ape", r.attention_fit->heldout_max_ape},
                        {"warnings", r.attention_fit->warnings}};
  } else {
    terms.push_back({CostTerm::kSessions, 0.0, true, "analytic"});
    terms.push_back({CostTerm::kKvReadTokens,
                     static_cast<double>(model.kv_bytes_per_token()) / eff_bw, false, "analytic"});
    terms.push_back(
        {CostTerm::kQkPairs,
         4.0 * static_cast<double>(model.layers * model.attention_heads * model.head_dim) / eff_fl,
         false, "analytic"});
    attention_source =
        "no attention.csv: kv_read_tokens (KV bytes per token / effective bandwidth) and qk_pairs "
        "(4 x layers x heads x head_dim / effective FLOP/s) from the corrected roofline fitted to "
        "this profile";
  }
  // The file's term order: fixed, sessions, query_tokens, kv_read_tokens, qk_pairs.
  std::sort(terms.begin(), terms.end(), [](const CalibrationTerm& a, const CalibrationTerm& b) {
    return static_cast<int>(a.term) < static_cast<int>(b.term);
  });
  FitResult combined = r.token_fit;
  combined.terms = terms;
  if (r.attention_fit) {
    for (const auto& w : r.attention_fit->warnings) combined.warnings.push_back("attention: " + w);
  }

  CalibrationMeta meta;
  meta.measured = true;
  meta.backend = "gpu";
  meta.label = fmt::format(
      "measured on GPU {} by Vidur (torch profiler, fp16): {} token-level ops{}", gpu_name, p.model,
      p.attention.empty() ? "; attention analytic (corrected roofline)" : " and attention");
  meta.comment =
      "Imported from a public Vidur profile (github.com/microsoft/vidur, MIT); not measured by "
      "this project. fixed and query_tokens: passes of layers x one layer's ops + emb, fitted; "
      "plus the output head and the KV write from the corrected roofline (scaling."
      "analytic_fixed_s, analytic_per_token_s). The fit section describes the token-level fit.";
  meta.date = o.date.empty() ? "not recorded in the profile" : o.date;
  meta.model_name = r.model_name;
  meta.model = tm;
  meta.device_name = gpu_name + " (Vidur profile)";
  meta.source = {{"vidur",
                  {{"model", p.model},
                   {"gpu", gpu_name},
                   {"mlp_csv", p.mlp_path},
                   {"tensor_parallel", p.tensor_parallel},
                   {"rows", p.mlp.size()},
                   {"timer", "torch profiler CUDA kernel time, median of the profiled iterations"},
                   {"licence", "MIT (microsoft/vidur)"}}},
                 {"attention", attention_source},
                 {"roofline_correction", correction_json(r.correction, "fitted to " + p.mlp_path)}};
  meta.grid = {{"name", "vidur-mlp"},
               {"step_points", samples.size()},
               {"tokens_min", p.mlp.front().tokens},
               {"tokens_max", p.mlp.back().tokens}};
  meta.fit_method =
      "least squares on relative error (Eigen column-pivoting QR) of fixed + query_tokens to "
      "whole passes built from the profile; every " +
      std::to_string(o.heldout_every) + "th row by num_tokens held out";
  meta.scaling = {{"profiled",
                   {{"model", r.model_name},
                    {"layers", r.layers},
                    {"shape",
                     {{"hidden", p.shape.hidden},
                      {"heads", p.shape.heads},
                      {"kv_heads", p.shape.kv_heads},
                      {"head_dim", p.shape.head_dim},
                      {"ffn", p.shape.ffn},
                      {"vocab", p.shape.vocab},
                      {"gated_mlp", p.shape.gated_mlp}}}}},
                  {"ops", ops},
                  {"analytic_fixed_s", extra_fixed},
                  {"analytic_per_token_s", extra_tok},
                  {"effective_bandwidth_bytes_per_s", eff_bw},
                  {"effective_flops", eff_fl},
                  {"comment",
                   "ops: each profiled op fitted as fixed + per_token x tokens (per layer; emb per "
                   "pass), for scaling the terms to another layer shape"}};
  r.calibration = calibration_json(meta, combined);
  return r;
}

}  // namespace metronome::calibrate
