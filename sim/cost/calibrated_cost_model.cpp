#include "sim/cost/calibrated_cost_model.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <fstream>
#include <iostream>
#include <sstream>

#include "base/config_error.h"
#include "base/json_file.h"
#include "base/json_section.h"
#include "sim/config/scenario.h"

namespace metronome {

namespace {
constexpr double kMaxCoefficient = 3600;
struct TermInfo {
  CostTerm term;
  std::string_view name, unit;
};
constexpr TermInfo kTerms[] = {
    {CostTerm::kFixed, "fixed", "s"},
    {CostTerm::kSessions, "sessions", "s/session"},
    {CostTerm::kQueryTokens, "query_tokens", "s/token"},
    {CostTerm::kKvReadTokens, "kv_read_tokens", "s/token"},
    {CostTerm::kQkPairs, "qk_pairs", "s/pair"},
    {CostTerm::kExpertLayers, "expert_layers", "s/(expert x layer)"},
};
}  // namespace

std::string_view term_name(CostTerm t) { return kTerms[static_cast<int>(t)].name; }
std::string_view term_unit(CostTerm t) { return kTerms[static_cast<int>(t)].unit; }
bool term_from_name(std::string_view name, CostTerm& out) {
  for (const auto& i : kTerms) {
    if (i.name == name) {
      out = i.term;
      return true;
    }
  }
  return false;
}

double TermModel::experts_touched(int64_t tokens) const {
  if (experts <= 0 || tokens <= 0) return 0;
  const double e = static_cast<double>(experts), k = static_cast<double>(experts_active);
  return e * (1.0 - std::pow(1.0 - k / e, static_cast<double>(tokens)));
}

double term_feature(CostTerm t, const PassShape& s, const TermModel& m) {
  switch (t) {
    case CostTerm::kFixed:
      return 1.0;
    case CostTerm::kSessions:
      return static_cast<double>(s.sessions);
    case CostTerm::kQueryTokens:
      return static_cast<double>(s.query_tokens);
    case CostTerm::kKvReadTokens:
      return static_cast<double>(s.kv_read_tokens);
    case CostTerm::kQkPairs:
      return s.qk_pairs;
    case CostTerm::kExpertLayers:
      return static_cast<double>(m.layers) * m.experts_touched(s.query_tokens);
  }
  return 0;
}

double Calibration::seconds(const PassShape& s) const {
  double t = 0;
  for (const auto& term : terms) {
    if (!term.dropped) t += term.coefficient * term_feature(term.term, s, model);
  }
  return t;
}

Calibration parse_calibration(const nlohmann::json& j, const std::string& source) {
  if (!j.is_object()) throw ConfigError(source + ": expected a calibration JSON object");
  JsonSection top(j, source, "");
  Calibration c;
  c.source = source;
  if (top.string("kind", std::nullopt) != kCalibrationKind) {
    top.fail("kind", "\"" + std::string(kCalibrationKind) + "\" (not a calibration file)");
  }
  const int64_t version = top.integer("schema_version", std::nullopt, 0, 1'000'000);
  if (version != kCalibrationSchemaVersion) {
    throw ConfigError(
        fmt::format("{}: schema_version: this build reads version {}, the file is "
                    "version {}; regenerate it with `metronome calibrate fit`",
                    source, kCalibrationSchemaVersion, version));
  }
  c.measured = top.boolean("measured", false);
  if (!top.has("measured")) top.fail("measured", "true or false");
  c.backend = top.one_of("backend", std::nullopt, {"gpu", "cpu", "analytic"});
  if (c.measured == (c.backend == "analytic")) {
    top.fail("measured", c.measured ? "false for an analytic file" : "true for a measured backend");
  }
  c.label = top.string("label", "");
  c.date = top.string("date", std::nullopt);
  top.string("comment", "");
  {
    JsonSection m = top.section("model", true);
    c.model_name = m.string("name", std::nullopt);
    c.model.layers = m.integer("layers", std::nullopt, 1, 100000);
    c.model.experts = m.integer("experts", 0, 0, 100000);
    c.model.experts_active = m.integer("experts_active", 0, 0, 100000);
    if (c.model.experts > 0 &&
        (c.model.experts_active < 1 || c.model.experts_active > c.model.experts)) {
      m.fail("experts_active", "between 1 and experts for an MoE model");
    }
    m.finish();
  }
  {
    JsonSection d = top.section("device", true);
    c.device_name = d.string("name", std::nullopt);
    c.driver = d.string("driver", "");
    d.string("cuda_runtime", "");
    d.string("host", "");
    d.finish();
  }
  top.raw("source");
  top.raw("grid");
  top.raw("points");
  {
    JsonSection f = top.section("fit", true);
    f.string("method", "");
    f.raw("warnings");
    f.integer("train_points", 0, 0, 1'000'000'000);
    f.integer("heldout_points", 0, 0, 1'000'000'000);
    c.r2 = f.in_range("r2", std::nullopt, -1e300, 1.0);
    c.heldout_median_ape = f.in_range("heldout_median_ape", std::nullopt, 0, 1e300);
    c.heldout_max_ape = f.in_range("heldout_max_ape", std::nullopt, 0, 1e300);
    const nlohmann::json& terms = f.raw("terms");
    if (!terms.is_array() || terms.empty())
      f.fail("terms", "a non-empty array of {name, coefficient}");
    std::vector<bool> seen(kAllCostTerms.size(), false);
    for (size_t i = 0; i < terms.size(); ++i) {
      const std::string where = f.field("terms") + "[" + std::to_string(i) + "]";
      if (!terms[i].is_object()) throw ConfigError(source + ": " + where + ": expected an object");
      JsonSection t(terms[i], source, where);
      const std::string name = t.string("name", std::nullopt);
      CalibrationTerm ct{};
      if (!term_from_name(name, ct.term)) {
        t.fail("name",
               "one of fixed, sessions, query_tokens, kv_read_tokens, qk_pairs, expert_layers");
      }
      if (seen[static_cast<size_t>(ct.term)]) t.fail("name", "each term once");
      seen[static_cast<size_t>(ct.term)] = true;
      // Seconds per unit of a feature (per session, token, pair): an hour per unit is already
      // absurd, and the bound keeps every sum of terms finite (1e308 x a feature is inf).
      ct.coefficient = t.in_range("coefficient", std::nullopt, -kMaxCoefficient, kMaxCoefficient);
      ct.dropped = t.boolean("dropped", false);
      ct.origin = t.has("origin") ? t.one_of("origin", std::nullopt, {"measured", "analytic"}) : "";
      const std::string unit = t.string("unit", std::string(term_unit(ct.term)));
      if (unit != term_unit(ct.term)) t.fail("unit", fmt::format("\"{}\"", term_unit(ct.term)));
      t.finish();
      if (ct.term == CostTerm::kExpertLayers && c.model.experts == 0 && ct.coefficient != 0 &&
          !ct.dropped) {
        t.fail("name", "no expert_layers term for a dense model (model.experts is 0)");
      }
      c.terms.push_back(ct);
    }
    f.finish();
  }
  if (top.has("scaling")) {
    JsonSection sc = top.section("scaling", true);
    c.has_scaling = true;
    auto& x = c.scaling;
    JsonSection pr = sc.section("profiled", true);
    x.profiled_model = pr.string("model", std::nullopt);
    x.layers = pr.integer("layers", std::nullopt, 1, 100000);
    JsonSection sh = pr.section("shape", true);
    x.shape.hidden = sh.integer("hidden", std::nullopt, 1, 1 << 24);
    x.shape.heads = sh.integer("heads", std::nullopt, 1, 1 << 16);
    x.shape.kv_heads = sh.integer("kv_heads", std::nullopt, 1, 1 << 16);
    x.shape.head_dim = sh.integer("head_dim", std::nullopt, 1, 1 << 16);
    x.shape.ffn = sh.integer("ffn", std::nullopt, 0, 1 << 24);
    x.shape.vocab = sh.integer("vocab", std::nullopt, 0, 1 << 24);
    x.shape.gated_mlp = sh.boolean("gated_mlp", true);
    sh.finish();
    pr.finish();
    const nlohmann::json& ops = sc.raw("ops");
    if (!ops.is_array() || ops.empty())
      sc.fail("ops", "a non-empty array of {name, fixed_s, per_token_s}");
    for (size_t i = 0; i < ops.size(); ++i) {
      const std::string where = sc.field("ops") + "[" + std::to_string(i) + "]";
      if (!ops[i].is_object()) throw ConfigError(source + ": " + where + ": expected an object");
      JsonSection o(ops[i], source, where);
      ScalingOp op;
      op.name = o.string("name", std::nullopt);
      op.fixed_s = o.in_range("fixed_s", std::nullopt, 0, 1e3);
      op.per_token_s = o.in_range("per_token_s", std::nullopt, 0, 1e3);
      o.finish();
      const auto known = token_ops(x.shape);
      if (std::none_of(known.begin(), known.end(),
                       [&](const TokenOp& k) { return k.name == op.name; })) {
        o.fail("name", "a token-level op of sim/cost/layer_ops.h (emb, attn_pre_proj, ...)");
      }
      x.ops.push_back(op);
    }
    x.analytic_fixed_s = sc.in_range("analytic_fixed_s", 0.0, 0, 1e3);
    x.analytic_per_token_s = sc.in_range("analytic_per_token_s", 0.0, 0, 1e3);
    x.effective_bandwidth = sc.in_range("effective_bandwidth_bytes_per_s", std::nullopt, 1, 1e16);
    x.effective_flops = sc.in_range("effective_flops", std::nullopt, 1, 1e19);
    sc.string("comment", "");
    sc.finish();
  }
  top.finish();
  return c;
}

namespace {

const TokenOp* find_op(const std::vector<TokenOp>& ops, std::string_view name) {
  for (const auto& o : ops)
    if (o.name == name) return &o;
  return nullptr;
}

std::string shape_text(const std::string& name, int64_t layers, const LayerShape& s) {
  return fmt::format("{} ({} layers, hidden {}, heads {}/{}, FFN {})", name, layers, s.hidden,
                     s.heads, s.kv_heads, s.ffn);
}

// The output head and other ops a profile lacks, under the corrected roofline.
std::pair<double, double> analytic_extra(const std::vector<TokenOp>& ops, double bw, double fl) {
  double fixed = 0, per_token = 0;
  for (const auto& o : ops) {
    if (o.in_vidur_profile) continue;
    fixed += o.bytes_fixed / bw;
    per_token += o.bytes_per_token / bw + o.flops_per_token / fl;
  }
  return {fixed, per_token};
}

}  // namespace

Calibration scale_calibration(const Calibration& c, const ModelConfig& target) {
  if (!c.has_scaling) {
    throw ConfigError(c.source + ": calibrates model \"" + c.model_name +
                      "\" and has no scaling section, so it cannot be used for model \"" +
                      target.name + "\"; calibrate that model or use cost_model.type \"roofline\"");
  }
  if (target.moe()) {
    throw ConfigError(c.source + ": scaling a dense profile to the MoE model \"" + target.name +
                      "\" is not supported (its experts were never measured)");
  }
  const auto& x = c.scaling;
  const LayerShape ts = layer_shape(target);
  const auto pops = token_ops(x.shape), tops = token_ops(ts);
  const double pl = static_cast<double>(x.layers), tl = static_cast<double>(target.layers);
  double p_fixed = 0, p_tok = 0, t_fixed = 0, t_tok = 0;
  for (const auto& op : x.ops) {
    const TokenOp* p = find_op(pops, op.name);
    const TokenOp* t = find_op(tops, op.name);
    const double pm = p && p->per_pass ? 1.0 : pl, tm = t && t->per_pass ? 1.0 : tl;
    p_fixed += pm * op.fixed_s;
    p_tok += pm * op.per_token_s;
    if (!t || !p) continue;
    const double rf = p->bytes_fixed > 0 ? t->bytes_fixed / p->bytes_fixed : 1.0;
    const double rt = p->flops_per_token > 0   ? t->flops_per_token / p->flops_per_token
                      : p->bytes_per_token > 0 ? t->bytes_per_token / p->bytes_per_token
                                               : 1.0;
    t_fixed += tm * op.fixed_s * rf;
    t_tok += tm * op.per_token_s * rt;
  }
  const double p_kv = 2.0 * pl * static_cast<double>(x.shape.kv_heads * x.shape.head_dim) * 2.0;
  const double p_attn = pl * static_cast<double>(x.shape.heads * x.shape.head_dim);
  const double t_kv = static_cast<double>(target.kv_bytes_per_token());
  auto [extra_fixed, extra_tok] = analytic_extra(tops, x.effective_bandwidth, x.effective_flops);
  extra_tok += t_kv / x.effective_bandwidth;  // each new token's KV written
  const double t_attn = tl * static_cast<double>(target.attention_heads * target.head_dim);
  Calibration out = c;
  out.model_name = target.name;
  out.model.layers = target.layers;
  for (auto& term : out.terms) {
    if (term.dropped) continue;
    const bool analytic = term.origin == "analytic";
    switch (term.term) {
      case CostTerm::kFixed:
        term.coefficient =
            (term.coefficient - x.analytic_fixed_s) * (p_fixed > 0 ? t_fixed / p_fixed : 1.0) +
            extra_fixed;
        break;
      case CostTerm::kQueryTokens:
        term.coefficient =
            (term.coefficient - x.analytic_per_token_s) * (p_tok > 0 ? t_tok / p_tok : 1.0) +
            extra_tok;
        break;
      case CostTerm::kKvReadTokens:
        term.coefficient = analytic ? t_kv / x.effective_bandwidth : term.coefficient * t_kv / p_kv;
        break;
      case CostTerm::kQkPairs:
        term.coefficient =
            analytic ? 4.0 * t_attn / x.effective_flops : term.coefficient * t_attn / p_attn;
        break;
      case CostTerm::kSessions:
        term.coefficient *= tl / pl;
        break;
      case CostTerm::kExpertLayers:
        break;
    }
  }
  out.scaled_from = "scaled from " + shape_text(x.profiled_model, x.layers, x.shape) + " to " +
                    shape_text(target.name, target.layers, ts) + " by each op's FLOPs and bytes";
  return out;
}

Calibration read_calibration(const std::string& path) {
  return parse_calibration(read_json_file(path, "calibration file"), path);
}

CalibratedCostModel::CalibratedCostModel(Calibration c, double step_overhead_s)
    : c_(std::move(c)), overhead_s_(step_overhead_s) {}

double CalibratedCostModel::pass_seconds(const PassShape& s) const {
  if (s.sessions == 0) return 0;
  // A pass never takes negative time: a calibration that says so (a negative coefficient, or a
  // fit far outside its grid) is refused rather than clamped to 0, which would make the engine
  // infinitely fast without a word.
  const double t = c_.seconds(s);
  if (!(t >= 0)) {
    throw ConfigError(fmt::format(
        "{}: fit.terms: the calibration gives a pass of {} sessions, {} query tokens, {} KV tokens "
        "read a time of {:.4g} s; expected a time >= 0 (a negative coefficient: refit without "
        "--allow-negative, or on a grid that covers this shape)",
        c_.source, s.sessions, s.query_tokens, s.kv_read_tokens, t));
  }
  return overhead_s_ + t;
}

std::string CalibratedCostModel::label() const {
  if (!c_.measured) return fmt::format("analytic: {} (calibration file {})", c_.label, c_.source);
  const std::string what =
      c_.backend == "cpu"
          // A live engine's profile (scripts/vllm_live_profile.py) times whole vLLM steps.
          ? (c_.device_name.rfind("vLLM ", 0) == 0
                 ? fmt::format("steps of {} (a CPU, not a GPU)", c_.device_name)
                 : fmt::format("CPU reference kernels on {} (a CPU, not a GPU)", c_.device_name))
          : fmt::format("GPU {}{}", c_.device_name,
                        c_.driver.empty() ? "" : ", driver " + c_.driver);
  bool mixed = false;
  for (const auto& t : c_.terms) mixed = mixed || (!t.dropped && t.origin == "analytic");
  return fmt::format(
      "measured: {}, {} ({}), R2 {:.4f}, held-out median {:.1f}% max {:.1f}%{}{}", what, c_.source,
      c_.date, c_.r2, 100 * c_.heldout_median_ape, 100 * c_.heldout_max_ape,
      mixed ? "; token-level terms measured, attention (KV) terms analytic (corrected roofline)"
            : "",
      c_.scaled_from.empty() ? "" : "; " + c_.scaled_from);
}

namespace {
std::string lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return std::tolower(c); });
  return s;
}
}  // namespace

std::unique_ptr<CostModel> make_calibrated_cost_model(const Scenario& s) {
  Calibration c = read_calibration(s.cost_model.file);
  // A calibration of another model has the wrong coefficients for every term: scale it op by op
  // where the file says how (an imported profile), refuse it otherwise.
  if (!measured_on(c, s.model) && c.has_scaling) {
    try {
      c = scale_calibration(c, s.model);
    } catch (const ConfigError& e) {
      throw ConfigError("cost_model.file: " + std::string(e.what()));
    }
  }
  if (!measured_on(c, s.model)) {
    throw ConfigError("cost_model.file: " + c.source + " calibrates model \"" + c.model_name +
                      "\", the scenario runs \"" + s.model.name +
                      "\"; calibrate this model or use cost_model.type \"roofline\"");
  }
  if (c.model.layers != s.model.layers) {
    throw ConfigError("cost_model.file: " + c.source + " has model.layers " +
                      std::to_string(c.model.layers) + ", the scenario's model has " +
                      std::to_string(s.model.layers));
  }
  // Another device is legitimate (a CPU calibration in CI, a GPU without a file yet) but must be
  // visible: the pool is sized from the scenario's GPU while the time comes from the file's device.
  if (c.backend == "cpu") {
    std::cerr << "metronome: warning: " << c.source << " was measured on a CPU (" << c.device_name
              << "), not on the scenario's GPU \"" << s.gpu.name << "\"\n";
  } else if (lower(c.device_name).find(lower(s.gpu.name)) == std::string::npos) {
    std::cerr << "metronome: warning: " << c.source << " describes device \"" << c.device_name
              << "\", the scenario's GPU is \"" << s.gpu.name << "\"\n";
  }
  return std::make_unique<CalibratedCostModel>(std::move(c), s.cost_model.step_overhead_s);
}

}  // namespace metronome
