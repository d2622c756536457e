#include "calibrate/roofline_transfer_fit.h"

#include <fmt/format.h>

#include <Eigen/Dense>
#include <algorithm>
#include <cmath>
#include <functional>

#include "base/config_error.h"
#include "calibrate/fit.h"
#include "sim/config/catalog.h"
#include "sim/config/scenario.h"

namespace metronome::calibrate {

namespace {

// The per-layer ops Vidur times, with their index in VidurMlpRow::seconds.
std::vector<std::pair<size_t, TokenOp>> profiled_ops(const LayerShape& s) {
  std::vector<std::pair<size_t, TokenOp>> out;
  const auto ops = token_ops(s);
  for (size_t k = 1; k < kVidurMlpOps.size(); ++k)  // 0 is emb, once per pass
    for (const auto& o : ops)
      if (o.name == kVidurMlpOps[k]) out.emplace_back(k, o);
  return out;
}

double median_of(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

using OpSeconds = std::function<double(const TokenOp&, double)>;

ProfileError profile_error(const OpSeconds& op_seconds, const VidurProfile& p) {
  ProfileError e;
  e.model = p.model;
  e.shape = p.shape;
  const auto ops = profiled_ops(p.shape);
  std::vector<double> predicted, measured;
  std::array<std::vector<double>, 3> bands;
  std::vector<std::vector<double>> per_op(ops.size());
  for (const auto& row : p.mlp) {
    const double n = static_cast<double>(row.tokens);
    double layer = 0;
    for (size_t j = 0; j < ops.size(); ++j) {
      const double t = op_seconds(ops[j].second, n);
      layer += t;
      per_op[j].push_back(t / row.seconds[ops[j].first]);
    }
    predicted.push_back(layer);
    measured.push_back(row.layer_seconds());
    bands[row.tokens < 64 ? 0 : row.tokens <= 512 ? 1 : 2].push_back(layer / measured.back());
  }
  e.layer = error_stats(predicted, measured);
  for (size_t b = 0; b < 3; ++b) e.band_ratio[b] = median_of(bands[b]);
  for (size_t j = 0; j < ops.size(); ++j)
    e.op_ratio.emplace_back(std::string(ops[j].second.name), median_of(per_op[j]));
  return e;
}

std::array<double, 3> gemm_dims(const LayerShape& s) {
  return {static_cast<double>(s.hidden),
          static_cast<double>((s.heads + 2 * s.kv_heads) * s.head_dim), static_cast<double>(s.ffn)};
}

}  // namespace

ProfileError shipped_correction_error(const RooflineCorrection& c, const VidurProfile& p,
                                      const GpuConfig& gpu) {
  // The shipped correction's layer overhead is spread evenly over the profiled kernels, as its fit
  // made it (kernels x per-kernel overhead).
  const double kernel_s = c.layer_overhead_s / op_totals(token_ops(p.shape), false, true).kernels;
  const double bw = gpu.memory_bandwidth_bytes_per_s;
  return profile_error(
      [&](const TokenOp& op, double n) {
        return kernel_s +
               op.bytes(n) /
                   ((op.gemm() ? c.bandwidth_fraction : c.pointwise_bandwidth_fraction) * bw) +
               op.flops(n) / (c.flops_fraction * gpu.bf16_flops);
      },
      p);
}

ProfileError transfer_error(const ShapeAwareCorrection& c, const VidurProfile& p,
                            const GpuConfig& gpu) {
  return profile_error(
      [&](const TokenOp& op, double n) { return shape_aware_seconds(c, op_terms(op, n, gpu)); }, p);
}

TransferFit fit_transfer(const std::vector<VidurProfile>& profiles, const GpuConfig& gpu) {
  TransferFit f;
  std::vector<ShapeAwareTerms> xs;
  std::vector<double> ys, ws;
  for (const auto& p : profiles) {
    f.fitted_on.push_back(p.model);
    f.shapes.push_back(p.shape);
    const auto ops = profiled_ops(p.shape);
    for (const auto& row : p.mlp) {
      const double n = static_cast<double>(row.tokens), w = 1.0 / row.layer_seconds();
      for (const auto& [k, op] : ops) {
        xs.push_back(op_terms(op, n, gpu));
        ys.push_back(row.seconds[k]);
        ws.push_back(w);
      }
    }
  }
  f.points = static_cast<int>(xs.size());
  std::string names;
  for (const auto& m : f.fitted_on) names += (names.empty() ? "" : ", ") + m;
  if (f.points < kShapeAwareCoefficients) {
    throw FitError(
        fmt::format("{}: {} equations for {} parameters: a fit needs at least as many "
                    "points as parameters",
                    names, f.points, kShapeAwareCoefficients));
  }
  Eigen::MatrixXd a(f.points, kShapeAwareCoefficients);
  Eigen::VectorXd b(f.points);
  for (Eigen::Index r = 0; r < a.rows(); ++r) {
    const auto i = static_cast<size_t>(r);
    for (Eigen::Index c = 0; c < a.cols(); ++c) a(r, c) = xs[i][static_cast<size_t>(c)] * ws[i];
    b(r) = ys[i] * ws[i];
  }
  Eigen::VectorXd norms = a.colwise().norm().transpose();
  for (Eigen::Index c = 0; c < a.cols(); ++c) {
    if (!(norms(c) > 0)) {
      throw FitError(
          fmt::format("{}: feature {} is zero on every row (no GEMM reached that "
                      "regime, or an op is missing)",
                      names, c));
    }
    a.col(c) /= norms(c);
  }
  Eigen::ColPivHouseholderQR<Eigen::MatrixXd> qr(a);
  qr.setThreshold(1e-10);
  if (qr.rank() < a.cols()) {
    throw FitError(names +
                   ": the rows cannot separate the nine coefficients (profile more "
                   "num_tokens values, on both sides of the ridge)");
  }
  const Eigen::VectorXd x = qr.solve(b);
  const Eigen::VectorXd fitted = a * x;
  const double mean = b.mean();
  f.r2 = 1.0 - (b - fitted).squaredNorm() / (b.array() - mean).square().sum();
  const Eigen::VectorXd coef = x.cwiseQuotient(norms);
  auto& c = f.correction;
  c.present = true;
  c.fitted_on = gpu.name;
  c.gemm_memory = coef(0);
  c.gemm_compute = coef(1);
  c.gemm_overlap = coef(2);
  c.gemm_kernel_s = coef(3);
  for (size_t k = 0; k < 4; ++k) c.pointwise[k] = coef(static_cast<Eigen::Index>(4 + k));
  c.pointwise_kernel_s = coef(8);
  if (!(c.gemm_memory > 0) || !(c.gemm_compute > 0) ||
      !std::all_of(c.pointwise.begin(), c.pointwise.end(), [](double v) { return v > 0; })) {
    throw FitError(
        fmt::format("{}: a fitted rate multiplier is not positive (memory {:.3g}, "
                    "compute {:.3g}): these timings do not follow a roofline",
                    names, c.gemm_memory, c.gemm_compute));
  }
  return f;
}

ShapeDistance shape_distance(const LayerShape& s, const std::vector<LayerShape>& fitted) {
  ShapeDistance d;
  const char* names[] = {"hidden", "QKV width", "FFN"};
  const auto v = gemm_dims(s);
  for (size_t k = 0; k < 3; ++k) {
    double lo = INFINITY, hi = 0;
    for (const auto& f : fitted) {
      lo = std::min(lo, gemm_dims(f)[k]);
      hi = std::max(hi, gemm_dims(f)[k]);
    }
    const double out = v[k] > 0 ? std::max({lo / v[k], v[k] / hi, 1.0}) : INFINITY;
    d.factor = std::max(d.factor, out);
    d.text += fmt::format("{}{} {:.0f} in [{:.0f}, {:.0f}]", k ? "; " : "", names[k], v[k], lo, hi);
    if (out > 1) d.text += std::isinf(out) ? " (none)" : fmt::format(" (x{:.2f} outside)", out);
  }
  return d;
}

std::vector<HeldOutFold> leave_one_profile_out(const std::vector<VidurProfile>& profiles,
                                               const GpuConfig& gpu) {
  if (profiles.size() < 3) {
    throw FitError(
        fmt::format("{} profiles: leaving one out needs at least 3 (each fold fits on "
                    "two shapes or more)",
                    profiles.size()));
  }
  std::vector<HeldOutFold> folds;
  for (size_t out = 0; out < profiles.size(); ++out) {
    std::vector<VidurProfile> train;
    for (size_t i = 0; i < profiles.size(); ++i)
      if (i != out) train.push_back(profiles[i]);
    HeldOutFold f;
    f.fit = fit_transfer(train, gpu);
    f.held_out = transfer_error(f.fit.correction, profiles[out], gpu);
    f.old_form_held_out =
        shipped_correction_error(fit_roofline_correction_on(train, gpu), profiles[out], gpu);
    f.distance = shape_distance(profiles[out].shape, f.fit.shapes);
    folds.push_back(std::move(f));
  }
  return folds;
}

std::string trust_statement(const std::string& name, const LayerShape& s,
                            const std::vector<LayerShape>& fitted,
                            const std::vector<HeldOutFold>& folds) {
  if (s.ffn == 0) {
    return fmt::format(
        "  trust {}: no dense MLP (MoE experts), a GEMM shape no profile has: no "
        "held-out error applies\n",
        name);
  }
  const ShapeDistance d = shape_distance(s, fitted);
  const HeldOutFold* worst = nullptr;
  double farthest = 1;
  for (const auto& f : folds) {
    farthest = std::max(farthest, f.distance.factor);
    if (f.distance.factor + 1e-9 < d.factor) continue;
    if (!worst || f.held_out.layer.p90 > worst->held_out.layer.p90) worst = &f;
  }
  std::string out = fmt::format("  trust {}: {}", name, d.text);
  if (!worst) {
    return out + fmt::format(
                     "; farther (x{:.2f}) than any held-out profile was from its fit (x{:.2f}): "
                     "no held-out error says how far to trust it\n",
                     d.factor, farthest);
  }
  return out + fmt::format(
                   "; expect a layer's error up to median {:.1f}% p90 {:.1f}% (the worst "
                   "profile held out at least as far: {}, x{:.2f})\n",
                   100 * worst->held_out.layer.median, 100 * worst->held_out.layer.p90,
                   worst->held_out.model, worst->distance.factor);
}

std::string transfer_text(const TransferFit& f) {
  const auto& c = f.correction;
  std::string on;
  for (const auto& m : f.fitted_on) on += (on.empty() ? "" : ", ") + m;
  return fmt::format(
      "  shape-aware correction on {} ({} points, R2 {:.4f}): GEMM memory-bound x{:.3f}, "
      "compute-bound x{:.3f}, overlap {:.2f} of the smaller, {:.2f} us per GEMM; pointwise norm "
      "x{:.2f}, rope x{:.2f}, activation x{:.2f}, add x{:.2f} of datasheet time, {:.2f} us per "
      "kernel\n",
      on, f.points, f.r2, c.gemm_memory, c.gemm_compute, c.gemm_overlap, 1e6 * c.gemm_kernel_s,
      c.pointwise[0], c.pointwise[1], c.pointwise[2], c.pointwise[3], 1e6 * c.pointwise_kernel_s);
}

std::string profile_error_text(const std::string& what, const ProfileError& e) {
  std::string s = fmt::format(
      "    {:<34} {:>4} rows  median {:5.1f}%  p90 {:5.1f}%  max {:5.1f}%  predicted/measured "
      "<64 x{:.2f} 64-512 x{:.2f} >512 x{:.2f}; add x{:.2f}\n",
      what, e.layer.points, 100 * e.layer.median, 100 * e.layer.p90, 100 * e.layer.max,
      e.band_ratio[0], e.band_ratio[1], e.band_ratio[2], [&] {
        for (const auto& [op, r] : e.op_ratio)
          if (op == "add") return r;
        return 0.0;
      }());
  return s;
}

std::string transfer_report(const std::vector<VidurProfile>& profiles, const GpuConfig& gpu) {
  std::string s;
  if (gpu.roofline_correction.present) {
    s += fmt::format("  the {} file's roofline correction (fitted on {}), on each profile:\n",
                     gpu.name, gpu.roofline_correction.fitted_on);
    for (const auto& p : profiles)
      s += profile_error_text(p.model, shipped_correction_error(gpu.roofline_correction, p, gpu));
  }
  const TransferFit all = fit_transfer(profiles, gpu);
  s += transfer_text(all);
  for (const auto& p : profiles)
    s += profile_error_text(p.model + " (fitted)", transfer_error(all.correction, p, gpu));
  const auto folds = leave_one_profile_out(profiles, gpu);
  s += "  held out, one profile at a time (fitted on the others):\n";
  for (const auto& f : folds) {
    s += profile_error_text(f.held_out.model + " (held out)", f.held_out);
    s += profile_error_text("  old form refitted on the others", f.old_form_held_out);
    s += fmt::format("      its shape against the fit's: {}\n", f.distance.text);
  }
  // Every shipped model's layer under the fit on all: how far from the profiles, what to expect.
  for (const auto& name : embedded_names("models")) {
    ModelConfig m;
    try {
      m = load_scenario("", {"model=" + name, "gpu=" + gpu.name}).model;
    } catch (const ConfigError&) {
      continue;  // a model this GPU cannot hold: no trust to state
    }
    s += trust_statement(name, layer_shape(m), all.shapes, folds);
  }
  return s;
}

nlohmann::json transfer_json(const std::vector<VidurProfile>& profiles, const GpuConfig& gpu) {
  TransferFit all = fit_transfer(profiles, gpu);
  std::string on;
  for (const auto& m : all.fitted_on) on += (on.empty() ? "" : ", ") + m;
  all.correction.source = fmt::format(
      "fitted by `metronome calibrate import-vidur --transfer-model` to Vidur's measured {} "
      "profiles of {} (results/vidur/, MIT; torch profiler kernel times, not measured by this "
      "project); {} equations, R2 {:.4f}",
      gpu.name, on, all.points, all.r2);
  nlohmann::json j = shape_aware_json(all.correction);
  nlohmann::json held = nlohmann::json::array();
  for (const auto& f : leave_one_profile_out(profiles, gpu)) {
    held.push_back({{"model", f.held_out.model},
                    {"median", f.held_out.layer.median},
                    {"p90", f.held_out.layer.p90},
                    {"max", f.held_out.layer.max},
                    {"rows", f.held_out.layer.points},
                    {"shape", f.distance.text}});
  }
  j["held_out"] = held;
  return j;
}

}  // namespace metronome::calibrate
