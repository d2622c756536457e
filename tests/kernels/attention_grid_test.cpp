// The GPU attention grid's coverage, and the CPU reference on every shape of it (label cpu: runs in
// CI, where the GPU comparison on the same grid skips).
#include "attention_grid.h"

#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <set>
#include <utility>
#include <vector>

#include "frame_fixture.h"
#include "kernels/reference/paged_attention_ref.h"

namespace metronome::kernels {
namespace {

using testing::attention_grid;
using testing::AttentionCase;

std::pair<int64_t, int64_t> key(const kv::Window& w) { return {w.window, w.sinks}; }

// Review found the split count aliased with the window (unbounded and W100 S17 never split).
TEST(AttentionGrid, EveryWindowMeetsEveryForcedSplitCount) {
  std::map<std::pair<int64_t, int64_t>, std::set<int32_t>> splits;
  for (const AttentionCase& c : attention_grid()) splits[key(c.spec.window)].insert(c.num_splits);
  for (const kv::Window& w : testing::kGridWindows) {
    EXPECT_EQ(splits[key(w)], (std::set<int32_t>{0, 1, 3, 5}))
        << "window " << w.window << " sinks " << w.sinks;
  }
}

TEST(AttentionGrid, HoldsQwen3OmniGroupOfEight) {
  int g8 = 0, g8_long = 0;
  std::set<std::pair<int64_t, int64_t>> windows;
  for (const AttentionCase& c : attention_grid()) {
    if (c.spec.group != 8 || c.spec.kv_heads != 4) continue;
    ++g8;
    windows.insert(key(c.spec.window));
    for (const auto& s : c.spec.sessions) g8_long += s.ctx > 4000;
  }
  EXPECT_GE(g8, 40);
  for (const kv::Window& w : testing::kGridWindows) {
    EXPECT_TRUE(windows.count(key(w))) << "no G = 8 case with window " << w.window;
  }
  EXPECT_GT(g8_long, 0) << "no long-context G = 8 case (the automatic split path)";
}

// LayerStep reads q, k_new and v_new in place from the fused QKV projection (q_row_stride,
// new_row_stride); the grid must exercise that layout under every window and some forced splits.
TEST(AttentionGrid, FusedQkvStridesUnderEveryWindow) {
  std::map<std::pair<int64_t, int64_t>, std::set<int32_t>> fused;
  for (const AttentionCase& c : attention_grid()) {
    if (c.fused_qkv) fused[key(c.spec.window)].insert(c.num_splits);
  }
  for (const kv::Window& w : testing::kGridWindows) {
    ASSERT_TRUE(fused.count(key(w))) << "window " << w.window << " sinks " << w.sinks;
    EXPECT_GE(fused[key(w)].size(), 3u) << "window " << w.window << " sinks " << w.sinks;
  }
}

TEST(AttentionGrid, NamesAreUnique) {
  std::set<std::string> names;
  for (const AttentionCase& c : attention_grid())
    EXPECT_TRUE(names.insert(c.name).second) << c.name;
}

// The per-row error sees one wrong row that the whole-output L2 dilutes.
TEST(RowError, FindsOneBadRowTheWholeL2Misses) {
  const size_t rows = 4000, d = 64;
  std::vector<float> ref(rows * d), got;
  for (size_t i = 0; i < ref.size(); ++i) ref[i] = std::sin(0.37f * static_cast<float>(i)) + 0.1f;
  got = ref;
  for (size_t x = 0; x < d; ++x) got[777 * d + x] = -ref[777 * d + x];  // row 777 negated
  EXPECT_LT(testing::rel_l2(got, ref), 0.05);
  EXPECT_NEAR(testing::max_row_rel_err(got, ref, d), 2.0, 1e-9);
  EXPECT_EQ(testing::max_row_rel_err(ref, ref, d), 0.0);
  got[5] = std::nanf("");
  EXPECT_TRUE(std::isnan(testing::max_row_rel_err(got, ref, d)));
}

// The reference the GPU grid compares against equals dense attention under the explicit mask on
// every grid shape (block sizes, G = 1..8, head_dim 64/128, every window, f16 and bf16 inputs).
TEST(AttentionGrid, ReferenceEqualsExplicitMaskOnEveryShape) {
  for (const AttentionCase& c : attention_grid()) {
    if (c.spec.sessions.front().ctx > 4000) continue;  // the long cases: covered by their shape
    const testing::Frame f = testing::make_frame(c.spec);
    reference::HostKvCache cache = f.cache_before;
    const FrameBatch b = f.batch();
    reference::append_kv_ref(cache.view(), b, f.k_new, f.v_new);
    std::vector<float> paged(f.q.size(), std::nanf(""));
    reference::paged_attention_ref(std::as_const(cache).view(), b, c.spec.window,
                                   {f.q_heads(), 1.f / std::sqrt(float(c.spec.head_dim))}, f.q,
                                   paged);
    const auto dense = testing::dense_masked_attention(f);
    ASSERT_LT(testing::max_row_rel_err(paged, dense, size_t(c.spec.head_dim)), 1e-5) << c.name;
  }
}

}  // namespace
}  // namespace metronome::kernels
