// Reading Google Benchmark JSON: medians, skipped benchmarks, the -nan it prints, bad input.
#include "calibrate/bench_json.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "base/config_error.h"

namespace metronome::calibrate {
namespace {

nlohmann::json entry(const std::string& name, const std::string& run_type, const std::string& agg,
                     double ms) {
  nlohmann::json e = {{"name", name + (agg.empty() ? "" : "_" + agg)},
                      {"run_name", name},
                      {"run_type", run_type},
                      {"real_time", ms},
                      {"time_unit", "ms"},
                      {"sessions", 4},
                      {"q_len", 1},
                      {"ctx", 256},
                      {"window", -1},
                      {"sinks", 0},
                      {"layers", 2}};
  if (!agg.empty()) e["aggregate_name"] = agg;
  return e;
}

nlohmann::json run_json() {
  nlohmann::json j = {{"context",
                       {{"metronome_model", "tiny"},
                        {"metronome_backend", "cpu"},
                        {"metronome_device", "Test CPU"},
                        {"metronome_grid", "ci"},
                        {"date", "2026-01-01T00:00:00+00:00"}}},
                      {"benchmarks", nlohmann::json::array()}};
  const std::string n = "tiny/cpu/step/s:4/q:1/ctx:256/w:-1/sinks:0/manual_time";
  for (double ms : {3.0, 2.0, 9.0}) j["benchmarks"].push_back(entry(n, "iteration", "", ms));
  j["benchmarks"].push_back(entry(n, "aggregate", "mean", 4.667));
  j["benchmarks"].push_back(entry(n, "aggregate", "median", 3.0));
  j["benchmarks"].push_back({{"name", "tiny/cpu/step/s:999/q:1/ctx:256/w:-1/sinks:0"},
                             {"run_name", "tiny/cpu/step/s:999/q:1/ctx:256/w:-1/sinks:0"},
                             {"error_occurred", true},
                             {"error_message", "out of memory"}});
  return j;
}

TEST(BenchJson, ReadsTheMedianAndListsSkippedBenchmarks) {
  const BenchRun r = parse_bench_json(run_json(), "b.json");
  EXPECT_EQ(r.model, "tiny");
  EXPECT_EQ(r.backend, "cpu");
  EXPECT_EQ(r.device, "Test CPU");
  ASSERT_EQ(r.samples.size(), 1u);
  EXPECT_DOUBLE_EQ(r.samples[0].seconds, 3.0e-3);
  EXPECT_EQ(r.samples[0].point.kind, BenchKind::kStep);
  EXPECT_EQ(r.samples[0].point.sessions, 4);
  EXPECT_EQ(r.samples[0].point.window, -1);
  EXPECT_EQ(r.samples[0].layers, 2);
  ASSERT_EQ(r.skipped.size(), 1u);
  EXPECT_NE(r.skipped[0].find("out of memory"), std::string::npos);
}

TEST(BenchJson, WithoutRepetitionsTakesTheMeanOfIterations) {
  auto j = run_json();
  nlohmann::json only = nlohmann::json::array();
  for (const auto& b : j["benchmarks"]) {
    if (b.value("run_type", "") == "iteration") only.push_back(b);
  }
  j["benchmarks"] = only;
  const BenchRun r = parse_bench_json(j, "b.json");
  ASSERT_EQ(r.samples.size(), 1u);
  EXPECT_NEAR(r.samples[0].seconds, 14.0e-3 / 3, 1e-12);
}

TEST(BenchJson, AcceptsTheNanGoogleBenchmarkPrints) {
  const auto d = std::filesystem::temp_directory_path() / "metronome_bench_json_test";
  std::filesystem::create_directories(d);
  std::string text = run_json().dump(1);
  // What Google Benchmark writes for the coefficient of variation of an all-zero counter.
  text.insert(text.rfind(']'), R"(, {"name": "x_cv", "run_name": "x", "run_type": "aggregate",
      "aggregate_name": "cv", "real_time": 0.1, "sinks": -nan, "window": inf})");
  std::ofstream(d / "b.json") << text;
  const BenchRun r = read_bench_json((d / "b.json").string());
  EXPECT_EQ(r.samples.size(), 1u);
}

TEST(BenchJson, BadInputIsAConfigErrorNamingTheField) {
  EXPECT_THROW(parse_bench_json(nlohmann::json::array(), "b.json"), ConfigError);
  auto j = run_json();
  j["context"].erase("metronome_model");
  EXPECT_THROW(parse_bench_json(j, "b.json"), ConfigError);
  j = run_json();
  j["benchmarks"][4].erase("ctx");
  try {
    parse_bench_json(j, "b.json");
    FAIL();
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("benchmarks[4].ctx"), std::string::npos) << e.what();
  }
  j = run_json();
  j["benchmarks"][4]["real_time"] = -1;
  EXPECT_THROW(parse_bench_json(j, "b.json"), ConfigError);
  j = run_json();
  j["benchmarks"][4]["time_unit"] = "fortnights";
  EXPECT_THROW(parse_bench_json(j, "b.json"), ConfigError);
  EXPECT_THROW(read_bench_json("/nonexistent/b.json"), ConfigError);
}

}  // namespace
}  // namespace metronome::calibrate

namespace metronome::calibrate {
namespace {

BenchRun run_of(const std::string& source, const std::string& model,
                std::vector<std::pair<GridPoint, double>> points) {
  BenchRun r;
  r.source = source;
  r.model = model;
  r.backend = "gpu";
  r.protocol = source + " protocol";
  r.device = source + " device";
  for (const auto& [p, s] : points) r.samples.push_back({point_name(p), p, 32, s});
  return r;
}

// Our kernels and PyTorch's attention timed on the same grid: the fit gets the faster per shape,
// and the merged run says which gave how many.
TEST(BenchJson, FasterPerShapeKeepsTheMinimumAndSaysWhichRunGaveIt) {
  const GridPoint a{BenchKind::kStep, 1, 1, 512, -1, 0}, b{BenchKind::kStep, 8, 16, 512, -1, 0},
      c{BenchKind::kStep, 8, 16, 512, 256, 4};
  const BenchRun ours = run_of("ours.json", "moshi", {{a, 1.0e-3}, {b, 9.0e-3}, {c, 4.0e-3}});
  const BenchRun torch = run_of("torch.json", "moshi", {{a, 1.2e-3}, {b, 3.0e-3}});
  const BenchRun m = faster_per_shape({ours, torch});
  ASSERT_EQ(m.samples.size(), 3u);
  std::map<std::string, double> got;
  for (const auto& s : m.samples) got[s.name] = s.seconds;
  EXPECT_EQ(got[point_name(a)], 1.0e-3);
  EXPECT_EQ(got[point_name(b)], 3.0e-3);
  EXPECT_EQ(got[point_name(c)], 4.0e-3);  // timed by one run only
  EXPECT_NE(m.protocol.find("[ours.json, kept on 2 of 3 shapes"), std::string::npos) << m.protocol;
  EXPECT_NE(m.protocol.find("[torch.json, kept on 1 of 3 shapes"), std::string::npos);
  // One model on one kind of device only.
  BenchRun other = torch;
  other.model = "qwen2.5-omni-7b";
  EXPECT_THROW(faster_per_shape({ours, other}), ConfigError);
  other = torch;
  other.backend = "cpu";
  EXPECT_THROW(faster_per_shape({ours, other}), ConfigError);
}

}  // namespace
}  // namespace metronome::calibrate
