// The step-time bound: a cost model's seconds become int64 nanoseconds only inside [0, 1 h], and a
// scenario whose cost model would leave that range is refused at load naming the field.
#include "sim/cost/step_time.h"

#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <limits>
#include <nlohmann/json.hpp>

#include "base/config_error.h"
#include "sim/cost/calibrated_cost_model.h"
#include "sim/engine/engine.h"
#include "tests/expect_error.h"
#include "tests/sim/test_scenarios.h"

namespace metronome {
namespace {

TEST(StepTime, ConvertsInRangeAndRefusesTheRest) {
  const auto m = make_cost_model(testing::moshi(1));
  EXPECT_EQ(step_duration(0.0, *m), 1);  // a step always advances the clock
  EXPECT_EQ(step_duration(0.0125, *m), 12'500'000);
  EXPECT_EQ(step_duration(kMaxStepSeconds, *m), 3600 * kNanosPerSecond);
  for (double bad : {3600.5, 1e10, 1e20, -1.0, std::numeric_limits<double>::infinity(),
                     std::numeric_limits<double>::quiet_NaN()}) {
    // The label of the default cost model (the corrected roofline on the H200).
    EXPECT_NE(
        error_of([&] { step_duration(bad, *m); }).find(m->label() + ": an engine step would take"),
        std::string::npos)
        << bad;
  }
}

TEST(StepTime, OneBytePerSecondNamesTheBandwidth) {
  // 1 B/s is inside the accepted range of the field; before the bound, its 1.3e10 s steps
  // overflowed int64 nanoseconds and became 1 ns steps.
  const Scenario s = testing::moshi(300, "unbounded", {"gpu.memory_bandwidth_bytes_per_s=1"});
  const std::string e = error_of([&] { simulate(s); });
  EXPECT_NE(e.find("gpu.memory_bandwidth_bytes_per_s = 1 B/s"), std::string::npos) << e;
  EXPECT_NE(e.find("expected at most 3600 s"), std::string::npos) << e;
  const Scenario f = testing::moshi(300, "unbounded", {"gpu.bf16_flops=1"});
  EXPECT_NE(error_of([&] { make_cost_model(f); }).find("gpu.bf16_flops = 1 FLOP/s"),
            std::string::npos);
}

TEST(StepTime, FullPoolRecomputeIsBoundedToo) {
  // A first frame under an hour, but a full batch recomputing the whole pool far beyond it.
  const Scenario s = testing::moshi(300, "unbounded",
                                    {"engine.exhaustion=preempt_recompute", "gpu.bf16_flops=1e9"});
  const std::string e = error_of([&] { make_cost_model(s); });
  EXPECT_NE(e.find("a full batch"), std::string::npos) << e;
  EXPECT_NE(e.find("gpu.bf16_flops"), std::string::npos) << e;
  // The shipped scenarios are far inside both bounds.
  EXPECT_EQ(error_of([] { make_cost_model(testing::moshi(300)); }), "");
  EXPECT_EQ(
      error_of([] {
        make_cost_model(testing::moshi(300, "unbounded", {"engine.exhaustion=preempt_recompute"}));
      }),
      "");
}

TEST(StepTime, CalibrationCoefficientIsBoundedAtLoad) {
  std::ifstream in(std::string(METRONOME_SOURCE_DIR) + "/results/calibration/tiny_cpu.json");
  nlohmann::json c = nlohmann::json::parse(in);
  c["fit"]["terms"][0]["coefficient"] = 1e308;
  const std::string e = error_of([&] { parse_calibration(c, "cal.json"); });
  EXPECT_EQ(
      e.rfind("cal.json: fit.terms[0].coefficient: expected a number in [-3600.0, 3600.0]", 0), 0u)
      << e;
}

}  // namespace
}  // namespace metronome
