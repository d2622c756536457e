// Cohorts (identical callers simulated as one) are an exact optimisation: every output, summary and
// time series, must be the same with them and without.
#include <gtest/gtest.h>

#include <cstdlib>
#include <iostream>
#include <sstream>

#include "sim/engine.h"
#include "sim/first_order.h"
#include "sim/report.h"
#include "sim/rng.h"
#include "tests/sim/test_scenarios.h"

namespace metronome {
namespace {

class Recorder : public RunObserver {
 public:
  void on_sample(const Sample& x) override {
    out << "S " << x.t_s << ' ' << x.pool_used_blocks << ' ' << x.live_sessions << ' '
        << x.stalled_sessions << ' ' << x.frames_due << ' ' << x.frames_served << ' '
        << x.frames_on_time << ' ' << x.tokens_produced << ' ' << x.reported_p99_s << ' '
        << x.true_p50_s << ' ' << x.silent_fraction << '\n';
  }
  void on_step(Time a, Time b, int64_t n, int64_t used) override {
    out << "T " << a << ' ' << b << ' ' << n << ' ' << used << '\n';
  }
  void on_stall(Time t, int64_t n) override { out << "B " << t << ' ' << n << '\n'; }
  std::ostringstream out;
};

std::pair<std::string, std::string> run(const Scenario& s, bool cohorts) {
  const auto cost = make_cost_model(s);
  Recorder rec;
  Engine e(s, *cost, &rec);
  e.set_cohorts(cohorts);
  const RunResult r = e.run();
  return {run_json(s, predict_first_order(s), r, cost->label()).dump(), rec.out.str()};
}

}  // namespace

TEST(Cohorts, SameResultsWithAndWithout) {
  using testing::moshi;
  const std::vector<Scenario> cases = {
      moshi(300, "unbounded"),
      moshi(300, "windowed"),
      moshi(500, "windowed"),  // more than fit: partial fits split cohorts
      moshi(300, "unbounded", {"engine.max_sessions_per_step=7", "workload.prompt_tokens=40"}),
      moshi(300, "unbounded",
            {"engine.block_size=5", "workload.kv_tokens_per_frame=3",
             "workload.duration={\"type\":\"fixed\",\"seconds\":70}"}),
      moshi(200, "windowed",
            {"engine.num_blocks=3000", "kv_policy.window_tokens=40", "kv_policy.sink_tokens=4",
             "engine.block_size=4"}),
      moshi(0, "unbounded",
            {"workload.arrival={\"type\":\"fixed_interval\",\"interval_s\":0.5,\"sessions\":300}"}),
      moshi(300, "unbounded", {"workload.duration={\"type\":\"exponential\",\"mean_s\":60}"}),
      moshi(400, "windowed", {"admission={\"type\":\"aimd\"}", "workload.deadline_s=0.01"}),
  };
  for (size_t i = 0; i < cases.size(); ++i) {
    SCOPED_TRACE("case " + std::to_string(i));
    const auto with = run(cases[i], true);
    const auto without = run(cases[i], false);
    EXPECT_EQ(with.first, without.first);
    EXPECT_TRUE(with.second == without.second) << "time series or steps differ";
    if (with.second != without.second && std::getenv("METRONOME_DEBUG_COHORTS")) {
      std::istringstream a(with.second), b(without.second);
      std::string la, lb;
      for (int k = 0; std::getline(a, la) && std::getline(b, lb); ++k) {
        if (la != lb || k > 1000000) {
          std::cerr << "line " << k << "\n with:    " << la << "\n without: " << lb << "\n";
          for (int m = 0; m < 6 && std::getline(a, la) && std::getline(b, lb); ++m)
            std::cerr << "   w " << la << "\n   o " << lb << "\n";
          break;
        }
      }
    }
    EXPECT_GT(with.second.size(), 100u);
  }
}

// Random all-at-once populations (the case cohorts exist for) against batch caps, partial fits and
// multi-block frames: the shapes where a cohort is split and rejoined.
TEST(Cohorts, RandomPopulationsMatch) {
  Rng rng(5, "cohorts");
  for (int i = 0; i < 40; ++i) {
    const int64_t n = 1 + static_cast<int64_t>(rng.uniform() * 600);
    const std::vector<std::string> sets = {
        "engine.max_sessions_per_step=" +
            std::to_string(1 + static_cast<int64_t>(rng.uniform() * 300)),
        "engine.num_blocks=" + std::to_string(500 + static_cast<int64_t>(rng.uniform() * 20000)),
        "engine.block_size=" + std::to_string(1 + static_cast<int64_t>(rng.uniform() * 32)),
        "workload.kv_tokens_per_frame=" +
            std::to_string(1 + static_cast<int64_t>(rng.uniform() * 80)),
        "workload.prompt_tokens=" + std::to_string(static_cast<int64_t>(rng.uniform() * 100)),
        "workload.duration={\"type\":\"fixed\",\"seconds\":" +
            std::to_string(5 + 60 * rng.uniform()) + "}",
        "horizon_s=60",
        "output.sample_period_s=0.5"};
    const Scenario s = testing::moshi(n, rng.uniform() < 0.5 ? "windowed" : "unbounded", sets);
    SCOPED_TRACE("case " + std::to_string(i));
    const auto with = run(s, true);
    const auto without = run(s, false);
    EXPECT_EQ(with.first, without.first);
    EXPECT_TRUE(with.second == without.second) << "time series or steps differ";
    if (with.second != without.second && std::getenv("METRONOME_DEBUG_COHORTS")) {
      for (auto& x : sets) std::cerr << x << " ";
      std::cerr << "n=" << n << " " << s.kv_policy.type() << "\n";
      std::istringstream a(with.second), b(without.second);
      std::string la, lb;
      for (int k = 0; std::getline(a, la) && std::getline(b, lb); ++k) {
        if (la != lb) {
          std::cerr << "line " << k << "\n with:    " << la << "\n without: " << lb << "\n";
          for (int m = 0; m < 4 && std::getline(a, la) && std::getline(b, lb); ++m)
            std::cerr << "   w " << la << "\n   o " << lb << "\n";
          break;
        }
      }
    }
  }
}

}  // namespace metronome
