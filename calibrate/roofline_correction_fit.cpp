#include "calibrate/roofline_correction_fit.h"

#include <fmt/format.h>

#include <Eigen/Dense>
#include <algorithm>
#include <cmath>

#include "calibrate/fit.h"

namespace metronome::calibrate {

ErrorStats error_stats(const std::vector<double>& predicted, const std::vector<double>& measured) {
  ErrorStats s;
  std::vector<double> e, ratio;
  for (size_t i = 0; i < measured.size(); ++i) {
    e.push_back(std::fabs(predicted[i] - measured[i]) / measured[i]);
    ratio.push_back(predicted[i] / measured[i]);
  }
  s.points = static_cast<int>(e.size());
  if (e.empty()) return s;
  std::sort(e.begin(), e.end());
  std::sort(ratio.begin(), ratio.end());
  const size_t n = e.size();
  auto median = [n](const std::vector<double>& v) {
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
  };
  s.median = median(e);
  s.median_ratio = median(ratio);
  // p90 by linear interpolation between order statistics (numpy's default).
  const double pos = 0.9 * static_cast<double>(n - 1);
  const size_t lo = static_cast<size_t>(pos);
  const size_t hi = std::min(lo + 1, n - 1);
  s.p90 = e[lo] + (pos - static_cast<double>(lo)) * (e[hi] - e[lo]);
  s.max = e.back();
  return s;
}

double datasheet_layer_seconds(const LayerShape& s, const GpuConfig& gpu, double tokens) {
  const OpTotals t = op_totals(token_ops(s), false, true);
  return std::max((t.gemm_bytes_fixed + t.pointwise_bytes_fixed) / gpu.memory_bandwidth_bytes_per_s,
                  t.flops_per_token * tokens / gpu.bf16_flops);
}

double corrected_layer_seconds(const LayerShape& s, const RooflineCorrection& c,
                               const GpuConfig& gpu, double tokens) {
  const OpTotals t = op_totals(token_ops(s), false, true);
  const double bw = gpu.memory_bandwidth_bytes_per_s;
  return c.layer_overhead_s +
         (t.gemm_bytes_fixed + t.gemm_bytes_per_token * tokens) / (c.bandwidth_fraction * bw) +
         (t.pointwise_bytes_fixed + t.pointwise_bytes_per_token * tokens) /
             (c.pointwise_bandwidth_fraction * bw) +
         t.flops_per_token * tokens / (c.flops_fraction * gpu.bf16_flops);
}

namespace {

// One equation per (row, profiled op): the op's time against its GEMM bytes, pointwise bytes,
// FLOPs and one kernel, weighted by 1 / that row's layer time so that every row counts in
// proportion to its layer (relative error of the layer, as the simulator needs it).
struct Eq {
  std::array<double, 4> x;
  double t;
};

void add_equations(const VidurProfile& p, const GpuConfig& gpu, const std::vector<bool>& skip,
                   std::vector<Eq>& eqs) {
  const auto ops = token_ops(p.shape);
  const double bw = gpu.memory_bandwidth_bytes_per_s, fl = gpu.bf16_flops;
  for (size_t i = 0; i < p.mlp.size(); ++i) {
    if (skip[i]) continue;
    const double n = static_cast<double>(p.mlp[i].tokens), w = 1.0 / p.mlp[i].layer_seconds();
    for (size_t k = 0; k < kVidurMlpOps.size(); ++k) {
      const TokenOp* op = nullptr;
      for (const auto& o : ops)
        if (o.name == kVidurMlpOps[k]) op = &o;
      if (!op) continue;  // an op this layer shape does not have (no dense MLP)
      const double bytes = op->bytes(n) / bw;
      eqs.push_back(
          {{op->gemm() ? bytes * w : 0.0, op->gemm() ? 0.0 : bytes * w, op->flops(n) / fl * w, w},
           p.mlp[i].seconds[k] * w});
    }
  }
}

// x = (1/f_bw, 1/f_pw, 1/f_flops, per-kernel overhead). A fraction above 1 (faster than the
// datasheet: Vidur reuses dummy weights, so a GEMM whose weights fit in L2 can beat HBM) is pinned
// to 1, a negative overhead to 0, and the rest refitted: the roofline never promises more than the
// datasheet.
struct Solved {
  std::array<double, 4> x{1, 1, 1, 0};
  std::array<bool, 4> pinned{};
};

Solved solve(const std::vector<Eq>& eqs, const std::string& what) {
  Solved solved;
  auto& x = solved.x;
  auto& pinned = solved.pinned;
  for (int iter = 0; iter < 5; ++iter) {
    std::vector<int> free;
    for (int c = 0; c < 4; ++c)
      if (!pinned[static_cast<size_t>(c)]) free.push_back(c);
    if (free.empty()) break;  // every parameter pinned: nothing left to solve for
    Eigen::MatrixXd a(static_cast<Eigen::Index>(eqs.size()),
                      static_cast<Eigen::Index>(free.size()));
    Eigen::VectorXd b(a.rows());
    for (Eigen::Index r = 0; r < a.rows(); ++r) {
      const Eq& e = eqs[static_cast<size_t>(r)];
      double rhs = e.t;
      for (int c = 0; c < 4; ++c)
        if (pinned[static_cast<size_t>(c)])
          rhs -= x[static_cast<size_t>(c)] * e.x[static_cast<size_t>(c)];
      b(r) = rhs;
      for (size_t j = 0; j < free.size(); ++j)
        a(r, static_cast<Eigen::Index>(j)) = e.x[static_cast<size_t>(free[j])];
    }
    Eigen::VectorXd norms = a.colwise().norm().transpose();
    for (Eigen::Index c = 0; c < a.cols(); ++c) {
      if (!(norms(c) > 0)) throw FitError(what + ": a roofline feature is zero on every row");
      a.col(c) /= norms(c);
    }
    Eigen::ColPivHouseholderQR<Eigen::MatrixXd> qr(a);
    qr.setThreshold(1e-10);
    if (qr.rank() < a.cols()) {
      throw FitError(what +
                     ": the rows cannot separate GEMM bandwidth, pointwise bandwidth, FLOP/s and "
                     "kernel overhead (profile more num_tokens values)");
    }
    const Eigen::VectorXd sol = qr.solve(b).cwiseQuotient(norms);
    for (size_t j = 0; j < free.size(); ++j)
      x[static_cast<size_t>(free[j])] = sol(static_cast<Eigen::Index>(j));
    bool changed = false;
    for (int c = 0; c < 3; ++c) {
      auto& v = x[static_cast<size_t>(c)];
      if (!pinned[static_cast<size_t>(c)] && v > 0 && v < 1) {
        v = 1;
        pinned[static_cast<size_t>(c)] = changed = true;
      }
    }
    if (!pinned[3] && x[3] < 0) {
      x[3] = 0;
      pinned[3] = changed = true;
    }
    if (!changed) break;
  }
  if (!(x[0] > 0) || !(x[1] > 0) || !(x[2] > 0)) {
    throw FitError(
        fmt::format("{}: a fitted 1/fraction is not positive ({:.3g}, {:.3g}, {:.3g}): "
                    "these timings do not follow a roofline",
                    what, x[0], x[1], x[2]));
  }
  return solved;
}

RooflineCorrection correction_of(const Solved& s, const LayerShape& shape, const GpuConfig& gpu) {
  const auto ops = token_ops(shape);
  RooflineCorrection c;
  c.present = true;
  c.bandwidth_fraction = 1.0 / s.x[0];
  c.pointwise_bandwidth_fraction = 1.0 / s.x[1];
  c.flops_fraction = 1.0 / s.x[2];
  c.layer_overhead_s = s.x[3] * op_totals(ops, false, true).kernels;
  c.pass_overhead_s = s.x[3] * op_totals(ops, true).kernels;  // embedding and output head
  c.fitted_on = gpu.name;
  return c;
}

}  // namespace

RooflineCorrection fit_roofline_correction_on(const std::vector<VidurProfile>& profiles,
                                              const GpuConfig& gpu) {
  if (profiles.empty()) throw FitError("no profile to fit the roofline correction on");
  std::vector<Eq> eqs;
  std::string what;
  for (const auto& p : profiles) {
    add_equations(p, gpu, std::vector<bool>(p.mlp.size(), false), eqs);
    what += (what.empty() ? "" : ", ") + p.mlp_path;
  }
  if (eqs.size() < 4) throw FitError(what + ": fewer equations than the 4 parameters");
  return correction_of(solve(eqs, what), profiles.front().shape, gpu);
}

RooflineCorrectionFit fit_roofline_correction(const VidurProfile& p, const GpuConfig& gpu,
                                              int heldout_every) {
  if (heldout_every < 2) throw FitError("heldout_every: expected >= 2");
  RooflineCorrectionFit f;
  f.heldout_every = heldout_every;
  for (size_t i = 0; i < p.mlp.size(); ++i) {
    f.tokens.push_back(p.mlp[i].tokens);
    f.measured.push_back(p.mlp[i].layer_seconds());
    f.heldout.push_back((i + 1) % static_cast<size_t>(heldout_every) == 0);
  }
  f.train_points = static_cast<int>(p.mlp.size()) -
                   static_cast<int>(std::count(f.heldout.begin(), f.heldout.end(), true));
  f.heldout_points = static_cast<int>(p.mlp.size()) - f.train_points;
  if (f.train_points < 4) {
    throw FitError(
        fmt::format("{}: {} rows ({} to train) for 4 parameters: a fit needs at least "
                    "as many training points as parameters",
                    p.mlp_path, p.mlp.size(), f.train_points));
  }
  std::vector<Eq> eqs;
  add_equations(p, gpu, f.heldout, eqs);
  const Solved s = solve(eqs, p.mlp_path);
  f.correction = correction_of(s, p.shape, gpu);
  const RooflineCorrection& c = f.correction;
  f.kernel_overhead_s = s.x[3];
  f.pinned = {s.pinned[0], s.pinned[1], s.pinned[2]};

  std::vector<double> bh, ah, mh;
  for (size_t i = 0; i < f.tokens.size(); ++i) {
    const double n = static_cast<double>(f.tokens[i]);
    f.before.push_back(datasheet_layer_seconds(p.shape, gpu, n));
    f.after.push_back(corrected_layer_seconds(p.shape, c, gpu, n));
    if (f.heldout[i]) {
      bh.push_back(f.before.back());
      ah.push_back(f.after.back());
      mh.push_back(f.measured[i]);
    }
  }
  f.before_heldout = error_stats(bh, mh);
  f.after_heldout = error_stats(ah, mh);
  f.before_all = error_stats(f.before, f.measured);
  f.after_all = error_stats(f.after, f.measured);
  return f;
}

namespace {
nlohmann::json stats_json(const ErrorStats& s) {
  return {{"points", s.points},
          {"median", s.median},
          {"p90", s.p90},
          {"max", s.max},
          {"median_predicted_over_measured", s.median_ratio}};
}
}  // namespace

nlohmann::json correction_json(const RooflineCorrectionFit& f, const std::string& source) {
  const auto& c = f.correction;
  nlohmann::json pinned = nlohmann::json::array();
  const char* names[] = {"bandwidth_fraction", "pointwise_bandwidth_fraction", "flops_fraction"};
  for (size_t i = 0; i < 3; ++i)
    if (f.pinned[i]) pinned.push_back(names[i]);
  return {{"bandwidth_fraction", c.bandwidth_fraction},
          {"pointwise_bandwidth_fraction", c.pointwise_bandwidth_fraction},
          {"flops_fraction", c.flops_fraction},
          {"layer_overhead_s", c.layer_overhead_s},
          {"pass_overhead_s", c.pass_overhead_s},
          {"fitted_on", c.fitted_on},
          {"source", source},
          {"error",
           {{"what",
             "one layer's token-level ops (Vidur mlp.csv, tensor parallel 1), absolute relative "
             "error of the predicted time; held out: every " +
                 std::to_string(f.heldout_every) + "th row by num_tokens"},
            {"train_points", f.train_points},
            {"kernel_overhead_s", f.kernel_overhead_s},
            {"pinned_at_datasheet", pinned},
            {"before_heldout", stats_json(f.before_heldout)},
            {"after_heldout", stats_json(f.after_heldout)},
            {"before_all", stats_json(f.before_all)},
            {"after_all", stats_json(f.after_all)}}}};
}

std::string correction_text(const RooflineCorrectionFit& f) {
  const auto& c = f.correction;
  std::string s = fmt::format(
      "  roofline correction ({}): GEMM bandwidth {:.1f}%{}, pointwise bandwidth {:.1f}%, FLOP/s "
      "{:.1f}%{} of the datasheet; {:.2f} us per kernel: {:.2f} us per layer, {:.2f} us per pass\n",
      c.fitted_on, 100 * c.bandwidth_fraction, f.pinned[0] ? " (pinned)" : "",
      100 * c.pointwise_bandwidth_fraction, 100 * c.flops_fraction, f.pinned[2] ? " (pinned)" : "",
      1e6 * f.kernel_overhead_s, 1e6 * c.layer_overhead_s, 1e6 * c.pass_overhead_s);
  auto row = [](const char* what, const ErrorStats& e) {
    return fmt::format(
        "    {:<22} {:>4} points  median {:5.1f}%  p90 {:5.1f}%  max {:5.1f}%  "
        "(predicted/measured {:.2f})\n",
        what, e.points, 100 * e.median, 100 * e.p90, 100 * e.max, e.median_ratio);
  };
  s += row("datasheet, held out", f.before_heldout);
  s += row("corrected, held out", f.after_heldout);
  s += row("datasheet, all rows", f.before_all);
  s += row("corrected, all rows", f.after_all);
  return s;
}

}  // namespace metronome::calibrate
