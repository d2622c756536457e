// kv_policy.type = "periodic_reset": a caller's blocks climb for K frames and all go back at once,
// so its peak is what it holds while frame K - 1 is served; a reset that never comes within the
// call changes nothing.
#include "sim/kv_policy/periodic_reset.h"

#include <gtest/gtest.h>

#include "base/config_error.h"
#include "sim/analysis/report.h"
#include "sim/pool/pool_sizing.h"
#include "tests/sim/kv_policy/kv_policy_test_util.h"

namespace metronome {
namespace {

using testing::callers_under;
using testing::PoolAfterSteps;

TEST(PeriodicReset, PoolClimbsForKFramesThenEmpties) {
  // K = 7 frames of 5 tokens in blocks of 16, no prompt: after frame m the caller holds the
  // ((m + 1) mod K) x 5 tokens appended since the last reset.
  const Scenario s = callers_under(1, R"({"type":"periodic_reset","reset_frames":7})", 5);
  PoolAfterSteps steps;
  const RunResult r = simulate(s, &steps);
  ASSERT_EQ(static_cast<int64_t>(steps.used.size()), r.frames_served);
  ASSERT_EQ(r.frames_served, 3000);
  for (size_t m = 0; m < steps.used.size(); ++m) {
    ASSERT_EQ(steps.used[m], kv::ceil_div(static_cast<int64_t>((m + 1) % 7) * 5, 16)) << m;
  }
  // The peak: frame K - 1 served, ceil(7 x 5 / 16) = 3 blocks; between steps at most frame K - 2's
  // ceil(6 x 5 / 16) = 2.
  EXPECT_EQ(r.peak_pool_blocks, 3);
  EXPECT_EQ(r.max_resident_blocks_per_session, 2);
  EXPECT_EQ(max_blocks_per_session(s), 3);
}

TEST(PeriodicReset, PeakIsTheBlocksAtFrameKMinusOneWithThePrompt) {
  // 40 callers at once, K = 25, 3 tokens a frame after a prompt of 20: the first cycle is the
  // largest, ceil((20 + 25 x 3) / 16) = 6 blocks each at frame 24; later cycles forget the prompt.
  const Scenario s = callers_under(40, R"({"type":"periodic_reset","reset_frames":25})", 3, 20);
  const RunResult r = simulate(s);
  EXPECT_EQ(max_blocks_per_session(s), 6);
  EXPECT_EQ(r.peak_pool_blocks, 40 * 6);
  EXPECT_EQ(r.max_resident_blocks_per_session, kv::ceil_div(20 + 24 * 3, 16));
  EXPECT_EQ(r.frames_served, 40 * 3000);
  EXPECT_EQ(r.first_stall_s, std::nullopt);
}

TEST(PeriodicReset, AResetBeyondTheCallIsUnbounded) {
  // Poisson callers who come and go, on a pool that fills: a reset after 3100 frames never comes
  // within the 240 s (3000 frames) of the run, and its bound (389 blocks) fits the pool.
  const std::vector<std::string> load = {
      "workload.arrival={\"type\":\"poisson\",\"rate_per_s\":3}",
      "workload.duration={\"type\":\"exponential\",\"mean_s\":40}", "engine.num_blocks=900"};
  const RunResult a = simulate(callers_under(0, R"({"type":"unbounded"})", 2, 10, load));
  const RunResult b =
      simulate(callers_under(0, R"({"type":"periodic_reset","reset_frames":3100})", 2, 10, load));
  EXPECT_TRUE(a.first_stall_s.has_value());
  EXPECT_EQ(run_result_json(a).dump(), run_result_json(b).dump());
}

TEST(PeriodicReset, ResetFramesMustBeAtLeastOne) {
  for (const std::string k : {"0", "-3", "1.5", "\"7\""}) {
    try {
      callers_under(1, R"({"type":"periodic_reset","reset_frames":)" + k + "}", 5);
      FAIL() << "accepted reset_frames " << k;
    } catch (const ConfigError& e) {
      EXPECT_NE(std::string(e.what()).find("kv_policy.reset_frames"), std::string::npos)
          << e.what();
    }
  }
  // Frames that append no KV cannot be counted by their context.
  try {
    callers_under(1, R"({"type":"periodic_reset","reset_frames":3})", 0);
    FAIL() << "accepted frames without KV";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("kv_policy.reset_frames"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace metronome
