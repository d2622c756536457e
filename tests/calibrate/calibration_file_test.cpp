// The calibration file: what calibrate/ writes the simulator reads back exactly, and every bad file
// is a ConfigError naming the file and the field, never a crash or a NaN.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>

#include "base/config_error.h"
#include "calibrate/calibration_writer.h"
#include "calibrate/grid.h"
#include "calibrate/pipeline.h"
#include "calibrate/step_shape.h"
#include "sim/config/scenario.h"
#include "sim/cost/calibrated_cost_model.h"
#include "sim/cost/roofline_cost_model.h"

namespace metronome::calibrate {
namespace {

namespace fs = std::filesystem;

fs::path temp_dir() {
  const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
  fs::path d = fs::temp_directory_path() / "metronome_calib_test" / info->name();
  fs::remove_all(d);
  fs::create_directories(d);
  return d;
}

// An analytic file of the tiny model: needs no benchmark run.
nlohmann::json tiny_analytic() {
  const Scenario s = load_scenario("", {"model=tiny"});
  return roofline_calibration(s, *find_grid("cpu"), {});
}

std::string expect_config_error(const nlohmann::json& j, const std::string& needle) {
  try {
    parse_calibration(j, "cal.json");
  } catch (const ConfigError& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("cal.json"), std::string::npos) << what;
    EXPECT_NE(what.find(needle), std::string::npos) << what;
    return what;
  }
  ADD_FAILURE() << "expected a ConfigError mentioning " << needle;
  return "";
}

TEST(CalibrationFile, WrittenFileReadsBackWithTheSameCoefficients) {
  const Scenario s = load_scenario("", {"model=tiny"});
  FitResult fit;
  const auto j = roofline_calibration(s, *find_grid("cpu"), {}, &fit);
  const Calibration c = parse_calibration(j, "analytic.json");
  EXPECT_FALSE(c.measured);
  EXPECT_EQ(c.backend, "analytic");
  EXPECT_EQ(c.model_name, "tiny");
  ASSERT_EQ(c.terms.size(), fit.terms.size());
  for (size_t i = 0; i < c.terms.size(); ++i) {
    EXPECT_EQ(c.terms[i].term, fit.terms[i].term);
    EXPECT_DOUBLE_EQ(c.terms[i].coefficient, fit.terms[i].coefficient);
  }
  for (size_t i = 0; i < fit.samples.size(); ++i) {
    EXPECT_NEAR(c.seconds(fit.samples[i].shape), fit.predicted[i], 1e-15);
  }
  CalibratedCostModel m(c, 0.001);
  EXPECT_FALSE(m.measured());
  EXPECT_EQ(m.label().rfind("analytic:", 0), 0u) << m.label();
  EXPECT_EQ(m.pass_seconds(PassShape{}), 0.0);
}

TEST(CalibrationFile, AnalyticFileTracksTheRooflineItCameFrom) {
  const Scenario s = load_scenario("", {"model=qwen2.5-omni-7b", "gpu=h200"});
  FitResult fit;
  const auto j = roofline_calibration(s, *find_grid("gpu"), {}, &fit);
  const Calibration c = parse_calibration(j, "analytic.json");
  const RooflineCostModel roofline(s.model, s.gpu, 0.0);
  // Decode of a 7B model is bandwidth-bound everywhere on this grid, where the roofline is linear.
  const PassShape decode = step_pass_shape({BenchKind::kStep, 64, 1, 2048, -1, 0});
  EXPECT_NEAR(c.seconds(decode), roofline.pass_seconds(decode),
              0.03 * roofline.pass_seconds(decode));
}

TEST(CalibrationFile, RejectsSchemaVersionMismatch) {
  auto j = tiny_analytic();
  j["schema_version"] = 2;
  expect_config_error(j, "schema_version");
}

TEST(CalibrationFile, RejectsBadFields) {
  auto j = tiny_analytic();
  j["kind"] = "something else";
  expect_config_error(j, "kind");
  j = tiny_analytic();
  j["fit"]["terms"][0]["name"] = "warp_speed";
  expect_config_error(j, "fit.terms[0].name");
  j = tiny_analytic();
  j["fit"]["terms"][1]["unit"] = "ms/session";
  expect_config_error(j, "fit.terms[1].unit");
  j = tiny_analytic();
  j["fit"]["terms"][2]["coefficient"] = "fast";
  expect_config_error(j, "fit.terms[2].coefficient");
  j = tiny_analytic();
  j["fit"]["terms"] = nlohmann::json::array();
  expect_config_error(j, "fit.terms");
  j = tiny_analytic();
  j["measured"] = true;  // analytic backend cannot be measured
  expect_config_error(j, "measured");
  j = tiny_analytic();
  j.erase("model");
  expect_config_error(j, "model");
  j = tiny_analytic();
  j["surprise"] = 1;
  expect_config_error(j, "surprise");
  j = tiny_analytic();
  j["fit"]["terms"].push_back(j["fit"]["terms"][0]);
  expect_config_error(j, "each term once");
}

TEST(CalibrationFile, MissingOrInvalidFileIsAClearError) {
  const auto d = temp_dir();
  EXPECT_THROW(read_calibration((d / "nope.json").string()), ConfigError);
  std::ofstream(d / "bad.json") << "{ not json";
  try {
    read_calibration((d / "bad.json").string());
    FAIL();
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("not valid JSON"), std::string::npos);
  }
}

TEST(CalibratedScenario, FileIsRelativeToTheScenarioAndModelMustMatch) {
  const auto d = temp_dir();
  fs::create_directories(d / "scen" / "cal");
  write_json_file((d / "scen" / "cal" / "tiny.json").string(), tiny_analytic());
  std::ofstream(d / "scen" / "s.json") << R"({
    "model": "tiny", "gpu": "h200", "engine": {"num_blocks": 100},
    "workload": {"arrival": {"type": "all_at_once", "sessions": 2},
                 "duration": {"type": "fixed", "seconds": 2}},
    "cost_model": {"type": "calibrated", "file": "cal/tiny.json"},
    "horizon_s": 2})";
  const std::string path = (d / "scen" / "s.json").string();
  const Scenario s = load_scenario(path);
  EXPECT_TRUE(fs::path(s.cost_model.file).is_absolute());
  auto cost = make_cost_model(s);
  EXPECT_FALSE(cost->measured());
  const PassShape p = step_pass_shape({BenchKind::kStep, 2, 4, 100, -1, 0});
  EXPECT_GT(cost->pass_seconds(p), s.cost_model.step_overhead_s);
  EXPECT_TRUE(std::isfinite(cost->pass_seconds(p)));

  // Flipping to the roofline keeps the file field valid; another model is refused.
  EXPECT_EQ(make_cost_model(load_scenario(path, {"cost_model.type=roofline"}))->measured(), false);
  const Scenario other = load_scenario(path, {"model=moshi"});
  try {
    make_cost_model(other);
    FAIL();
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("calibrates model \"tiny\""), std::string::npos)
        << e.what();
  }
  // A missing file is named.
  const Scenario missing = load_scenario(path, {"cost_model.file=/nonexistent/cal.json"});
  try {
    make_cost_model(missing);
    FAIL();
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("/nonexistent/cal.json"), std::string::npos) << e.what();
  }
}

TEST(CalibratedScenario, CalibratedTypeNeedsAFile) {
  EXPECT_THROW(load_scenario("", {"cost_model.type=calibrated"}), ConfigError);
  EXPECT_THROW(load_scenario("", {"cost_model.type=calibrated", "cost_model.file=\"\""}),
               ConfigError);
}

}  // namespace
}  // namespace metronome::calibrate

namespace metronome::calibrate {
namespace {

// The committed CPU calibration and the scenarios that use it: they load, say they are CPU
// measurements, and drive a (short) simulation.
TEST(ShippedCalibration, TinyCpuScenariosRunOnTheCommittedFile) {
  const std::string dir = std::string(METRONOME_SOURCE_DIR) + "/scenarios/calibrated/";
  for (const char* name : {"tiny_cpu.json", "tiny_cpu_windowed.json"}) {
    const Scenario s = load_scenario(dir + name, {"horizon_s=3"});
    const auto cost = make_cost_model(s);
    EXPECT_TRUE(cost->measured()) << name;
    EXPECT_NE(cost->label().find("CPU"), std::string::npos) << cost->label();
    const auto& c = dynamic_cast<const CalibratedCostModel&>(*cost).calibration();
    EXPECT_EQ(c.backend, "cpu");
    EXPECT_GT(c.r2, 0.95);
    EXPECT_LT(c.heldout_median_ape, 0.10);
    const PassShape p = step_pass_shape({BenchKind::kStep, 6, 4, 500, -1, 0});
    EXPECT_GT(cost->pass_seconds(p), s.cost_model.step_overhead_s);
  }
}

}  // namespace
}  // namespace metronome::calibrate
