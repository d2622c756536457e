// The block accounting the simulator takes from core/kv_window.h, checked against a brute-force
// count of the blocks that hold at least one visible key.
#include <gtest/gtest.h>

#include <algorithm>
#include <set>

#include "core/frame_growth.h"
#include "core/kv_window.h"

namespace metronome::kv {
namespace {

int64_t brute_force_blocks(int64_t ctx, int64_t n, Window w, int64_t bs) {
  // Blocks holding a key that some query of the step (positions ctx .. ctx+n-1), or the next query
  // after it, can see; plus the blocks the step writes.
  std::set<int64_t> blocks;
  for (int64_t k = 0; k < ctx + n; ++k) {
    const bool needed = k >= ctx || key_visible(ctx, k, w);
    if (needed) blocks.insert(k / bs);
  }
  return static_cast<int64_t>(blocks.size());
}

}  // namespace

TEST(KvWindow, VisibilityRule) {
  const Window w{4, 2};
  EXPECT_TRUE(key_visible(10, 0, w));   // sink
  EXPECT_TRUE(key_visible(10, 1, w));   // sink
  EXPECT_FALSE(key_visible(10, 2, w));  // between sinks and window
  EXPECT_FALSE(key_visible(10, 5, w));
  EXPECT_TRUE(key_visible(10, 6, w));    // 10 - 6 = 4 = W
  EXPECT_TRUE(key_visible(10, 10, w));   // itself
  EXPECT_FALSE(key_visible(10, 11, w));  // causal
  EXPECT_TRUE(key_visible(1000, 3, Window{}));
  EXPECT_EQ(visible_keys(10, w), 2 + 5);
  EXPECT_EQ(visible_keys(3, w), 4);
  EXPECT_EQ(visible_keys(10, Window{}), 11);
}

TEST(KvWindow, BlockCountsMatchBruteForce) {
  for (int64_t bs : {1, 3, 16}) {
    for (Window w :
         {Window{}, Window{0, 0}, Window{5, 0}, Window{7, 3}, Window{20, 17}, Window{2, 40}}) {
      for (int64_t ctx = 0; ctx < 90; ++ctx) {
        for (int64_t n : {1, 4, 19}) {
          ASSERT_EQ(step_blocks(ctx, n, w, bs), brute_force_blocks(ctx, n, w, bs))
              << "bs=" << bs << " W=" << w.window << " S=" << w.sinks << " ctx=" << ctx
              << " n=" << n;
        }
        ASSERT_EQ(resident_blocks(ctx + 1, w, bs) <= step_blocks(ctx, 1, w, bs), true);
      }
    }
  }
}

TEST(KvWindow, WindowedResidencyIsBounded) {
  const int64_t bs = 16;
  const Window w{480, 16};
  int64_t most = 0;
  for (int64_t ctx = 0; ctx < 100000; ctx += 7) most = std::max(most, resident_blocks(ctx, w, bs));
  // Sinks (1 block) + 480 window tokens spanning at most 31 blocks.
  EXPECT_EQ(most, 1 + 31);
  EXPECT_EQ(resident_blocks(100000, Window{}, bs), ceil_div(100000, bs));
  EXPECT_EQ(last_block_len(33, 16), 1);
  EXPECT_EQ(last_block_len(32, 16), 16);
  EXPECT_EQ(last_block_len(0, 16), 0);
}

// The closed forms the engine uses past settled_from: equal to the general counts for every block
// size (powers of two and not), window, sink count, frame size and context from there on; below it
// they fail for some windows (the threshold is needed).
TEST(KvWindow, SettledClosedFormsMatchTheGeneralCounts) {
  bool earlier_differs = false;
  for (int64_t bs : {1, 3, 16, 32}) {
    for (Window w : {Window{}, Window{0, 0}, Window{5, 0}, Window{7, 3}, Window{20, 17},
                     Window{2, 40}, Window{480, 16}}) {
      const int64_t from = settled_from(w, bs);
      for (int64_t ctx = from; ctx < from + 300; ++ctx) {
        for (int64_t n : {0, 1, 4, 19, 40}) {
          ASSERT_EQ(settled_new_blocks(ctx, n, bs),
                    step_blocks(ctx, n, w, bs) - resident_blocks(ctx, w, bs))
              << "bs=" << bs << " W=" << w.window << " S=" << w.sinks << " ctx=" << ctx;
          ASSERT_EQ(settled_freed_blocks(ctx, n, w, bs),
                    step_blocks(ctx, n, w, bs) - resident_blocks(ctx + n, w, bs))
              << "bs=" << bs << " W=" << w.window << " S=" << w.sinks << " ctx=" << ctx;
        }
        ASSERT_EQ(settled_resident_blocks(ctx, w, bs), resident_blocks(ctx, w, bs))
            << "bs=" << bs << " W=" << w.window << " S=" << w.sinks << " ctx=" << ctx;
        ASSERT_EQ(std::min(ctx, settled_cached_cap(w)), visible_keys(ctx, w) - 1);
      }
      for (int64_t c = 1; c < from; ++c) {
        if (settled_new_blocks(c, 1, bs) != step_blocks(c, 1, w, bs) - resident_blocks(c, w, bs) ||
            settled_freed_blocks(c, 1, w, bs) !=
                step_blocks(c, 1, w, bs) - resident_blocks(c + 1, w, bs) ||
            settled_resident_blocks(c, w, bs) != resident_blocks(c, w, bs)) {
          earlier_differs = true;
        }
      }
    }
  }
  EXPECT_TRUE(earlier_differs);
}

// The frame rule against a session that appends its frames one by one: the context each frame
// starts from, what it appends and the blocks it holds meanwhile.
TEST(FrameGrowth, MatchesASessionAppendingFrameByFrame) {
  for (const FrameGrowth g : {FrameGrowth{6, 0}, FrameGrowth{6, 50}, FrameGrowth{1, 3}}) {
    for (Window w : {Window{}, Window{20, 4}}) {
      int64_t ctx = 0;
      for (int64_t m = 0; m < 40; ++m) {
        const int64_t n = m == 0 ? g.prompt + g.per_frame : g.per_frame;
        ASSERT_EQ(g.context_at(m), ctx) << "m=" << m;
        ASSERT_EQ(g.appended(m), n) << "m=" << m;
        ASSERT_EQ(g.prompt_at(m), m == 0 ? g.prompt : 0);
        ASSERT_EQ(g.step_blocks_at(m, w, 16), brute_force_blocks(ctx, n, w, 16)) << "m=" << m;
        ctx += n;
      }
    }
  }
}

}  // namespace metronome::kv
