// The shape-aware roofline correction against Vidur's three measured H100 layers (7B, 20B, 34B;
// results/vidur/h100): held out one profile at a time it must do what the shipped 7B-fitted
// correction does not, and say how far it may be trusted.
#include "calibrate/roofline_transfer_fit.h"

#include <gtest/gtest.h>

#include <cmath>
#include <string>

#include "calibrate/fit.h"
#include "sim/config/scenario.h"
#include "sim/cost/corrected_roofline_cost_model.h"
#include "sim/cost/shape_aware_roofline_cost_model.h"

namespace metronome::calibrate {
namespace {

const std::string kVidur = std::string(METRONOME_SOURCE_DIR) + "/results/vidur";

const std::vector<VidurProfile>& h100_profiles() {
  static const std::vector<VidurProfile> p = {
      read_vidur_profile(kVidur, "meta-llama/Llama-2-7b-hf", "h100", 1),
      read_vidur_profile(kVidur, "internlm/internlm-20b", "h100", 1),
      read_vidur_profile(kVidur, "codellama/CodeLlama-34b-Instruct-hf", "h100", 1)};
  return p;
}

GpuConfig h100() { return load_scenario("", {"gpu=h100"}).gpu; }

double op_ratio(const ProfileError& e, const std::string& op) {
  for (const auto& [name, r] : e.op_ratio)
    if (name == op) return r;
  ADD_FAILURE() << op << " not among the ops";
  return 0;
}

TEST(RooflineTransferFit, ThirtyFourBHeldOutWithinBoundsTheShippedCorrectionBreaks) {
  const GpuConfig gpu = h100();
  const auto& p = h100_profiles();
  const auto folds = leave_one_profile_out(p, gpu);
  ASSERT_EQ(folds.size(), 3u);
  const ProfileError& held = folds[2].held_out;  // fitted on 7B and 20B only
  const ProfileError shipped = shipped_correction_error(gpu.roofline_correction, p[2], gpu);
  // The bounds: a layer's median error under 9% and p90 under 15%, the 64-512-token band within
  // 8% of the measurement. The shipped correction misses all three on this layer.
  EXPECT_GT(shipped.layer.median, 0.09);
  EXPECT_GT(shipped.layer.p90, 0.15);
  EXPECT_GT(shipped.band_ratio[1], 1.08);
  EXPECT_LT(held.layer.median, 0.09);
  EXPECT_LT(held.layer.p90, 0.15);
  EXPECT_NEAR(held.band_ratio[1], 1.0, 0.08);
  // Every fold's held-out layer stays within what a user is told (median 9%, p90 15%).
  for (const auto& f : folds) {
    EXPECT_LT(f.held_out.layer.median, 0.09) << f.held_out.model;
    EXPECT_LT(f.held_out.layer.p90, 0.15) << f.held_out.model;
    EXPECT_FALSE(std::isnan(f.held_out.layer.p90));
  }
}

// Given the same two layers, the shipped four-fraction form still misses the held-out 34B: the
// gain is the form's, not more data's.
TEST(RooflineTransferFit, OldFormRefittedOnTheSameLayersStillMissesTheThirtyFourB) {
  const auto folds = leave_one_profile_out(h100_profiles(), h100());
  const ProfileError& old_form = folds[2].old_form_held_out;
  const ProfileError& new_form = folds[2].held_out;
  EXPECT_GT(old_form.layer.median, new_form.layer.median + 0.01);
  EXPECT_GT(old_form.layer.p90, new_form.layer.p90 + 0.02);
  EXPECT_GT(old_form.band_ratio[1], 1.08);
  EXPECT_GT(op_ratio(old_form, "add"), 1.5);
}

TEST(RooflineTransferFit, ResidualAddIsPricedNearItsMeasuredTime) {
  const GpuConfig gpu = h100();
  const auto& p = h100_profiles();
  const auto folds = leave_one_profile_out(p, gpu);
  for (size_t i = 0; i < p.size(); ++i) {
    // The shipped one shared bandwidth fraction puts add at about 2x on every profile.
    EXPECT_GT(op_ratio(shipped_correction_error(gpu.roofline_correction, p[i], gpu), "add"), 1.5)
        << p[i].model;
    EXPECT_NEAR(op_ratio(folds[i].held_out, "add"), 1.0, 0.25) << p[i].model;
  }
}

TEST(RooflineTransferFit, FitOnAllReportsItsCoefficientsAndExplainsTheData) {
  const TransferFit f = fit_transfer(h100_profiles(), h100());
  EXPECT_EQ(f.points, 3 * 261 * 9);  // rows x ops of the three tensor-parallel-1 profiles
  EXPECT_GT(f.r2, 0.97);
  // Memory-bound GEMMs near the datasheet bandwidth, compute-bound below the datasheet FLOP/s, and
  // the smaller time partly hidden: between max() (0) and the additive form (1).
  EXPECT_NEAR(f.correction.gemm_memory, 1.0, 0.15);
  EXPECT_GT(f.correction.gemm_compute, 1.1);
  EXPECT_GT(f.correction.gemm_overlap, 0.2);
  EXPECT_LT(f.correction.gemm_overlap, 0.9);
  EXPECT_NE(transfer_text(f).find("R2"), std::string::npos);
}

TEST(RooflineTransferFit, RefusesFewerPointsThanParametersAndTooFewProfiles) {
  const GpuConfig gpu = h100();
  VidurProfile empty = h100_profiles()[0];
  empty.mlp.clear();
  try {
    fit_transfer({empty}, gpu);
    FAIL() << "fitted nine coefficients on no rows";
  } catch (const FitError& e) {
    EXPECT_NE(std::string(e.what()).find("0 equations for 9 parameters"), std::string::npos)
        << e.what();
  }
  EXPECT_THROW(leave_one_profile_out({h100_profiles()[0], h100_profiles()[1]}, gpu), FitError);
}

TEST(RooflineTransferFit, TrustStatementSaysHowFarAShapeIsAndWhatToExpect) {
  const GpuConfig gpu = h100();
  const auto& p = h100_profiles();
  const auto folds = leave_one_profile_out(p, gpu);
  const TransferFit all = fit_transfer(p, gpu);
  // Inside every fitted range (a 20B-like layer): the worst fold's held-out numbers.
  LayerShape inside = p[1].shape;
  const std::string in = trust_statement("inside", inside, all.shapes, folds);
  EXPECT_NE(in.find("hidden 5120 in [4096, 8192]"), std::string::npos) << in;
  EXPECT_NE(in.find("expect a layer's error up to median"), std::string::npos) << in;
  // A 70B-class layer (hidden 8192, FFN 28672, 64 / 8 heads): FFN x1.30 past the largest fitted,
  // nearer than the 34B was to the fit without it (x1.60), so the 34B fold's numbers apply.
  LayerShape l70 = p[2].shape;
  l70.ffn = 28672;
  const std::string near = trust_statement("70b", l70, all.shapes, folds);
  EXPECT_NE(near.find("FFN 28672 in [11008, 22016] (x1.30 outside)"), std::string::npos) << near;
  EXPECT_NE(near.find("codellama/CodeLlama-34b-Instruct-hf, x1.60"), std::string::npos) << near;
  // Twice as wide as anything fitted: farther than any fold was held out, so no number is given.
  LayerShape wide = p[2].shape;
  wide.hidden *= 2;
  wide.ffn *= 2;
  const std::string far = trust_statement("wide", wide, all.shapes, folds);
  EXPECT_NE(far.find("no held-out error says how far to trust it"), std::string::npos) << far;
  EXPECT_EQ(far.find("expect"), std::string::npos) << far;
  LayerShape moe = p[0].shape;
  moe.ffn = 0;
  EXPECT_NE(trust_statement("moe", moe, all.shapes, folds).find("no held-out error applies"),
            std::string::npos);
}

// The GPU file's block is this fit, rounded to 4 digits by scripts/import_vidur.py: a refit that
// changes (new profiles, a changed op formula) fails here until the script is rerun.
TEST(RooflineTransferFit, ShippedH100BlockIsTheFitOnTheThreeProfiles) {
  const GpuConfig gpu = h100();
  ASSERT_TRUE(gpu.shape_aware_correction.present);
  const ShapeAwareTerms fresh = coefficients(fit_transfer(h100_profiles(), gpu).correction);
  const ShapeAwareTerms shipped = coefficients(gpu.shape_aware_correction);
  for (size_t i = 0; i < fresh.size(); ++i)
    EXPECT_NEAR(shipped[i], fresh[i], 5e-4 * std::fabs(fresh[i])) << "coefficient " << i;
  EXPECT_EQ(gpu.shape_aware_correction.fitted_on, "h100");
  EXPECT_EQ(load_scenario("", {"gpu=h200"}).gpu.shape_aware_correction.gemm_overlap,
            gpu.shape_aware_correction.gemm_overlap);  // assumed from the H100
}

// The simulator's cost models on a one-layer model of each measured layer's shape (no attention,
// a one-token vocabulary so the output head is nothing): pass time less the step overhead against
// the measured layer plus embedding, every row. The shape-aware one the simulator now runs holds on
// the 34B layer where the corrected roofline does not.
TEST(RooflineTransferFit, SimulatorPricesEachMeasuredLayerWithinTheHeldOutBounds) {
  const GpuConfig gpu = h100();
  for (const auto& p : h100_profiles()) {
    ModelConfig m = load_scenario("", {"model=llama-2-7b"}).model;
    m.name = p.model;
    m.layers = 1;
    m.hidden_size = p.shape.hidden;
    m.attention_heads = p.shape.heads;
    m.kv_heads = p.shape.kv_heads;
    m.head_dim = p.shape.head_dim;
    m.ffn_size = p.shape.ffn;
    m.vocab_size = 1;
    const ShapeAwareRooflineCostModel shape_aware(m, gpu, 0);
    const CorrectedRooflineCostModel corrected(m, gpu, 0);
    std::vector<double> measured, new_form, old_form;
    for (const auto& row : p.mlp) {
      const PassShape s{1, row.tokens, 0, 0};
      measured.push_back(row.layer_seconds() + row.seconds[0]);
      new_form.push_back(shape_aware.pass_seconds(s));
      old_form.push_back(corrected.pass_seconds(s));
    }
    const ErrorStats e = error_stats(new_form, measured);
    EXPECT_LT(e.median, 0.09) << p.model;
    EXPECT_LT(e.p90, 0.15) << p.model;
    if (p.shape.hidden == 8192) {
      const ErrorStats old_e = error_stats(old_form, measured);
      EXPECT_GT(old_e.median, 0.09) << "the corrected roofline on the 34B layer";
      EXPECT_LT(e.median, old_e.median - 0.02);
    }
  }
}

}  // namespace
}  // namespace metronome::calibrate
