#include "calibrate/fit.h"

#include <fmt/format.h>

#include <Eigen/Dense>
#include <algorithm>
#include <cmath>
#include <tuple>

#include "base/config_error.h"

namespace metronome::calibrate {

std::vector<CostTerm> default_terms(const TermModel& m) {
  std::vector<CostTerm> t = {CostTerm::kFixed, CostTerm::kSessions, CostTerm::kQueryTokens,
                             CostTerm::kKvReadTokens, CostTerm::kQkPairs};
  if (m.experts > 0) t.push_back(CostTerm::kExpertLayers);
  return t;
}

double median_of(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

nlohmann::json point_json(const GridPoint& point, const PassShape& shape) {
  return {{"sessions", point.sessions},
          {"q_len", point.q_len},
          {"ctx", point.ctx},
          {"window", point.window},
          {"sinks", point.sinks},
          {"query_tokens", shape.query_tokens},
          {"kv_read_tokens", shape.kv_read_tokens},
          {"qk_pairs", shape.qk_pairs}};
}

namespace {

// Relative least squares over `active` terms; returns coefficients aligned with `active`.
Eigen::VectorXd solve(const std::vector<const FitSample*>& train,
                      const std::vector<CostTerm>& active, const TermModel& model) {
  const Eigen::Index n = static_cast<Eigen::Index>(train.size());
  const Eigen::Index k = static_cast<Eigen::Index>(active.size());
  Eigen::MatrixXd a(n, k);
  Eigen::VectorXd b = Eigen::VectorXd::Ones(n);
  for (Eigen::Index i = 0; i < n; ++i) {
    const auto& s = *train[static_cast<size_t>(i)];
    for (Eigen::Index c = 0; c < k; ++c) {
      a(i, c) = term_feature(active[static_cast<size_t>(c)], s.shape, model) / s.seconds;
    }
  }
  Eigen::VectorXd norms = a.colwise().norm().transpose();
  for (Eigen::Index c = 0; c < k; ++c) {
    if (!(norms(c) > 0)) {
      throw FitError(
          fmt::format("term {} is zero on every training point: the grid cannot "
                      "measure it (drop it with --terms)",
                      term_name(active[static_cast<size_t>(c)])));
    }
    a.col(c) /= norms(c);
  }
  Eigen::ColPivHouseholderQR<Eigen::MatrixXd> qr(a);
  qr.setThreshold(1e-10);
  if (qr.rank() < k) {
    std::string names;
    for (auto t : active) names += (names.empty() ? "" : ", ") + std::string(term_name(t));
    throw FitError(
        fmt::format("the grid cannot separate the terms {} (rank {} of {}): vary "
                    "sessions, tokens per session and context independently, or drop "
                    "a term with --terms",
                    names, qr.rank(), k));
  }
  Eigen::VectorXd x = qr.solve(b);
  return x.cwiseQuotient(norms);
}

}  // namespace

FitResult fit_cost_model(std::vector<FitSample> samples, const TermModel& model,
                         const FitOptions& options) {
  FitResult r;
  const std::vector<CostTerm> requested =
      options.terms.empty() ? default_terms(model) : options.terms;
  for (const auto& s : samples) {
    if (!(s.seconds > 0) || !std::isfinite(s.seconds)) {
      throw FitError(
          fmt::format("sample {}: time {} s: expected a finite time > 0", s.name, s.seconds));
    }
  }
  if (options.heldout_every < 2) throw FitError("heldout_every: expected >= 2");
  std::sort(samples.begin(), samples.end(), [](const FitSample& a, const FitSample& b) {
    return std::tie(a.shape.sessions, a.shape.query_tokens, a.shape.kv_read_tokens,
                    a.shape.qk_pairs, a.name) < std::tie(b.shape.sessions, b.shape.query_tokens,
                                                         b.shape.kv_read_tokens, b.shape.qk_pairs,
                                                         b.name);
  });
  std::vector<const FitSample*> train, held;
  r.heldout.resize(samples.size());
  for (size_t i = 0; i < samples.size(); ++i) {
    r.heldout[i] = (i + 1) % static_cast<size_t>(options.heldout_every) == 0;
    (r.heldout[i] ? held : train).push_back(&samples[i]);
  }
  if (train.size() < requested.size()) {
    throw FitError(
        fmt::format("{} step timings ({} to train after holding out {}) for {} parameters: "
                    "a fit needs at least as many training points as parameters; use a "
                    "larger grid",
                    samples.size(), train.size(), held.size(), requested.size()));
  }
  // Without held-out points the fit's held-out error would read 0%, which nothing measured.
  if (held.empty()) {
    throw FitError(fmt::format(
        "heldout_every: {} step timings with every {}th held out leave none to test the fit; "
        "expected a smaller --heldout-every (at most the number of timings), or a larger grid",
        samples.size(), options.heldout_every));
  }

  std::vector<CostTerm> active = requested;
  Eigen::VectorXd coef;
  while (true) {
    coef = solve(train, active, model);
    if (options.allow_negative) break;
    // Drop the term whose negative coefficient does the most (in relative contribution) and refit.
    int worst = -1;
    double worst_value = 0;
    for (size_t c = 0; c < active.size(); ++c) {
      if (coef(static_cast<Eigen::Index>(c)) >= 0) continue;
      double contribution = 0;
      for (const auto* s : train)
        contribution += term_feature(active[c], s->shape, model) / s->seconds;
      const double v = coef(static_cast<Eigen::Index>(c)) * contribution;
      if (v < worst_value) {
        worst_value = v;
        worst = static_cast<int>(c);
      }
    }
    if (worst < 0) break;
    r.warnings.push_back(
        fmt::format("coefficient of {} came out negative ({:.3e} {}): dropped the "
                    "term and refitted",
                    term_name(active[static_cast<size_t>(worst)]), coef(worst),
                    term_unit(active[static_cast<size_t>(worst)])));
    active.erase(active.begin() + worst);
    if (active.empty())
      throw FitError("every term came out negative: the timings do not fit this model");
  }
  for (auto t : requested) {
    CalibrationTerm ct{t, 0.0, true, ""};
    for (size_t c = 0; c < active.size(); ++c) {
      if (active[c] == t) {
        ct.coefficient = coef(static_cast<Eigen::Index>(c));
        ct.dropped = false;
      }
    }
    if (ct.coefficient < 0) {
      r.warnings.push_back(
          fmt::format("coefficient of {} is negative ({:.3e} {}), kept because "
                      "negative coefficients were allowed",
                      term_name(t), ct.coefficient, term_unit(t)));
    }
    r.terms.push_back(ct);
  }

  Calibration c;
  c.model = model;
  c.terms = r.terms;
  double mean = 0;
  for (const auto* s : train) mean += s->seconds;
  mean /= static_cast<double>(train.size());
  double ss_res = 0, ss_tot = 0;
  std::vector<double> ape;
  for (size_t i = 0; i < samples.size(); ++i) {
    const double p = c.seconds(samples[i].shape);
    r.predicted.push_back(p);
    if (r.heldout[i]) {
      ape.push_back(std::fabs(p - samples[i].seconds) / samples[i].seconds);
    } else {
      ss_res += (p - samples[i].seconds) * (p - samples[i].seconds);
      ss_tot += (samples[i].seconds - mean) * (samples[i].seconds - mean);
    }
  }
  r.r2 = ss_tot > 0 ? 1.0 - ss_res / ss_tot : (ss_res == 0 ? 1.0 : 0.0);
  if (!std::isfinite(r.r2)) {
    throw ConfigError(fmt::format(
        "the fit's R2 is not a finite number: its terms predict no finite time for the {} "
        "training points; refit on timings the terms can describe",
        train.size()));
  }
  r.heldout_median_ape = median_of(ape);
  r.heldout_max_ape = ape.empty() ? 0 : *std::max_element(ape.begin(), ape.end());
  r.train_points = static_cast<int>(train.size());
  r.heldout_points = static_cast<int>(held.size());
  r.heldout_every = options.heldout_every;
  if (r.heldout_median_ape > options.warn_median_ape || r.heldout_max_ape > options.warn_max_ape) {
    r.warnings.push_back(
        fmt::format("held-out error is high: median {:.1f}%, max {:.1f}% (warn above "
                    "{:.0f}% / {:.0f}%): the terms may not describe this device "
                    "well on this grid",
                    100 * r.heldout_median_ape, 100 * r.heldout_max_ape,
                    100 * options.warn_median_ape, 100 * options.warn_max_ape));
  }
  r.samples = std::move(samples);
  return r;
}

}  // namespace metronome::calibrate
