// kv_policy.type = "segment_eviction": a caller's blocks are a saw-tooth between (N - 1) G and
// (N - 1) G + r_max tokens' worth, dropping a whole segment at a time, and the policy's bounds are
// the most any frame reaches.
#include "sim/kv_policy/segment_eviction.h"

#include <gtest/gtest.h>

#include <algorithm>

#include "base/config_error.h"
#include "sim/kv_policy/kv_rule.h"
#include "sim/kv_policy/periodic_reset.h"
#include "sim/pool/pool_sizing.h"
#include "tests/sim/kv_policy/kv_policy_test_util.h"

namespace metronome {
namespace {

using testing::callers_under;
using testing::PoolAfterSteps;

TEST(SegmentEviction, PoolIsASawToothBetweenItsBounds) {
  // Segments of G = 64 tokens (4 blocks of 16), N = 3 kept, 5 tokens a frame, no prompt: after
  // frame m the caller has ctx = 5 (m + 1) tokens and holds those from (ctx / 64 - 2) x 64 on.
  const Scenario s =
      callers_under(1, R"({"type":"segment_eviction","segment_tokens":64,"segments":3})", 5);
  PoolAfterSteps steps;
  const RunResult r = simulate(s, &steps);
  ASSERT_EQ(static_cast<int64_t>(steps.used.size()), 3000);
  int64_t low = INT64_MAX, high = 0, drops = 0;
  for (size_t m = 0; m < steps.used.size(); ++m) {
    const int64_t ctx = 5 * static_cast<int64_t>(m + 1);
    const int64_t from = std::max<int64_t>(0, (ctx / 64 - 2) * 64);
    ASSERT_EQ(steps.used[m], kv::ceil_div(ctx - from, 16)) << m;
    if (m > 0 && steps.used[m] < steps.used[m - 1]) {
      // A segment's 4 blocks went back, and the frame's 5 tokens took at most one new block.
      const int64_t fell = steps.used[m - 1] - steps.used[m];
      EXPECT_TRUE(fell == 4 || fell == 3) << m;
      ++drops;
    }
    if (ctx >= 128) {
      low = std::min(low, steps.used[m]);
      high = std::max(high, steps.used[m]);
    }
  }
  // (N - 1) G = 128 tokens is 8 blocks; r_max = 64 - gcd(5, 64) = 63, so the top is
  // ceil((128 + 63) / 16) = 12 blocks; a dropped segment every 64 / 5 frames.
  EXPECT_EQ(low, 8);
  EXPECT_EQ(high, 12);
  EXPECT_EQ(drops, 15000 / 64 - 2);
  EXPECT_EQ(r.max_resident_blocks_per_session, 12);
  // While a frame is served: the top and the frame's 5 tokens, ceil(196 / 16) = 13.
  EXPECT_EQ(r.peak_pool_blocks, 13);
  EXPECT_EQ(max_blocks_per_session(s), 13);
}

// The bounds the policies state in closed form are the most a frame reaches: a scan of every frame
// over several periods of the segment (or the reset) and of the block alignment.
TEST(SegmentEviction, ClosedFormBoundsEqualAScan) {
  int cases = 0;
  for (int64_t per_frame : {1, 3, 5, 16, 40, 100}) {
    for (int64_t prompt : {0, 7, 33, 500}) {
      for (int64_t bs : {1, 16}) {
        const kv::FrameGrowth g{per_frame, prompt};
        auto scan = [&](const KvPolicy& p, int64_t frames) {
          const KvRule rule(p, g, bs);
          int64_t step = 0, resident = 0;
          for (int64_t m = 0; m < frames; ++m) {
            step = std::max(step, rule.step_blocks_at(m));
            resident = std::max(resident, rule.resident_tokens(g.context_at(m + 1)));
          }
          EXPECT_EQ(step, p.max_step_blocks(g, bs))
              << p.describe() << " n " << per_frame << " prompt " << prompt << " bs " << bs;
          EXPECT_EQ(resident, p.max_resident_tokens(g))
              << p.describe() << " n " << per_frame << " prompt " << prompt << " bs " << bs;
          ++cases;
        };
        for (int64_t segment : {16, 48, 64, 160}) {
          if (segment % bs != 0) continue;
          for (int64_t kept : {1, 2, 5}) {
            const SegmentEvictionKv p(segment, kept);
            scan(p, (prompt + kept * segment) / per_frame + 4 * segment + 8);
          }
        }
        for (int64_t k : {1, 2, 9, 40}) scan(PeriodicResetKv(k), 3 * k + 2);
      }
    }
  }
  EXPECT_GT(cases, 300);
}

TEST(SegmentEviction, ASegmentIsWholeBlocks) {
  for (const std::string bad :
       {R"("segment_tokens":40,"segments":2)", R"("segment_tokens":8,"segments":2)",
        R"("segment_tokens":0,"segments":2)"}) {
    try {
      callers_under(1, R"({"type":"segment_eviction",)" + bad + "}", 5);
      FAIL() << "accepted " << bad;
    } catch (const ConfigError& e) {
      EXPECT_NE(std::string(e.what()).find("kv_policy.segment_tokens"), std::string::npos)
          << e.what();
    }
  }
  try {
    callers_under(1, R"({"type":"segment_eviction","segment_tokens":64,"segments":0})", 5);
    FAIL() << "accepted segments 0";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("kv_policy.segments"), std::string::npos) << e.what();
  }
  // vLLM's scheduler runs windows only.
  try {
    callers_under(1, R"({"type":"segment_eviction","segment_tokens":64,"segments":2})", 5, 0,
                  {"engine.scheduler=vllm_v1"});
    FAIL() << "accepted vllm_v1";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("kv_policy.type"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace metronome
