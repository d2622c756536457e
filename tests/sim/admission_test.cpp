// Admission control: the cap is enforced and counted, and the paper's contrast holds on simulator
// output: AIMD converges with windowed KV and over-admits into the cliff with unbounded KV.
#include <gtest/gtest.h>

#include "base/config_error.h"
#include "sim/admission/admission_controller.h"
#include "sim/admission/aimd.h"
#include "sim/analysis/report.h"
#include "sim/closed_form/first_order.h"
#include "sim/closed_form/service_rate.h"
#include "sim/engine/engine.h"
#include "test_scenarios.h"

namespace metronome {
namespace {

Scenario contrast(const std::string& kv, std::vector<std::string> sets = {}) {
  return load_scenario(
      std::string(METRONOME_SOURCE_DIR) + "/scenarios/admission/moshi_h200_aimd_" + kv + ".json",
      sets);
}

TEST(Admission, WindowedAimdSettlesInABandBelowTheMemoryCapWithoutStalling) {
  const Scenario s = contrast("windowed");
  const RunResult r = simulate(s);
  const auto p = predict_first_order(s);
  ASSERT_TRUE(p.memory_cap_sessions);
  const auto& a = r.admission;
  EXPECT_FALSE(r.crashed());
  // Only frames still in flight at the horizon count as silent.
  EXPECT_LT(static_cast<double>(r.frames_silent), 1e-4 * static_cast<double>(r.frames_due));
  ASSERT_TRUE(a.n_star);
  // The deadline binds: N* sits well above the start and below the memory cap.
  EXPECT_GT(*a.n_star, 100);
  EXPECT_LT(*a.n_star, 0.8 * static_cast<double>(*p.memory_cap_sessions));
  // Settled: the cap over the last half stays within +-10% of N*.
  EXPECT_GE(*a.cap_p5, 0.9 * *a.n_star);
  EXPECT_LE(*a.cap_p95, 1.1 * *a.n_star);
  // Demand exceeded the cap, and every rejection is counted.
  EXPECT_GT(r.sessions_rejected, 0);
  EXPECT_EQ(r.sessions_arrived, 3000);
  EXPECT_LE(r.peak_live_sessions, a.max_cap);
  // Latency stayed under the deadline: the controller learned from a faithful signal.
  EXPECT_LT(r.reported_latency.percentile(0.99), s.workload.deadline());
}

// A user's run: Qwen2.5-Omni-7B on an H200, 1 s frames of 30 in and 10 out, W = 480,
// Poisson callers at 5/s staying all run. Latency read at most 740 ms (under the 800 ms headroom
// bound) right up to the line where the engine stops keeping full-step pace, then grew without
// bound; callers are never evicted, so AIMD had admitted 1028 and 22-82% of frames were late.
// The forecast now stops increases at that line.
TEST(Admission, AimdStopsWhereTheEngineStopsKeepingPace) {
  const Scenario s = testing::moshi(
      1, "windowed",
      {"model=qwen2.5-omni-7b", "workload.frame_period_s=1", "workload.input_tokens_per_frame=30",
       "workload.output_tokens_per_frame=10", "kv_policy.sink_tokens=0", "horizon_s=900",
       "workload.duration={\"type\":\"fixed\",\"seconds\":900}",
       "workload.arrival={\"type\":\"poisson\",\"rate_per_s\":5}", "admission.type=aimd"});
  const auto cost = make_cost_model(s);
  const int64_t line = full_step_sessions(s, kv::settled_cached_cap(s.kv_policy.window()), *cost);
  const RunResult r = simulate(s, *cost);
  ASSERT_TRUE(r.admission.n_star);
  EXPECT_LE(r.peak_live_sessions, line);
  EXPECT_GE(*r.admission.n_star, 0.97 * static_cast<double>(line));  // it still gets there
  EXPECT_TRUE(r.admission.flags.empty()) << r.admission.flags.front();
  EXPECT_GE(r.frames_on_time + r.peak_live_sessions, r.frames_due);
}

TEST(Admission, UnboundedAimdOverAdmitsAndStalls) {
  const Scenario s = contrast("unbounded");
  ASSERT_EQ(s.admission.memory_guard, "off");  // the controller alone
  const RunResult r = simulate(s);
  const auto p = predict_first_order(s);
  const auto& a = r.admission;
  ASSERT_TRUE(r.crashed());
  EXPECT_NE(std::find(a.flags.begin(), a.flags.end(), "stalled"), a.flags.end());
  ASSERT_TRUE(r.first_stall_s);
  EXPECT_LT(*r.first_stall_s, s.horizon_s / 2);
  // Sessions whose whole call fits the pool: pool tokens / (tokens per second x horizon).
  const double safe = static_cast<double>(p.pool.num_blocks * s.engine.block_size) /
                      (p.tokens_per_s_per_session * s.horizon_s);
  ASSERT_TRUE(a.live_at_first_stall);
  EXPECT_GT(static_cast<double>(*a.live_at_first_stall), 3 * safe);
  // The controller did cut (latency rose with the KV it reads), but admitted sessions are never
  // evicted, so the cut came too late: the stall happens anyway and most frames go silent.
  EXPECT_GT(a.decreases, 0);
  EXPECT_LT(*a.cap_at_first_stall, *a.live_at_first_stall);
  EXPECT_GT(static_cast<double>(r.frames_silent), 0.5 * static_cast<double>(r.frames_due));
  // The same controller on windowed KV admits more and never stalls (the contrast).
  const RunResult w = simulate(contrast("windowed"));
  EXPECT_FALSE(w.crashed());
}

// An AIMD run that never raised its cap measured no concurrency (N* is where it started
// or below): it is flagged "never_raised", with the reason, as a stall or a collapse is.
TEST(Admission, AimdThatNeverRaisesItsCapIsFlaggedWithAReason) {
  // A 2 ms deadline: every interval is congested, the cap only ever falls from 16.
  const RunResult r = simulate(contrast("windowed", {"workload.deadline_s=0.002", "horizon_s=60"}));
  const auto& a = r.admission;
  EXPECT_EQ(a.increases, 0);
  ASSERT_EQ(a.flags.size(), a.flag_reasons.size());
  const auto it = std::find(a.flags.begin(), a.flags.end(), "never_raised");
  ASSERT_NE(it, a.flags.end());
  const std::string& why = a.flag_reasons[static_cast<size_t>(it - a.flags.begin())];
  EXPECT_NE(why.find("the cap never rose above its initial 16"), std::string::npos) << why;
  // The contrast's own run raises its cap and is not flagged.
  const RunResult ok = simulate(contrast("windowed", {"horizon_s=60"}));
  EXPECT_GT(ok.admission.increases, 0);
  EXPECT_EQ(std::find(ok.admission.flags.begin(), ok.admission.flags.end(), "never_raised"),
            ok.admission.flags.end());
}

TEST(Admission, StaticCapRejectsAboveTheCapAndNeverEvicts) {
  const Scenario s = testing::moshi(50, "windowed", {"admission={\"type\":\"static\",\"cap\":20}"});
  const RunResult r = simulate(s);
  EXPECT_EQ(r.sessions_arrived, 50);
  EXPECT_EQ(r.sessions_rejected, 30);
  EXPECT_EQ(r.peak_live_sessions, 20);
  EXPECT_EQ(*r.admission.n_star, 20);
  EXPECT_FALSE(r.admission.adaptive);
}

TEST(Admission, NoneAdmitsEveryone) {
  const RunResult r = simulate(testing::moshi(50, "windowed"));
  EXPECT_EQ(r.sessions_rejected, 0);
  EXPECT_EQ(r.peak_live_sessions, 50);
  EXPECT_FALSE(r.admission.capped);
  EXPECT_FALSE(r.admission.n_star);
}

TEST(Admission, RejectionsDoNotShiftOtherStreams) {
  // Durations are drawn per caller whether admitted or not: a cap changes who is admitted, never
  // the draw sequence. With an exponential duration, the first 10 callers' runs agree.
  const std::vector<std::string> common = {
      "workload.duration={\"type\":\"exponential\",\"mean_s\":60}"};
  auto capped = common;
  capped.push_back("admission={\"type\":\"static\",\"cap\":10}");
  const RunResult a = simulate(testing::moshi(10, "windowed", common));
  const RunResult b = simulate(testing::moshi(10, "windowed", capped));
  EXPECT_EQ(a.frames_due, b.frames_due);
  EXPECT_EQ(a.sessions_departed, b.sessions_departed);
}

TEST(Admission, AimdRulesOnOneInterval) {
  AimdParams c;
  c.loop.initial_cap = 100;
  Aimd m(c, 0.010);
  ControlSignal sig;
  sig.frames = 10;
  sig.live = 100;
  sig.latency_s = 0.005;  // below 0.8 x 10 ms: +2 (no forecast: the observation)
  m.on_interval(sig);
  EXPECT_EQ(m.cap(), 102);
  sig.latency_s = 0.0085;  // between the fractions: hold
  m.on_interval(sig);
  EXPECT_EQ(m.cap(), 102);
  sig.latency_s = 0.0095;  // above 0.9 x 10 ms: x0.9
  m.on_interval(sig);
  EXPECT_EQ(m.cap(), 91);
  sig.latency_s = std::numeric_limits<double>::infinity();  // censored: congestion, but the cap
  m.on_interval(sig);                                       // is below the 100 live: no windup
  EXPECT_EQ(m.cap(), 91);
  sig.live = 80;  // departures took the live count under the cap: the cut applies again
  m.on_interval(sig);
  EXPECT_EQ(m.cap(), 82);  // 91.8 x 0.9: the cap is kept as a real number
  sig.frames = 0;          // nothing observed: hold
  m.on_interval(sig);
  EXPECT_EQ(m.cap(), 82);
  sig.frames = 10;
  sig.latency_s = 0.001;
  sig.forecast = [] { return 0.0081; };  // headroom now, but settled past 0.8 x 10 ms: hold
  m.on_interval(sig);
  EXPECT_EQ(m.cap(), 82);
  sig.forecast = [] { return 0.0079; };  // settled under it: +2
  m.on_interval(sig);
  EXPECT_EQ(m.cap(), 84);
  sig.live = 10;  // the cap is not in use: no growth
  m.on_interval(sig);
  EXPECT_EQ(m.cap(), 84);
}

// The memory guard composes with any controller: windowed KV bounds each session's blocks, so no
// controller, however eager, admits past the memory cap, and the pool never runs out.
TEST(Admission, MemoryGuardNeverAdmitsPastTheMemoryCap) {
  for (const char* ctl : {"aimd", "static", "gradient"}) {
    // W = 1920: a memory cap of 106 sessions; AIMD's signal alone admitted 170 and stalled.
    std::vector<std::string> sets = {"kv_policy.window_tokens=1920",
                                     std::string("admission.type=") + ctl,
                                     "admission.cap=500",
                                     "admission.increase=20",
                                     "admission.low_fraction=9",
                                     "admission.high_fraction=10",
                                     "horizon_s=300"};
    const Scenario s = contrast("windowed", sets);
    const auto p = predict_first_order(s);
    const RunResult r = simulate(s);
    ASSERT_TRUE(r.admission.memory_cap) << ctl;
    EXPECT_EQ(*r.admission.memory_cap, *p.memory_cap_sessions) << ctl;
    EXPECT_LE(r.peak_live_sessions, *p.memory_cap_sessions) << ctl;
    EXPECT_EQ(r.peak_live_sessions, *p.memory_cap_sessions) << ctl;  // and it fills up to it
    EXPECT_GT(r.admission.rejected_by_memory, 0) << ctl;
    EXPECT_FALSE(r.first_stall_s.has_value()) << ctl;
    // Off, the same eager controller runs the pool out.
    sets.push_back("admission.memory_guard=off");
    const RunResult off = simulate(contrast("windowed", sets));
    EXPECT_GT(off.peak_live_sessions, *p.memory_cap_sessions) << ctl;
    EXPECT_TRUE(off.first_stall_s.has_value()) << ctl;
  }
}

// Unbounded KV with known call lengths: the guard reserves each call's KV at hang-up, so AIMD
// cannot over-admit into the cliff; with random call lengths it cannot be asked to.
TEST(Admission, MemoryGuardBoundsUnboundedCallsOfKnownLength) {
  const Scenario s = contrast("unbounded", {"admission.memory_guard=on"});
  const RunResult r = simulate(s);
  EXPECT_FALSE(r.first_stall_s.has_value());
  EXPECT_GT(r.admission.rejected_by_memory, 0);
  EXPECT_THROW(
      contrast("unbounded", {"admission.memory_guard=on",
                             "workload.duration={\"type\":\"exponential\",\"mean_s\":600}"}),
      ConfigError);
}

TEST(Admission, GradientLimitsTheWindowedScenarioWithoutStalling) {
  const RunResult r = simulate(contrast("windowed", {"admission.type=gradient"}));
  EXPECT_TRUE(r.admission.adaptive);
  EXPECT_GT(r.sessions_rejected, 0);
  ASSERT_TRUE(r.admission.n_star);
  EXPECT_GE(*r.admission.n_star, 1);
}

TEST(Admission, TrueSignalIsAccepted) {
  const RunResult r = simulate(contrast("windowed", {"admission.signal=\"true\""}));
  EXPECT_FALSE(r.crashed());
  EXPECT_GT(*r.admission.n_star, 100);
}

Scenario load_with(std::vector<std::string> sets) { return testing::moshi(1, "windowed", sets); }

TEST(Admission, ConfigIsValidatedAndRoundTrips) {
  EXPECT_THROW(load_with({"admission.type=bogus"}), ConfigError);
  EXPECT_THROW(load_with({"admission.join=bogus"}), ConfigError);
  EXPECT_THROW(load_with({"admission.type=static"}), ConfigError);  // no cap
  EXPECT_THROW(load_with({"admission.typo=1"}), ConfigError);
  EXPECT_THROW(load_with({"admission.type=aimd", "admission.low_fraction=0.95"}), ConfigError);
  EXPECT_THROW(load_with({"admission.type=aimd", "admission.decrease_factor=1"}), ConfigError);
  EXPECT_THROW(load_with({"admission.type=aimd", "admission.signal=fake"}), ConfigError);
  for (const char* type : {"none", "aimd", "gradient"}) {
    const Scenario s = testing::moshi(1, "windowed", {std::string("admission.type=") + type});
    const auto j = to_json(s);
    EXPECT_EQ(to_json(parse_scenario(j, "round trip")), j) << type;
  }
  const Scenario st = testing::moshi(1, "windowed", {"admission={\"type\":\"static\",\"cap\":7}"});
  EXPECT_EQ(to_json(parse_scenario(to_json(st), "round trip")), to_json(st));
}

}  // namespace
}  // namespace metronome
