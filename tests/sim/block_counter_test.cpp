#include "sim/pool/block_counter.h"

#include <gtest/gtest.h>

#include "base/rng.h"

namespace metronome {

TEST(BlockCounter, RefusesWhatItDoesNotHave) {
  BlockCounter pool(10);
  EXPECT_TRUE(pool.try_allocate(7));
  EXPECT_FALSE(pool.try_allocate(4));
  EXPECT_EQ(pool.used(), 7);  // a refused allocation takes nothing
  EXPECT_TRUE(pool.try_allocate(3));
  EXPECT_EQ(pool.free(), 0);
  EXPECT_DOUBLE_EQ(pool.occupancy(), 1.0);
}

TEST(BlockCounter, InvariantViolationsThrow) {
  BlockCounter pool(4);
  EXPECT_THROW(pool.release(1), std::logic_error);
  EXPECT_THROW(pool.try_allocate(-1), std::logic_error);
  EXPECT_THROW(BlockCounter(0), std::invalid_argument);
}

TEST(BlockCounter, RandomTrafficConservesBlocks) {
  BlockCounter pool(1000);
  Rng rng(7, "pool");
  std::vector<int64_t> holdings;
  for (int i = 0; i < 100000; ++i) {
    if (holdings.empty() || rng.uniform() < 0.55) {
      const int64_t n = static_cast<int64_t>(rng.uniform() * 40);
      if (pool.try_allocate(n)) holdings.push_back(n);
    } else {
      const size_t k = static_cast<size_t>(rng.uniform() * static_cast<double>(holdings.size()));
      pool.release(holdings[k]);
      holdings[k] = holdings.back();
      holdings.pop_back();
    }
    ASSERT_GE(pool.used(), 0);
    ASSERT_LE(pool.used(), pool.capacity());
    ASSERT_EQ(pool.allocated_total() - pool.released_total(), pool.used());
  }
  int64_t held = 0;
  for (auto h : holdings) held += h;
  EXPECT_EQ(held, pool.used());
  EXPECT_LE(pool.peak(), pool.capacity());
}

}  // namespace metronome
