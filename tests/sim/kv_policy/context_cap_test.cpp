// kv_policy.type = "context_cap": a call ends when its context reaches the cap, after
// floor((cap - prompt) / tokens per frame) frames, and the summary counts those ends apart from
// hang-ups; a cap no call reaches changes nothing else.
#include "sim/kv_policy/context_cap.h"

#include <gtest/gtest.h>

#include "base/config_error.h"
#include "sim/analysis/report.h"
#include "sim/closed_form/first_order.h"
#include "sim/pool/pool_sizing.h"
#include "tests/sim/kv_policy/kv_policy_test_util.h"

namespace metronome {
namespace {

using testing::callers_under;

TEST(ContextCap, ACappedCallServesCapOverTokensPerFrameFrames) {
  // 3,000-frame calls of 5 tokens a frame capped at 1,000 tokens: 200 frames, then the call ends
  // (16 s of 80 ms frames); with a prompt of 23, floor(977 / 5) = 195.
  for (const auto& [prompt, frames] : {std::pair{0, 200}, std::pair{23, 195}}) {
    const Scenario s = callers_under(3, R"({"type":"context_cap","cap_tokens":1000})", 5, prompt);
    const RunResult r = simulate(s);
    EXPECT_EQ(r.frames_due, 3 * frames) << prompt;
    EXPECT_EQ(r.frames_served, 3 * frames) << prompt;
    EXPECT_EQ(r.sessions_departed, 3);
    EXPECT_EQ(r.sessions_context_capped, 3);
    // It held its whole context, at most ceil(context_at(frames) / 16) blocks.
    EXPECT_EQ(r.max_resident_blocks_per_session, kv::ceil_div(prompt + 5 * frames, 16));
    EXPECT_EQ(max_blocks_per_session(s), kv::ceil_div(prompt + 5 * frames, 16));
    EXPECT_EQ(run_result_json(r)["sessions_context_capped"], 3);
  }
}

TEST(ContextCap, CapsAndHangUpsAreCountedApart) {
  // Poisson callers with exponential lengths (mean 20 s) and a cap at 16 s of context: a call
  // either hangs up first or the cap ends it. The first-order schedule ends the same calls, so
  // predict's peak concurrency is the engine's.
  const std::vector<std::string> load = {
      "workload.arrival={\"type\":\"poisson\",\"rate_per_s\":2}",
      "workload.duration={\"type\":\"exponential\",\"mean_s\":20}", "horizon_s=600"};
  const Scenario s = callers_under(0, R"({"type":"context_cap","cap_tokens":400})", 2, 0, load);
  const RunResult r = simulate(s);
  ASSERT_TRUE(r.sessions_context_capped.has_value());
  // P(length > 16 s) = exp(-0.8) = 0.45 of about 1,200 calls.
  EXPECT_GT(*r.sessions_context_capped, 450);
  EXPECT_LT(*r.sessions_context_capped, 640);
  EXPECT_GT(r.sessions_departed - *r.sessions_context_capped, 560);
  EXPECT_EQ(predict_first_order(s).peak_concurrent_sessions, r.peak_live_sessions);
  // Without the cap the calls run longer: more at once.
  const RunResult u = simulate(callers_under(0, R"({"type":"unbounded"})", 2, 0, load));
  EXPECT_GT(u.peak_live_sessions, r.peak_live_sessions);
  EXPECT_FALSE(u.sessions_context_capped.has_value());
  EXPECT_FALSE(run_result_json(u).contains("sessions_context_capped"));
}

TEST(ContextCap, ACapNoCallReachesIsUnbounded) {
  // Poisson callers on a pool that fills; a cap of 6100 tokens (3045 frames of 2 after a prompt of
  // 10) is past the run's 3000 frames, and its bound (382 blocks) fits the pool.
  const std::vector<std::string> load = {
      "workload.arrival={\"type\":\"poisson\",\"rate_per_s\":3}",
      "workload.duration={\"type\":\"exponential\",\"mean_s\":40}", "engine.num_blocks=900"};
  const RunResult a = simulate(callers_under(0, R"({"type":"unbounded"})", 2, 10, load));
  const RunResult b =
      simulate(callers_under(0, R"({"type":"context_cap","cap_tokens":6100})", 2, 10, load));
  EXPECT_TRUE(a.first_stall_s.has_value());
  EXPECT_EQ(b.sessions_context_capped, 0);
  nlohmann::json jb = run_result_json(b);
  jb.erase("sessions_context_capped");
  EXPECT_EQ(run_result_json(a).dump(), jb.dump());
}

TEST(ContextCap, TheCapMustHoldAFrame) {
  // A frame of 5 tokens after a prompt of 8: the cap must be at least 13.
  for (const std::string cap : {"12", "0", "-1", "\"big\""}) {
    try {
      callers_under(1, R"({"type":"context_cap","cap_tokens":)" + cap + "}", 5, 8);
      FAIL() << "accepted cap_tokens " << cap;
    } catch (const ConfigError& e) {
      EXPECT_NE(std::string(e.what()).find("kv_policy.cap_tokens"), std::string::npos) << e.what();
    }
  }
  EXPECT_NO_THROW(callers_under(1, R"({"type":"context_cap","cap_tokens":13})", 5, 8));
}

}  // namespace
}  // namespace metronome
