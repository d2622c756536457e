// The real-time engine's accounting on a fake clock: where it stalls, blocks conserved and held as
// kv_window.h says, departures, preemption, refusals; and agreement with the simulator's counts.
#include "replay/realtime_engine.h"

#include <gtest/gtest.h>

#include <cmath>

#include "base/config_error.h"
#include "replay/replay.h"
#include "sim/engine/engine.h"
#include "sim/pool/pool_sizing.h"
#include "tests/replay/fake.h"

namespace metronome::replay {
namespace {

using testing::FakeBackend;
using testing::FakeClock;

const std::string kDir = std::string(METRONOME_SOURCE_DIR) + "/scenarios/replay/";

Scenario load(const std::string& name, std::vector<std::string> sets = {}) {
  return load_scenario(kDir + name, sets);
}

struct FakeRun {
  RealtimeResult r;
  std::vector<PassBatch> passes;
};

FakeRun run_fake(const Scenario& s, Time per_pass = 1'000'000) {
  FakeClock clock;
  FakeBackend backend(clock, s.kv_policy.window(), static_cast<int32_t>(s.engine.block_size),
                      per_pass);
  RealtimeEngine engine(s, backend, clock);
  FakeRun out{engine.run(), backend.passes};
  return out;
}

TEST(RealtimeEngine, UnboundedStallsAtTheFrameTheBlockCountGives) {
  const Scenario s = load("tiny_cpu_unbounded.json");
  const FakeRun run = run_fake(s);
  const RealtimeResult& r = run.r;
  // 4 sessions x 6 tokens a frame, 16-token blocks, 64 blocks: frame k needs ceil(6 (k + 1) / 16)
  // blocks per session, more than 16 first at k = 42.
  ASSERT_TRUE(r.run.crashed());
  EXPECT_EQ(*r.first_stall_frame, 42);
  EXPECT_DOUBLE_EQ(*r.first_stall_release_s, 4.2);
  EXPECT_NEAR(*r.run.first_stall_s, 4.2, 1e-9);  // the fake engine keeps up: it tries at release
  EXPECT_EQ(r.run.peak_pool_blocks, 64);
  // 61 frames released by t = 6 s per session, 42 served. The one released at 6 s, unanswered,
  // is not due: its silence deadline (6.1 s) is past the horizon. The other 18 are silent.
  EXPECT_EQ(r.run.frames_due, 4 * 60);
  EXPECT_EQ(r.run.frames_served, 4 * 42);
  EXPECT_EQ(r.run.frames_silent, 4 * 18);
  EXPECT_EQ(r.run.true_latency.censored(), 4 * 18);
  for (const FrameRecord& f : r.frames) {
    EXPECT_EQ(f.served == kNever, f.frame >= 42) << "session " << f.session << " frame " << f.frame;
  }
  // After the stall no pass runs: everyone is blocked, and a stalled engine produces nothing.
  for (const StepRecord& st : r.steps) EXPECT_LE(st.start, from_seconds(4.2));

  // The simulator on the same scenario: same outcome, same frame counts, same saturation time.
  const RunResult sim = simulate(s);
  EXPECT_TRUE(sim.crashed());
  EXPECT_DOUBLE_EQ(*sim.first_stall_s, *r.first_stall_release_s);
  EXPECT_EQ(sim.frames_due, r.run.frames_due);
  EXPECT_EQ(sim.frames_served, r.run.frames_served);
  EXPECT_EQ(sim.frames_silent, r.run.frames_silent);
  EXPECT_EQ(sim.peak_pool_blocks, r.run.peak_pool_blocks);
}

// The measured time series uses the simulator's interval rules: on a run whose timing matches at
// every sample instant (steps end long before the next release), the series are equal.
TEST(RealtimeEngine, MeasuredSamplesFollowTheSimulatorsIntervals) {
  const Scenario s = load("tiny_cpu_unbounded.json");
  const FakeRun run = run_fake(s);
  const std::vector<Sample>& m = run.r.samples;
  SampleCollector sim;
  simulate(s, &sim);
  ASSERT_EQ(m.size(), sim.samples.size());
  ASSERT_EQ(m.size(), 30u);  // 6 s every 0.2 s
  int64_t due = 0;
  for (size_t i = 0; i < m.size(); ++i) {
    SCOPED_TRACE("sample at " + std::to_string(m[i].t_s));
    EXPECT_DOUBLE_EQ(m[i].t_s, sim.samples[i].t_s);
    EXPECT_EQ(m[i].pool_used_blocks, sim.samples[i].pool_used_blocks);
    EXPECT_EQ(m[i].live_sessions, sim.samples[i].live_sessions);
    EXPECT_EQ(m[i].stalled_sessions, sim.samples[i].stalled_sessions);
    EXPECT_EQ(m[i].frames_due, sim.samples[i].frames_due);
    EXPECT_EQ(m[i].frames_served, sim.samples[i].frames_served);
    EXPECT_DOUBLE_EQ(m[i].silent_fraction, sim.samples[i].silent_fraction);
    due += m[i].frames_due;
  }
  EXPECT_EQ(m.back().pool_used_blocks, 64);
  EXPECT_DOUBLE_EQ(m.back().silent_fraction, 1.0);
  // Frames whose silence deadline (release + 0.1 s) falls in (0, 6 s]: releases 0 .. 5.9 s.
  EXPECT_EQ(due, 4 * 60);
}

// Samples every 0.15 s against frames every 0.1 s with 0.1 s of silence_after_s: a frame served
// a few ms after its release at 0.1 s is due, and booked as served, in the interval of its
// deadline (0.15, 0.3], not in the one its output came in. The measured series is the ledger's,
// so it books it there as the simulator does (a count by the instant of output did not).
TEST(RealtimeEngine, MeasuredSamplesBookAFrameInItsDeadlinesInterval) {
  const Scenario s = load("tiny_cpu_unbounded.json", {"output.sample_period_s=0.15"});
  const FakeRun run = run_fake(s);
  const std::vector<Sample>& m = run.r.samples;
  const Time period = from_seconds(0.15), pad = from_seconds(0.1);
  int64_t elsewhere = 0;  // frames whose output came in an earlier interval than their deadline
  for (const FrameRecord& f : run.r.frames) {
    if (f.served != kNever && (f.served - 1) / period != (f.release + pad - 1) / period) {
      ++elsewhere;
    }
  }
  EXPECT_EQ(elsewhere, 4 * 42 / 3);  // the 42 frames served per caller released at 0.1 s + 0.3 k
  // Both series come out of FrameLedger, so they also meet an outside count from the frame
  // records: per interval, the frames whose silence deadline falls in it, and of those the ones
  // answered by it.
  std::vector<int64_t> due(40), answered(40);
  for (const FrameRecord& f : run.r.frames) {
    const auto k = static_cast<size_t>((f.release + pad - 1) / period);
    if (k >= due.size()) continue;
    ++due[k];
    if (f.served != kNever && f.served - f.release <= pad) ++answered[k];
  }
  SampleCollector sim;
  simulate(s, &sim);
  ASSERT_EQ(m.size(), sim.samples.size());
  ASSERT_EQ(m.size(), 40u);  // 6 s every 0.15 s
  for (size_t i = 0; i < m.size(); ++i) {
    SCOPED_TRACE("sample at " + std::to_string(m[i].t_s));
    EXPECT_EQ(m[i].frames_due, sim.samples[i].frames_due);
    EXPECT_EQ(m[i].frames_due, due[i]);
    EXPECT_EQ(m[i].frames_served, sim.samples[i].frames_served);
    EXPECT_EQ(m[i].frames_served, answered[i]);
    EXPECT_LE(m[i].frames_served, m[i].frames_due);
    EXPECT_EQ(m[i].frames_on_time, sim.samples[i].frames_on_time);
    EXPECT_EQ(m[i].pool_used_blocks, sim.samples[i].pool_used_blocks);
    EXPECT_DOUBLE_EQ(m[i].silent_fraction, sim.samples[i].silent_fraction);
  }
}

TEST(RealtimeEngine, PassesFollowTheSimulatorsShape) {
  const Scenario s = load("tiny_cpu_unbounded.json", {"horizon_s=0.35"});
  const FakeRun run = run_fake(s);
  // Frames at 0, 0.1, 0.2, 0.3 s: per step an ingest pass (4 sessions x 4 tokens), one decode pass
  // (4 x 1) and the write-only pass of the last output token's KV (4 x 1).
  ASSERT_EQ(run.passes.size(), 4u * 3u);
  for (size_t i = 0; i < run.passes.size(); i += 3) {
    const int32_t ctx = static_cast<int32_t>(i / 3) * 6;
    EXPECT_EQ(run.passes[i].total_q(), 16);
    EXPECT_TRUE(run.passes[i].attend);
    EXPECT_EQ(run.passes[i].seq_lens[0], ctx + 4);
    EXPECT_EQ(run.passes[i + 1].total_q(), 4);
    EXPECT_EQ(run.passes[i + 1].seq_lens[0], ctx + 5);
    EXPECT_EQ(run.passes[i + 2].total_q(), 4);
    EXPECT_FALSE(run.passes[i + 2].attend);
    EXPECT_EQ(run.passes[i + 2].seq_lens[0], ctx + 6);
  }
  // Real block ids: the four sessions' first blocks are distinct.
  const auto& t = run.passes[0].block_tables;
  const int32_t mb = run.passes[0].max_blocks;
  std::vector<int32_t> first{t[0], t[mb], t[2 * mb], t[3 * mb]};
  std::sort(first.begin(), first.end());
  EXPECT_EQ(std::unique(first.begin(), first.end()), first.end());
}

TEST(RealtimeEngine, WindowedHoldsWhatKvWindowSaysAndConservesBlocks) {
  const Scenario s = load("tiny_cpu_windowed.json");
  const kv::Window w = s.kv_policy.window();
  const FakeRun run = run_fake(s);
  const RealtimeResult& r = run.r;
  EXPECT_FALSE(r.run.crashed());
  // Every frame is served but the one released at the horizon itself (t = 6 s), whose step ends
  // after the run and whose silence deadline is past it: not due, so 60 due and 60 served per
  // session, none silent (it was counted silent: a healthy run read 1.6% silent).
  EXPECT_EQ(r.run.frames_served, 4 * 60);
  EXPECT_EQ(r.run.frames_due, 4 * 60);
  EXPECT_EQ(r.run.frames_silent, 0);
  int64_t max_resident = 0, max_step = 0;
  for (int64_t k = 0; k <= 61; ++k) {
    max_resident = std::max(max_resident, kv::resident_blocks(6 * k, w, 16));
    max_step = std::max(max_step, kv::step_blocks(6 * k, 6, w, 16));
  }
  EXPECT_EQ(r.run.max_resident_blocks_per_session, max_resident);
  EXPECT_LE(max_resident, kv::ceil_div(16, 16) + kv::ceil_div(64, 16) + 1);  // sinks + window
  EXPECT_EQ(r.run.peak_pool_blocks, 4 * max_step);
  EXPECT_EQ(r.run.blocks_allocated - r.run.blocks_released, r.run.final_pool_blocks);
  // The last step (frame 60) was still running at the horizon: its blocks are held.
  EXPECT_EQ(r.run.final_pool_blocks, 4 * kv::step_blocks(6 * 60, 6, w, 16));
  for (const PoolPoint& p : r.pool) EXPECT_LE(p.used_blocks, 4 * max_step);
  const RunResult sim = simulate(s);
  EXPECT_FALSE(sim.crashed());
  EXPECT_EQ(sim.frames_served, r.run.frames_served);
  EXPECT_EQ(sim.frames_silent, r.run.frames_silent);
  EXPECT_EQ(sim.peak_pool_blocks, r.run.peak_pool_blocks);
  EXPECT_EQ(sim.max_resident_blocks_per_session, r.run.max_resident_blocks_per_session);
}

TEST(RealtimeEngine, DeparturesReturnEveryBlock) {
  const Scenario s = load("tiny_cpu_unbounded.json", {"workload.duration.seconds=2"});
  const FakeRun run = run_fake(s);
  EXPECT_FALSE(run.r.run.crashed());
  EXPECT_EQ(run.r.run.sessions_departed, 4);
  EXPECT_EQ(run.r.run.final_pool_blocks, 0);
  EXPECT_EQ(run.r.run.blocks_allocated, run.r.run.blocks_released);
  EXPECT_EQ(run.r.run.frames_due, 4 * 20);
  EXPECT_EQ(run.r.run.frames_served, 4 * 20);
}

TEST(RealtimeEngine, PreemptRecomputeEvictsTheNewestAndRecomputesItsHistory) {
  const Scenario s = load("tiny_cpu_unbounded.json", {"engine.exhaustion=preempt_recompute",
                                                      "workload.arrival.type=fixed_interval",
                                                      "workload.arrival.interval_s=0.3"});
  const FakeRun run = run_fake(s);
  const RealtimeResult& r = run.r;
  ASSERT_TRUE(r.run.crashed());
  EXPECT_GT(r.run.preemptions, 0);
  ASSERT_TRUE(r.run.first_preempt_s.has_value());
  // A resumed session's ingest pass recomputes its whole history: q_len = ctx + 4 > one frame.
  bool recomputed = false;
  for (const PassBatch& p : run.passes) {
    for (int32_t i = 0; i < p.sessions(); ++i) {
      const int32_t q = p.q_start[i + 1] - p.q_start[i];
      if (p.attend && q > 6) {
        recomputed = true;
        EXPECT_EQ(q, p.seq_lens[i]);  // from position 0
      }
    }
  }
  EXPECT_TRUE(recomputed);
  EXPECT_EQ(r.run.blocks_allocated - r.run.blocks_released, r.run.final_pool_blocks);
  for (const PoolPoint& p : r.pool) EXPECT_LE(p.used_blocks, 64);
  const RunResult sim = simulate(s);
  EXPECT_TRUE(sim.crashed());
  EXPECT_NEAR(*sim.first_preempt_s, *r.run.first_preempt_s, 0.01);
}

TEST(RealtimeEngine, StaticCapRejectsCallers) {
  const Scenario s =
      load("tiny_cpu_windowed.json", {"admission.type=static", "admission.cap=2", "horizon_s=1"});
  const FakeRun run = run_fake(s);
  EXPECT_EQ(run.r.run.sessions_arrived, 4);
  EXPECT_EQ(run.r.run.sessions_rejected, 2);
  EXPECT_EQ(run.r.run.frames_due, 2 * 10);  // released by 0.9 s: the 1 s frame's deadline is after
}

TEST(RealtimeEngine, RefusesWhatItDoesNotReplay) {
  FakeClock clock;
  FakeBackend backend(clock, {}, 16, 1);
  auto refuses = [&](std::vector<std::string> sets, const std::string& what) {
    const Scenario s = load("tiny_cpu_windowed.json", sets);
    try {
      RealtimeEngine e(s, backend, clock);
      ADD_FAILURE() << "accepted: " << what;
    } catch (const ConfigError& e) {
      EXPECT_NE(std::string(e.what()).find(what), std::string::npos) << e.what();
    }
  };
  refuses({"engine.exhaustion=preempt_recompute"}, "preempt_recompute with windowed KV");
  refuses({"admission.type=aimd"}, "admission.type");
  refuses({"workload.frame_jitter_s=0.01"}, "frame_jitter_s");
  refuses({"workload.kv_tokens_per_frame=2"}, "kv_tokens_per_frame");
}

}  // namespace
}  // namespace metronome::replay
