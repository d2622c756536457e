// KvRule::most_blocks_through, which sizes the memory guard's reservation, capacity's memory cap
// and its probes' pools, against the most blocks a session holds while any of its first F frames
// is served, found by walking every frame: for every policy, block size and growth (a prompt
// first), short calls (a window that never fills) and long ones (past resets and evictions).
#include <gtest/gtest.h>

#include <algorithm>
#include <memory>
#include <vector>

#include "sim/kv_policy/context_cap.h"
#include "sim/kv_policy/kv_rule.h"
#include "sim/kv_policy/periodic_reset.h"
#include "sim/kv_policy/segment_eviction.h"
#include "sim/kv_policy/unbounded.h"
#include "sim/kv_policy/windowed.h"

namespace metronome {
namespace {

TEST(KvRule, MostBlocksThroughIsTheMostAnyFrameHolds) {
  const std::vector<std::shared_ptr<const KvPolicy>> policies = {
      std::make_shared<UnboundedKv>(),           std::make_shared<WindowedKv>(480, 16),
      std::make_shared<WindowedKv>(7, 0),        std::make_shared<WindowedKv>(3, 5),
      std::make_shared<PeriodicResetKv>(25),     std::make_shared<ContextCapKv>(300),
      std::make_shared<SegmentEvictionKv>(40, 3)};
  int64_t short_of_bound = 0;  // cases where a short call holds less than the policy's bound
  int64_t over = 0;            // cases between: the bound, above the walk's most
  for (const auto& p : policies) {
    for (const kv::FrameGrowth g :
         {kv::FrameGrowth{1, 0}, kv::FrameGrowth{3, 40}, kv::FrameGrowth{17, 5}}) {
      for (const int64_t bs : {1, 12, 16, 32}) {
        if (!p->check(g, bs).empty()) continue;  // a scenario refuses it (segments of whole blocks)
        const KvRule rule(*p, g, kv::BlockSize(bs));
        const int64_t frames = rule.cap_frames().value_or(400);
        const int64_t bound = p->bounded() ? p->max_step_blocks(g, kv::BlockSize(bs)) : 0;
        int64_t most = 0;
        bool all_held = true;  // no frame so far has dropped a token
        for (int64_t f = 1; f <= frames; ++f) {
          const int64_t m = f - 1;
          most = std::max(most, rule.step_blocks_at(m));
          all_held = all_held && rule.resident_tokens(g.context_at(m)) == g.context_at(m);
          const int64_t got = rule.most_blocks_through(f);
          const auto where = [&] {
            return p->type() + " growth " + std::to_string(g.per_frame) + "+" +
                   std::to_string(g.prompt) + " bs " + std::to_string(bs) + " through frame " +
                   std::to_string(f);
          };
          // Never less than any frame holds (a reservation or a cap from it is safe) ...
          ASSERT_GE(got, most) << where();
          // ... exact while every token is held and once the bound is reached; between (a window
          // full but not yet straddling a block boundary, a saw-tooth below its top) no more than
          // the bound.
          if (all_held || most == bound) {
            ASSERT_EQ(got, most) << where();
          } else {
            ASSERT_LE(got, bound) << where();
            over += got > most;
          }
          if (p->bounded() && most < bound) ++short_of_bound;
        }
      }
    }
  }
  EXPECT_GT(short_of_bound, 1000);  // the short calls the bound alone over-reserved
  EXPECT_GT(over, 0);
}

}  // namespace
}  // namespace metronome
