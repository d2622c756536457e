// The fitter recovers known coefficients from synthetic timings, refuses what it cannot fit, and
// warns about what it should not trust.
#include "calibrate/fit.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "calibrate/grid.h"
#include "calibrate/step_shape.h"

namespace metronome::calibrate {
namespace {

// A known per-pass cost, every term contributing visibly on the device grid.
struct Truth {
  double fixed = 2e-3, sessions = 20e-6, query_tokens = 40e-6, kv_read_tokens = 0.3e-6,
         qk_pairs = 0.02e-6, expert_layers = 2e-6;  // one expert of qwen3-omni: 9.4 MB at 4.3 TB/s
  double seconds(const PassShape& s, const TermModel& m) const {
    return fixed + sessions * static_cast<double>(s.sessions) +
           query_tokens * static_cast<double>(s.query_tokens) +
           kv_read_tokens * static_cast<double>(s.kv_read_tokens) + qk_pairs * s.qk_pairs +
           expert_layers * term_feature(CostTerm::kExpertLayers, s, m);
  }
  double of(CostTerm t) const {
    switch (t) {
      case CostTerm::kFixed:
        return fixed;
      case CostTerm::kSessions:
        return sessions;
      case CostTerm::kQueryTokens:
        return query_tokens;
      case CostTerm::kKvReadTokens:
        return kv_read_tokens;
      case CostTerm::kQkPairs:
        return qk_pairs;
      case CostTerm::kExpertLayers:
        return expert_layers;
    }
    return 0;
  }
};

std::vector<FitSample> synthetic(const Grid& g, const Truth& truth, const TermModel& m,
                                 double noise, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> u(-noise, noise);
  std::vector<FitSample> out;
  for (const auto& p : g.points) {
    if (p.kind != BenchKind::kStep) continue;
    const PassShape s = step_pass_shape(p);
    out.push_back({point_name(p), p, s, truth.seconds(s, m) * (1.0 + u(rng))});
  }
  return out;
}

// A full factorial of the shape axes: every term well identified, so any miss is the fitter's.
Grid factorial() {
  Grid g{"factorial", "", 0, 1, 0, {}};
  for (int32_t s : {1, 2, 4, 8, 16, 32, 64, 128}) {
    for (int32_t q : {1, 2, 4, 8, 16, 32}) {
      for (int32_t c : {0, 256, 1024, 4096}) g.points.push_back({BenchKind::kStep, s, q, c, -1, 0});
    }
  }
  return g;
}

TEST(Fit, RecoversKnownDenseCoefficientsWithin2PercentUnderNoise) {
  const TermModel dense{28, 0, 0};
  const Truth truth;
  for (uint64_t seed : {1, 2, 3}) {
    // Timing noise: uniform +-1% per point.
    const auto samples = synthetic(factorial(), truth, dense, 0.01, seed);
    const FitResult r = fit_cost_model(samples, dense, {});
    ASSERT_EQ(r.terms.size(), 5u);
    for (const auto& t : r.terms) {
      EXPECT_FALSE(t.dropped) << term_name(t.term);
      EXPECT_NEAR(t.coefficient, truth.of(t.term), 0.02 * truth.of(t.term))
          << term_name(t.term) << " seed " << seed;
    }
    EXPECT_GT(r.r2, 0.999);
    EXPECT_LT(r.heldout_max_ape, 0.03);
    EXPECT_TRUE(r.warnings.empty()) << r.warnings.front();
    EXPECT_EQ(r.train_points + r.heldout_points, static_cast<int>(samples.size()));
    EXPECT_GT(r.heldout_points, 0);
  }
}

TEST(Fit, RecoversTheMoeExpertTerm) {
  const TermModel moe{48, 128, 8};
  const Truth truth;
  const auto samples = synthetic(factorial(), truth, moe, 0.01, 7);
  const FitResult r = fit_cost_model(samples, moe, {});
  ASSERT_EQ(r.terms.size(), 6u);
  for (const auto& t : r.terms) {
    // While few tokens are routed, experts touched grow as k x tokens, which in decode is k x
    // sessions: the small per-session term shares its signal with expert coverage and is the least
    // certain one (about 2% here), so it gets 5%.
    const double tol = t.term == CostTerm::kSessions ? 0.05 : 0.02;
    EXPECT_NEAR(t.coefficient, truth.of(t.term), tol * truth.of(t.term)) << term_name(t.term);
  }
}

// The device grid is small (device time is scarce); under 0.5% timing noise it pins the terms that
// dominate a step to 2% and the small ones to 10% (the per-session term of an MoE model, see above,
// to 20%), and predicts held-out shapes within 1%.
TEST(Fit, DeviceGridIdentifiesEveryTerm) {
  const Truth truth;
  for (const TermModel& m : {TermModel{28, 0, 0}, TermModel{48, 128, 8}}) {
    const auto samples = synthetic(*find_grid("gpu"), truth, m, 0.005, 11);
    const FitResult r = fit_cost_model(samples, m, {});
    for (const auto& t : r.terms) {
      const bool dominant = t.term == CostTerm::kQueryTokens || t.term == CostTerm::kKvReadTokens ||
                            t.term == CostTerm::kFixed;
      const double tol =
          dominant ? 0.02 : (t.term == CostTerm::kSessions && m.experts ? 0.20 : 0.10);
      EXPECT_NEAR(t.coefficient, truth.of(t.term), tol * truth.of(t.term))
          << term_name(t.term) << " experts " << m.experts;
    }
    EXPECT_LT(r.heldout_median_ape, 0.01);
  }
}

TEST(Fit, ExactDataGivesExactCoefficientsAndPerfectScores) {
  const TermModel dense{2, 0, 0};
  const auto samples = synthetic(*find_grid("cpu"), Truth{}, dense, 0.0, 1);
  const FitResult r = fit_cost_model(samples, dense, {});
  for (const auto& t : r.terms)
    EXPECT_NEAR(t.coefficient, Truth{}.of(t.term), 1e-9 * Truth{}.of(t.term));
  EXPECT_NEAR(r.r2, 1.0, 1e-12);
  EXPECT_LT(r.heldout_max_ape, 1e-9);
  for (double p : r.predicted) EXPECT_TRUE(std::isfinite(p));
}

TEST(Fit, RefusesFewerTrainingPointsThanParameters) {
  const TermModel dense{2, 0, 0};
  auto samples = synthetic(*find_grid("ci"), Truth{}, dense, 0.0, 1);
  samples.resize(5);  // 5 points, 1 held out: 4 to train 5 parameters
  try {
    fit_cost_model(samples, dense, {});
    FAIL() << "expected a refusal";
  } catch (const FitError& e) {
    EXPECT_NE(std::string(e.what()).find("at least as many training points as parameters"),
              std::string::npos)
        << e.what();
  }
}

TEST(Fit, RefusesTermsTheGridCannotSeparate) {
  // Every point decodes one token per session: query_tokens == sessions on the whole grid.
  Grid g{"decode-only", "", 0, 1, 0, {}};
  for (int32_t s : {1, 2, 4, 8, 16, 32}) {
    for (int32_t c : {100, 1000}) g.points.push_back({BenchKind::kStep, s, 1, c, -1, 0});
  }
  const TermModel dense{2, 0, 0};
  const auto samples = synthetic(g, Truth{}, dense, 0.0, 1);
  FitOptions o;
  o.terms = {CostTerm::kFixed, CostTerm::kSessions, CostTerm::kQueryTokens,
             CostTerm::kKvReadTokens};
  EXPECT_THROW(fit_cost_model(samples, dense, o), FitError);
  o.terms = {CostTerm::kFixed, CostTerm::kQueryTokens, CostTerm::kKvReadTokens};
  EXPECT_NO_THROW(fit_cost_model(samples, dense, o));
}

TEST(Fit, DropsANegativeCoefficientWithAWarningUnlessAllowed) {
  Truth truth;
  truth.sessions = -20e-6;  // unphysical on purpose
  const TermModel dense{2, 0, 0};
  const auto samples = synthetic(*find_grid("cpu"), truth, dense, 0.0, 1);
  const FitResult r = fit_cost_model(samples, dense, {});
  bool dropped = false;
  for (const auto& t : r.terms) {
    EXPECT_GE(t.coefficient, 0) << term_name(t.term);
    if (t.term == CostTerm::kSessions) dropped = t.dropped;
  }
  EXPECT_TRUE(dropped);
  ASSERT_FALSE(r.warnings.empty());
  EXPECT_NE(r.warnings.front().find("sessions"), std::string::npos) << r.warnings.front();

  FitOptions allow;
  allow.allow_negative = true;
  const FitResult kept = fit_cost_model(samples, dense, allow);
  EXPECT_NEAR(kept.terms[1].coefficient, truth.sessions, 1e-9);
  ASSERT_FALSE(kept.warnings.empty());
  EXPECT_NE(kept.warnings.front().find("negative"), std::string::npos);
}

TEST(Fit, WarnsWhenHeldOutErrorIsHigh) {
  const TermModel dense{2, 0, 0};
  const auto samples = synthetic(*find_grid("cpu"), Truth{}, dense, 0.6, 5);
  const FitResult r = fit_cost_model(samples, dense, {});
  bool warned = false;
  for (const auto& w : r.warnings) warned |= w.find("held-out error is high") != std::string::npos;
  EXPECT_TRUE(warned);
}

TEST(Fit, RejectsNonPositiveOrNonFiniteTimes) {
  const TermModel dense{2, 0, 0};
  auto samples = synthetic(*find_grid("cpu"), Truth{}, dense, 0.0, 1);
  samples[3].seconds = std::nan("");
  EXPECT_THROW(fit_cost_model(samples, dense, {}), FitError);
  samples[3].seconds = 0;
  EXPECT_THROW(fit_cost_model(samples, dense, {}), FitError);
}

// The files' loaders cap a time at an hour, so only a direct caller can hand the fitter times
// whose squares overflow: R2 is then inf/inf, refused rather than written to a calibration.
TEST(Fit, RefusesANonFiniteR2) {
  const TermModel dense{2, 0, 0};
  auto samples = synthetic(*find_grid("cpu"), Truth{}, dense, 0.01, 1);
  for (FitSample& s : samples) s.seconds *= 1e160;  // its square is past DBL_MAX
  try {
    fit_cost_model(samples, dense, {});
    FAIL() << "expected a refusal";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("R2 is not a finite number"), std::string::npos)
        << e.what();
  }
}

TEST(Fit, SplitIsDeterministicAndIndependentOfInputOrder) {
  const TermModel dense{2, 0, 0};
  auto samples = synthetic(*find_grid("cpu"), Truth{}, dense, 0.01, 9);
  const FitResult a = fit_cost_model(samples, dense, {});
  std::reverse(samples.begin(), samples.end());
  const FitResult b = fit_cost_model(samples, dense, {});
  ASSERT_EQ(a.heldout, b.heldout);
  for (size_t i = 0; i < a.terms.size(); ++i)
    EXPECT_DOUBLE_EQ(a.terms[i].coefficient, b.terms[i].coefficient);
}

TEST(StepShape, MatchesHandCounts) {
  // 4 sessions x 8 new tokens on 100 cached, unbounded: reads 100 keys each, each query sees the
  // 100 cached keys plus on average (8 + 1) / 2 of its frame.
  PassShape s = step_pass_shape({BenchKind::kStep, 4, 8, 100, -1, 0});
  EXPECT_EQ(s.sessions, 4);
  EXPECT_EQ(s.query_tokens, 32);
  EXPECT_EQ(s.kv_read_tokens, 400);
  EXPECT_DOUBLE_EQ(s.qk_pairs, 32 * 104.5);
  // Windowed W=64 S=4 at ctx 1000: the first query sees 4 sinks + 64 window keys + itself.
  s = step_pass_shape({BenchKind::kStep, 2, 1, 1000, 64, 4});
  EXPECT_EQ(s.kv_read_tokens, 2 * 68);
  EXPECT_DOUBLE_EQ(s.qk_pairs, 2 * 69.0);
  // ctx 0: nothing cached.
  s = step_pass_shape({BenchKind::kStep, 3, 5, 0, -1, 0});
  EXPECT_EQ(s.kv_read_tokens, 0);
  EXPECT_DOUBLE_EQ(s.qk_pairs, 15 * 3.0);
}

}  // namespace
}  // namespace metronome::calibrate
