#include "kernels/block_table.h"

#include <gtest/gtest.h>

#include <stdexcept>
#include <vector>

namespace metronome::kernels {
namespace {

TEST(BlockPool, AllocatesEveryBlockOnceThenReportsExhaustion) {
  BlockPool pool(3);
  std::vector<int32_t> got = {pool.allocate(), pool.allocate(), pool.allocate()};
  std::sort(got.begin(), got.end());
  EXPECT_EQ(got, (std::vector<int32_t>{0, 1, 2}));
  EXPECT_EQ(pool.allocate(), -1);
  EXPECT_EQ(pool.free_blocks(), 0);
  pool.release(1);
  EXPECT_EQ(pool.allocate(), 1);
}

TEST(BlockPool, RejectsDoubleFreeAndForeignIds) {
  BlockPool pool(2);
  const int32_t b = pool.allocate();
  pool.release(b);
  EXPECT_THROW(pool.release(b), std::logic_error);
  EXPECT_THROW(pool.release(7), std::logic_error);
  EXPECT_THROW(pool.release(-1), std::logic_error);
}

TEST(SessionBlocks, AppendIsAllOrNothing) {
  BlockPool pool(2);
  SessionBlocks s(kv::Window{}, 4);
  ASSERT_TRUE(s.append(pool, 5));   // 2 blocks
  EXPECT_FALSE(s.append(pool, 4));  // would need a third
  EXPECT_EQ(s.tokens(), 5);
  EXPECT_EQ(s.held_blocks(), 2);
  EXPECT_TRUE(s.append(pool, 3));  // fills the second block exactly
  EXPECT_EQ(s.tokens(), 8);
}

// Hand case: block 16, no sinks, W = 20. After 40 tokens the next query (40) sees [20, 40]:
// block 0 = [0, 15] goes, block 1 = [16, 31] straddles the edge and stays.
TEST(SessionBlocks, KeepsTheBlockStraddlingTheWindowEdge) {
  BlockPool pool(8);
  SessionBlocks s(kv::Window{20, 0}, 16);
  ASSERT_TRUE(s.append(pool, 40));
  EXPECT_EQ(s.release_outside_window(pool), 1);
  EXPECT_EQ(s.table()[0], -1);
  EXPECT_GE(s.table()[1], 0);
  EXPECT_GE(s.table()[2], 0);
  // Four more tokens: the next query (44) sees [24, 44]; block 1 still meets it.
  ASSERT_TRUE(s.append(pool, 4));
  EXPECT_EQ(s.release_outside_window(pool), 0);
  // At 52 the window starts at 32: block 1 leaves.
  ASSERT_TRUE(s.append(pool, 8));
  EXPECT_EQ(s.release_outside_window(pool), 1);
  EXPECT_EQ(s.table()[1], -1);
}

// Hand case: S = 4, W = 16, block 16, 100 tokens: the next query (100) sees [0, 4) and [84, 100],
// so blocks 0 (sinks), 5 = [80, 95] and 6 = [96, 99] are held.
TEST(SessionBlocks, PinsSinkBlocks) {
  BlockPool pool(16);
  SessionBlocks s(kv::Window{16, 4}, 16);
  for (int i = 0; i < 10; ++i) {
    ASSERT_TRUE(s.append(pool, 10));
    s.release_outside_window(pool);
  }
  std::vector<int32_t> held;
  for (size_t b = 0; b < s.table().size(); ++b) {
    if (s.table()[b] >= 0) held.push_back(static_cast<int32_t>(b));
  }
  EXPECT_EQ(held, (std::vector<int32_t>{0, 5, 6}));
  EXPECT_EQ(pool.used_blocks(), 3);
  s.release_all(pool);
  EXPECT_EQ(pool.used_blocks(), 0);
}

TEST(SessionBlocks, UnboundedNeverReleases) {
  BlockPool pool(100);
  SessionBlocks s(kv::Window{}, 3);
  ASSERT_TRUE(s.append(pool, 200));
  EXPECT_EQ(s.release_outside_window(pool), 0);
  EXPECT_EQ(s.held_blocks(), 67);
}

// The bookkeeping agrees with the shared accounting (what the simulator charges) at every step,
// and never releases a block a later query can see.
struct Policy {
  int64_t window, sinks;
  int32_t block;
};
class BlockTableAgreesWithKvWindow : public ::testing::TestWithParam<Policy> {};

TEST_P(BlockTableAgreesWithKvWindow, OverManyFrames) {
  const Policy p = GetParam();
  const kv::Window w{p.window, p.sinks};
  BlockPool pool(4096);
  SessionBlocks s(w, p.block);
  const int64_t frames[] = {1, 7, 16, 3, 25, 1, 1, 40, 13, 2, 64, 5, 1, 31};
  for (int rep = 0; rep < 6; ++rep) {
    for (const int64_t n : frames) {
      const int64_t ctx = s.tokens();
      ASSERT_TRUE(s.append(pool, n));
      EXPECT_EQ(s.held_blocks(), kv::step_blocks(ctx, n, w, p.block))
          << "ctx " << ctx << " n " << n;
      // Every key any query of this frame sees is resident.
      for (int64_t q = ctx; q < ctx + n; ++q) {
        for (int64_t k = 0; k <= q; ++k) {
          if (kv::key_visible(q, k, w))
            ASSERT_GE(s.physical_block(k), 0) << "q " << q << " k " << k;
        }
      }
      s.release_outside_window(pool);
      EXPECT_EQ(s.held_blocks(), kv::resident_blocks(s.tokens(), w, p.block));
      EXPECT_EQ(pool.used_blocks(), s.held_blocks());
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Policies, BlockTableAgreesWithKvWindow,
                         ::testing::Values(Policy{-1, 0, 16}, Policy{0, 0, 16}, Policy{20, 0, 16},
                                           Policy{20, 4, 16}, Policy{33, 17, 16}, Policy{5, 1, 1},
                                           Policy{50, 3, 7}, Policy{64, 16, 16}, Policy{100, 0, 3},
                                           Policy{15, 40, 16}));

TEST(DenseBlockTables, PadsWithMinusOneAndChecksWidth) {
  BlockPool pool(10);
  SessionBlocks a(kv::Window{}, 4), b(kv::Window{}, 4);
  ASSERT_TRUE(a.append(pool, 9));  // 3 blocks
  ASSERT_TRUE(b.append(pool, 2));  // 1 block
  const SessionBlocks* both[] = {&a, &b};
  const auto t = dense_block_tables(both, 3);
  ASSERT_EQ(t.size(), 6u);
  EXPECT_EQ(t[0], a.table()[0]);
  EXPECT_EQ(t[2], a.table()[2]);
  EXPECT_EQ(t[3], b.table()[0]);
  EXPECT_EQ(t[4], -1);
  EXPECT_EQ(t[5], -1);
  EXPECT_THROW(dense_block_tables(both, 2), std::invalid_argument);
}

}  // namespace
}  // namespace metronome::kernels
