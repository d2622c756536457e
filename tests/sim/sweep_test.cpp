// Sweeps: argument parsing, the Wilson interval, -j invariance, shard merge equality.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <limits>
#include <optional>
#include <sstream>

#include "base/config_error.h"
#include "sim/analysis/capacity.h"
#include "sim/closed_form/first_order.h"
#include "sim/engine/engine.h"
#include "sim/sweep/sweep_runner.h"
#include "sim/sweep/wilson.h"
#include "sim/workload/all_at_once_arrivals.h"
#include "test_scenarios.h"

namespace metronome {
namespace {

std::string slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::string temp_dir(const std::string& name) {
  const auto d = std::filesystem::temp_directory_path() / ("metronome_sweep_test_" + name);
  std::filesystem::remove_all(d);
  return d.string();
}

// Small and fast: tiny Moshi runs, two grid axes, three seeds; Poisson arrivals so seeds differ.
SweepSpec small_spec() {
  SweepSpec s;
  s.sets = {"horizon_s=60",
            "workload.arrival={\"type\":\"poisson\",\"rate_per_s\":4,\"max_sessions\":400}",
            "workload.duration={\"type\":\"exponential\",\"mean_s\":40}",
            "engine.num_blocks=300",
            "kv_policy.window_tokens=48",
            "kv_policy.sink_tokens=4"};
  s.axes.push_back(parse_grid_axis("kv_policy.type=unbounded,windowed"));
  s.axes.push_back(
      parse_grid_axis("admission={\"type\":\"none\"},{\"type\":\"aimd\",\"initial_cap\":4}"));
  s.seeds = parse_seeds("3");
  return s;
}

TEST(Wilson, MatchesKnownValues) {
  // Reference values (Wilson 1927; e.g. statsmodels proportion_confint(method="wilson")).
  Interval w = wilson_interval(14, 20);
  EXPECT_NEAR(w.lo, 0.4810, 5e-4);
  EXPECT_NEAR(w.hi, 0.8545, 5e-4);
  w = wilson_interval(0, 20);
  EXPECT_DOUBLE_EQ(w.lo, 0.0);
  EXPECT_NEAR(w.hi, 0.1611, 5e-4);
  w = wilson_interval(20, 20);
  EXPECT_NEAR(w.lo, 0.8389, 5e-4);
  EXPECT_DOUBLE_EQ(w.hi, 1.0);
  w = wilson_interval(50, 100);
  EXPECT_NEAR(w.lo, 0.4038, 5e-4);
  EXPECT_NEAR(w.hi, 0.5962, 5e-4);
  // No crash in n runs: exactly 0 below, and every crash exactly 1 above, at every n (the closed
  // form rounded to 5.6e-17 at 3 and 7 runs).
  for (int64_t n = 1; n <= 50; ++n) {
    EXPECT_EQ(wilson_interval(0, n).lo, 0.0) << n;
    EXPECT_EQ(wilson_interval(n, n).hi, 1.0) << n;
  }
}

TEST(SweepArgs, ParseAndReject) {
  EXPECT_EQ(parse_seeds("3"), (std::vector<uint64_t>{1, 2, 3}));
  EXPECT_EQ(parse_seeds("5..7"), (std::vector<uint64_t>{5, 6, 7}));
  EXPECT_EQ(parse_seeds("9,4"), (std::vector<uint64_t>{9, 4}));
  EXPECT_THROW(parse_seeds("0"), ConfigError);
  EXPECT_THROW(parse_seeds("7..5"), ConfigError);
  EXPECT_THROW(parse_seeds("x"), ConfigError);
  EXPECT_THROW(parse_seeds("-3"), ConfigError);
  const GridAxis a =
      parse_grid_axis("workload.arrival={\"type\":\"all_at_once\",\"sessions\":3},{\"a\":[1,2]}");
  ASSERT_EQ(a.values.size(), 2u);
  EXPECT_EQ(a.values[0]["sessions"], 3);
  EXPECT_EQ(parse_grid_axis("kv_policy.type=unbounded,windowed").values[1], "windowed");
  EXPECT_THROW(parse_grid_axis("novalues"), ConfigError);
  EXPECT_THROW(parse_grid_axis("k="), ConfigError);
  EXPECT_THROW(parse_grid_axis("k=1,,2"), ConfigError);
  EXPECT_EQ(parse_shard("1/4").index, 1);
  EXPECT_THROW(parse_shard("4/4"), ConfigError);
  EXPECT_THROW(parse_shard("1"), ConfigError);
  EXPECT_THROW(parse_shard("0/0"), ConfigError);
  // A bad grid value is reported before anything runs, naming the point.
  SweepSpec bad = small_spec();
  bad.axes.push_back(parse_grid_axis("engine.exhaustion=stall,bogus"));
  SweepOptions o;
  o.out_dir = temp_dir("bad");
  try {
    run_sweep(bad, o);
    FAIL() << "expected a ConfigError";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("engine.exhaustion=bogus"), std::string::npos) << e.what();
  }
  EXPECT_FALSE(std::filesystem::exists(o.out_dir + "/runs.csv"));
}

TEST(SweepArgs, SeedsAreStrictDecimalAndDistinct) {
  for (const char* bad : {"010", "0x10", "", "-1", "1,1,1", "3,4,3", "01..5", "1..05", " 1"}) {
    EXPECT_THROW(parse_seeds(bad), ConfigError) << bad;
  }
  EXPECT_EQ(parse_seeds("0,10"), (std::vector<uint64_t>{0, 10}));
  try {
    parse_seeds("1,2,1");
    FAIL();
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("seed 1 is given twice"), std::string::npos);
  }
  EXPECT_THROW(parse_shard("01/4"), ConfigError);
  EXPECT_THROW(parse_sweep_spec(nlohmann::json::parse(R"({"seeds": [2, 2]})"), "s.json"),
               ConfigError);
  // A sweep file's seeds are blamed on the file, not on a --seeds flag nobody gave.
  try {
    parse_sweep_spec(nlohmann::json::parse(R"({"seeds": "5..1"})"), "s.json");
    FAIL();
  } catch (const ConfigError& e) {
    EXPECT_EQ(std::string(e.what()),
              "s.json: seeds \"5..1\": empty range (the end is before the start)");
  }
  // A grid axis names each value once: the same point would run twice.
  SweepSpec twice;
  twice.seeds = {1};
  twice.axes.push_back(parse_grid_axis("engine.num_blocks=100,200,1e2"));
  EXPECT_THROW(twice.check_limits(), ConfigError);
}

TEST(SweepArgs, GridSizeIsCheckedBeforeExpansion) {
  SweepSpec s;
  s.seeds = {1};
  // 63 axes of 2 values: 2^63 points, which wrapped to INT64_MIN before.
  for (int i = 0; i < 63; ++i) s.axes.push_back({"k" + std::to_string(i), {1, 2}});
  EXPECT_EQ(s.points(), std::numeric_limits<int64_t>::max());
  EXPECT_EQ(s.runs(), std::numeric_limits<int64_t>::max());
  EXPECT_THROW(s.check_limits(), ConfigError);
  // 16 axes of 16 values: 2^64, which wrapped to 0 ("0 of 0 runs").
  s.axes.clear();
  std::vector<nlohmann::json> sixteen;
  for (int v = 0; v < 16; ++v) sixteen.emplace_back(v);
  for (int i = 0; i < 16; ++i) s.axes.push_back({"k" + std::to_string(i), sixteen});
  EXPECT_EQ(s.points(), std::numeric_limits<int64_t>::max());
  try {
    s.check_limits();
    FAIL();
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("expected at most 100000 points"), std::string::npos);
  }
  // Within the point limit, the run limit still holds.
  s.axes = {{"k", sixteen}};
  s.seeds.clear();
  for (uint64_t i = 0; i < 100'000; ++i) s.seeds.push_back(i);
  EXPECT_EQ(s.runs(), 1'600'000);
  EXPECT_THROW(s.check_limits(), ConfigError);
  s.axes.push_back({"k", {1}});  // a repeated key
  s.seeds = {1};
  EXPECT_THROW(s.check_limits(), ConfigError);
  // Unknown keys of a sweep file are errors.
  EXPECT_THROW(parse_sweep_spec(nlohmann::json::parse(R"({"grids": {}})"), "s.json"), ConfigError);
  EXPECT_THROW(parse_sweep_spec(nlohmann::json::parse(R"({"set": [1]})"), "s.json"), ConfigError);
}

TEST(Sweep, IdenticalWhateverTheThreadCount) {
  const SweepSpec spec = small_spec();
  std::vector<std::string> dirs;
  for (int j : {1, 2, 5}) {
    SweepOptions o;
    o.jobs = j;
    o.out_dir = temp_dir("j" + std::to_string(j));
    const auto r = run_sweep(spec, o);
    EXPECT_TRUE(r.complete);
    EXPECT_EQ(r.written, spec.runs());
    dirs.push_back(o.out_dir);
  }
  for (const char* f :
       {"runs.csv", "runs.jsonl", "aggregate.csv", "aggregate.json", "sweep.json"}) {
    const std::string want = slurp(dirs[0] + "/" + f);
    EXPECT_FALSE(want.empty()) << f;
    for (size_t i = 1; i < dirs.size(); ++i) EXPECT_EQ(slurp(dirs[i] + "/" + f), want) << f;
  }
  // One row per run plus a header; one aggregate row per grid point.
  const std::string csv = slurp(dirs[0] + "/runs.csv");
  EXPECT_EQ(std::count(csv.begin(), csv.end(), '\n'), spec.runs() + 1);
  const auto agg = nlohmann::json::parse(slurp(dirs[0] + "/aggregate.json"));
  ASSERT_EQ(static_cast<int64_t>(agg.size()), spec.points());
  // The 300-block pool makes unbounded without admission crash; the aggregate says so.
  EXPECT_EQ(agg[0]["crash_probability"], 1.0);
  EXPECT_LT(agg[0]["crash_wilson95_lo"].get<double>(), 1.0);
  EXPECT_TRUE(agg[3]["n_star_median"].is_number());
}

// A run whose true p99 is censored (frames never answered) ranks above every number in the
// median: the median of the others alone left out the worst runs (10.56 ms against a reported
// 10.80 ms over 20 seeds of figure 4's load, 8 of them censored).
TEST(Sweep, CensoredRunsRankAboveEveryTrueP99) {
  const SweepSpec spec = small_spec();
  const nlohmann::ordered_json row = run_row(spec, 0);
  auto median_of = [&](const std::vector<std::optional<double>>& p99s) {
    std::vector<nlohmann::ordered_json> rows;
    for (const auto& v : p99s) {
      rows.push_back(row);
      rows.back()["true_p99_ms"] = v ? nlohmann::ordered_json(*v) : nlohmann::ordered_json(nullptr);
    }
    return aggregate_point(spec, 0, rows)["true_p99_median_ms"];
  };
  EXPECT_EQ(median_of({10.0, 30.0, 20.0, std::nullopt, std::nullopt}), 30.0);
  EXPECT_TRUE(median_of({10.0, 20.0, std::nullopt, std::nullopt, std::nullopt}).is_null());
  EXPECT_EQ(median_of({10.0, 20.0, std::nullopt, std::nullopt}), 20.0);
  EXPECT_EQ(median_of({10.0, 20.0, 30.0, 40.0}), 20.0);
}

TEST(Sweep, TwoShardsMergedEqualOneProcess) {
  const SweepSpec spec = small_spec();
  SweepOptions one;
  one.jobs = 2;
  one.out_dir = temp_dir("single");
  run_sweep(spec, one);
  std::vector<std::string> shards;
  for (int i = 0; i < 2; ++i) {
    SweepOptions o;
    o.jobs = 1;
    o.shard = Shard{i, 2};
    o.out_dir = temp_dir("shard" + std::to_string(i));
    const auto r = run_sweep(spec, o);
    EXPECT_LT(r.planned, spec.runs());
    shards.push_back(o.out_dir);
  }
  const std::string merged = temp_dir("merged");
  merge_sweeps(shards, merged);
  for (const char* f :
       {"runs.csv", "runs.jsonl", "aggregate.csv", "aggregate.json", "sweep.json"}) {
    EXPECT_EQ(slurp(merged + "/" + f), slurp(one.out_dir + "/" + f)) << f;
  }
  // A missing shard is an error, not a silently smaller sweep.
  EXPECT_THROW(merge_sweeps({shards[0]}, temp_dir("merged_missing")), ConfigError);
  // So is a shard given twice.
  EXPECT_THROW(merge_sweeps({shards[0], shards[0], shards[1]}, temp_dir("merged_twice")),
               ConfigError);
}

// Shards given one scenario file by other paths (from another folder, or spelled otherwise) ran
// one sweep: the files they ran are compared, not the paths. A shard of another sweep is not.
TEST(Sweep, ShardsOfOneScenarioByOtherPathsMerge) {
  SweepSpec spec = small_spec();
  const std::string dir = std::string(METRONOME_SOURCE_DIR) + "/scenarios";
  std::vector<std::string> shards;
  for (int i = 0; i < 2; ++i) {
    SweepSpec s = spec;
    s.scenario = dir + (i == 0 ? "/default.json" : "/../scenarios/./default.json");
    SweepOptions o;
    o.jobs = 1;
    o.shard = Shard{i, 2};
    o.out_dir = temp_dir("path_shard" + std::to_string(i));
    run_sweep(s, o);
    shards.push_back(o.out_dir);
  }
  EXPECT_NO_THROW(merge_sweeps(shards, temp_dir("path_merged")));
  SweepSpec other = spec;
  other.scenario = dir + "/default.json";
  other.seeds = parse_seeds("4");
  SweepOptions o;
  o.jobs = 1;
  o.shard = Shard{1, 2};
  o.out_dir = temp_dir("path_other");
  run_sweep(other, o);
  EXPECT_THROW(merge_sweeps({shards[0], o.out_dir}, temp_dir("path_merged_other")), ConfigError);
}

TEST(Sweep, StopLeavesCompleteRowsAndValidFiles) {
  const SweepSpec spec = small_spec();
  std::atomic<bool> stop{true};  // as if Ctrl-C came before the first run
  SweepOptions o;
  o.jobs = 2;
  o.out_dir = temp_dir("stopped");
  o.stop = &stop;
  const auto r = run_sweep(spec, o);
  EXPECT_FALSE(r.complete);
  const auto meta = nlohmann::json::parse(slurp(o.out_dir + "/sweep.json"));
  EXPECT_EQ(meta["complete"], false);
  EXPECT_EQ(meta["runs_written"], r.written);
  std::ifstream in(o.out_dir + "/runs.jsonl");
  std::string line;
  while (std::getline(in, line)) EXPECT_TRUE(nlohmann::json::accept(line)) << line;
  EXPECT_TRUE(nlohmann::json::accept(slurp(o.out_dir + "/aggregate.json")));
  // No point finished: the CSV still has its header (a script reading it finds the columns, not
  // an empty file), and nothing else.
  const std::string csv = slurp(o.out_dir + "/aggregate.csv");
  EXPECT_EQ(csv.rfind("point,", 0), 0u) << csv;
  EXPECT_EQ(std::count(csv.begin(), csv.end(), '\n'), 1) << csv;
}

TEST(Capacity, WindowedContrastScenarioIsDeadlineBound) {
  const Scenario s = load_scenario(std::string(METRONOME_SOURCE_DIR) +
                                   "/scenarios/admission/moshi_h200_aimd_windowed.json");
  const CapacityReport c = compute_capacity(s, 0.9);
  EXPECT_FALSE(c.memory_cap_depends_on_call_length);
  EXPECT_GT(c.memory_cap, 300);
  EXPECT_GT(c.deadline_cap, 100);
  EXPECT_EQ(c.binding, "deadline");
  const Scenario u = load_scenario(std::string(METRONOME_SOURCE_DIR) +
                                   "/scenarios/admission/moshi_h200_aimd_unbounded.json");
  const CapacityReport cu = compute_capacity(u, 0.9);
  EXPECT_TRUE(cu.memory_cap_depends_on_call_length);
  // One call over the 600 s horizon holds 7500 tokens (12.5/s) at hang-up: 469 blocks of 16. The
  // pool's blocks over that, and not a block more per caller (881 callers of 250 tokens fit the
  // 14099 blocks in the engine; 882 stall).
  EXPECT_EQ(cu.blocks_per_caller, 469);
  EXPECT_EQ(cu.memory_cap, predict_first_order(u).pool.num_blocks / 469);
}

// The memory cap is the most callers whose KV at hang-up fits: that many run a whole call with no
// stall, one more stalls (Moshi on H200, 20 s calls, unbounded and windowed with calls shorter
// than the window's fill, which hold what unbounded KV would).
TEST(Capacity, MemoryCapIsTheMostCallersThatFit) {
  for (const std::vector<std::string>& policy :
       {std::vector<std::string>{}, {"kv_policy.type=windowed", "kv_policy.window_tokens=480"}}) {
    std::vector<std::string> sets = {"horizon_s=20", "workload.duration.seconds=20"};
    sets.insert(sets.end(), policy.begin(), policy.end());
    const Scenario s = load_scenario("", sets);
    const CapacityReport c = compute_capacity(s, 0.9, /*probe_s=*/1.0);
    EXPECT_TRUE(c.memory_cap_depends_on_call_length);
    for (const int64_t n : {c.memory_cap, c.memory_cap + 1}) {
      Scenario run = s;
      run.workload.arrival.policy = std::make_shared<const AllAtOnceArrivals>(0, n);
      run.horizon_s = 21;
      const RunResult r = simulate(run);
      EXPECT_EQ(r.first_stall_s.has_value(), n > c.memory_cap) << n << " callers";
    }
  }
}

}  // namespace
}  // namespace metronome
