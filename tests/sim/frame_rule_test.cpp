// The frame rule the engine's bulk paths use against its general forms: a run of callers priced
// from its sums (settled callers by their contexts alone) equals adding each caller's passes, bit
// for bit; and a caller walked frame by frame takes and frees exactly the blocks the general
// counts give, before and after its context settles.
#include "sim/engine/frame_rule.h"

#include <gtest/gtest.h>

#include <memory>
#include <vector>

#include "sim/kv_policy/unbounded.h"
#include "sim/kv_policy/windowed.h"
#include "tests/sim/expect_same_passes.h"

namespace metronome {
namespace {

// The KV policy of a window (the rules keep a reference to it: these live for the test run).
const KvPolicy& policy_of(kv::Window w) {
  static std::vector<std::shared_ptr<const KvPolicy>> kept;
  if (w.unbounded()) {
    kept.push_back(std::make_shared<UnboundedKv>());
  } else {
    kept.push_back(std::make_shared<WindowedKv>(w.window, w.sinks));
  }
  return *kept.back();
}

std::vector<FrameRule> rules() {
  std::vector<FrameRule> out;
  for (kv::Window w : {kv::Window{}, kv::Window{480, 16}, kv::Window{7, 0}, kv::Window{3, 5}}) {
    for (int64_t bs : {1, 12, 16}) {
      for (int64_t n_in : {0, 1, 4}) {
        for (int64_t n_out : {1, 3}) {
          const kv::FrameGrowth g{3, 40};
          out.push_back(FrameRule{g, n_in, n_out, KvRule(policy_of(w), g, kv::BlockSize(bs))});
        }
      }
    }
  }
  return out;
}

// Callers on both sides of the settled threshold, in one run: its sums price it as adding each.
TEST(FrameRule, RunSumsEqualAddingEachCaller) {
  for (const FrameRule& r : rules()) {
    FramePasses each, run;
    each.add(2, 5, 40, r.n_out, r.w);  // something already in the step
    run.add(2, 5, 40, r.n_out, r.w);
    FrameRule::RunSums sums;
    for (int64_t i = 0; i < 300; ++i) {
      Session s;
      s.next_frame = 1 + i;
      s.ctx = 1 + (i * 37) % (r.settled + 2000);
      r.add_passes(s, each);
      r.add_to_run(s.ctx, sums);
    }
    EXPECT_GT(sums.settled, 0);
    if (!r.w.unbounded()) EXPECT_GT(sums.young, 0);
    r.add_run_passes(sums, run);
    expect_same(each, run);
  }
}

// One caller's frames from the first: what it holds while served is step_blocks, what it keeps is
// the resident count of its new context, and past `settled` the engine's bulk take allocates
// settled_new_blocks(ctx, growth.per_frame).
TEST(FrameRule, CallerWalkTakesAndFreesTheGeneralCounts) {
  for (const FrameRule& r : rules()) {
    Session s;
    int64_t settled_frames = 0;
    for (int frame = 0; frame < 400; ++frame) {
      const int64_t total = r.step_blocks(s);
      if (s.next_frame > 0) ASSERT_EQ(r.later_new_blocks(s.ctx, s.held), total - s.held) << s.ctx;
      if (s.ctx >= r.settled) {
        ASSERT_EQ(kv::settled_new_blocks(s.ctx, r.growth.per_frame, r.bs), total - s.held) << s.ctx;
        ++settled_frames;
      }
      s.held = total;
      const int64_t freed = r.freed_blocks(s);
      ASSERT_GE(freed, 0);
      s.ctx += r.appended(s);
      s.held -= freed;
      ASSERT_EQ(s.held, kv::resident_blocks(s.ctx, r.w, r.bs)) << "frame " << frame;
      ++s.next_frame;
    }
    EXPECT_GT(settled_frames, 100);
  }
}

}  // namespace
}  // namespace metronome
