// The one rounding rule of outputs (base/output_number.h), checked on the values that printed badly
// before it (predict --json showed t_sat 55.040000000000006) and on what it must leave alone.
#include "base/output_number.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <nlohmann/json.hpp>

namespace metronome {
namespace {

using nlohmann::json;

TEST(OutputNumber, FloatingNoiseIsGone) {
  const double t_sat = 55.04 + 7e-15;  // the sum that printed 55.040000000000006
  ASSERT_NE(json(t_sat).dump(), "55.04");
  EXPECT_EQ(output_text(json(t_sat), -1), "55.04");
  EXPECT_EQ(output_text(json(0.030429079893333336), -1), "0.0304291");
  EXPECT_EQ(output_text(json(5.985214127020608e-05), -1), "5.98521e-05");
}

TEST(OutputNumber, SixSignificantDigitsWhateverTheMagnitude) {
  for (double v : {1.0 / 3, 2.0 / 3e-9, 123456789.123, -0.000123456789, 9.9999999}) {
    const double r = round_output(v);
    EXPECT_NEAR(r, v, std::abs(v) * 5e-6) << v;
    // Printed with the 6 digits it keeps, it reads back as itself.
    EXPECT_EQ(std::stod(fmt::format("{:.6g}", r)), r) << v;
  }
  EXPECT_EQ(round_output(0.0), 0.0);
}

TEST(OutputNumber, IntegersAndStringsUntouched) {
  json j = {{"frames", int64_t{123456789012}}, {"name", "x"}, {"ok", true}};
  EXPECT_EQ(output_text(j, -1), j.dump());
}

TEST(OutputNumber, NonFiniteIsNullNeverNaN) {
  json j = {{"a", std::numeric_limits<double>::quiet_NaN()},
            {"b", std::numeric_limits<double>::infinity()},
            {"c", json::array({1.5, -std::numeric_limits<double>::infinity()})}};
  EXPECT_EQ(output_text(j, -1), R"({"a":null,"b":null,"c":[1.5,null]})");
  EXPECT_EQ(csv_number(std::numeric_limits<double>::quiet_NaN()), "");
  EXPECT_EQ(csv_number(1.0 / 3), "0.333333");
}

TEST(OutputNumber, ScenarioEchoKeepsFullPrecision) {
  // The scenario echo is input: it must reload as the same scenario, digit for digit.
  const double period = 0.1 + 0.2;  // 0.30000000000000004
  json j = {{"scenario", {{"frame_period_s", period}}}, {"result", {{"x", period}}}};
  round_output(j);
  EXPECT_EQ(j["scenario"]["frame_period_s"].get<double>(), period);
  EXPECT_EQ(j["result"]["x"].get<double>(), 0.3);
}

TEST(OutputNumber, OrderedJsonToo) {
  nlohmann::ordered_json j;
  j["z"] = 55.04 + 7e-15;
  j["a"] = 1;
  EXPECT_EQ(output_text(j, -1), R"({"z":55.04,"a":1})");
}

}  // namespace
}  // namespace metronome
