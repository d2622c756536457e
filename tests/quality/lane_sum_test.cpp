// lane_sum adds input i into lane i mod 8, in order, and the lanes in one fixed tree: its bits are
// those of that order written out by hand, for any length, and it is exact where every partial sum
// is.
#include "quality/lane_sum.h"

#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstdint>
#include <random>
#include <vector>

namespace metronome::quality {
namespace {

// The same order, written out one element at a time.
double by_hand(const std::vector<float>& x) {
  double lane[8] = {};
  for (size_t i = 0; i < x.size(); ++i) lane[i % 8] += static_cast<double>(x[i]);
  return ((lane[0] + lane[4]) + (lane[1] + lane[5])) + ((lane[2] + lane[6]) + (lane[3] + lane[7]));
}

TEST(LaneSum, IsTheLaneOrderBitForBitAtEveryLength) {
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> u(-3.f, 5.f);
  for (size_t n = 0; n <= 70; ++n) {
    std::vector<float> x(n);
    for (float& v : x) v = std::ldexp(u(rng), static_cast<int>(rng() % 40) - 20);
    EXPECT_EQ(std::bit_cast<uint64_t>(lane_sum(x.data(), static_cast<int64_t>(n))),
              std::bit_cast<uint64_t>(by_hand(x)))
        << "n = " << n;
  }
}

TEST(LaneSum, ExactOnWholeNumbersAndDoubles) {
  std::vector<double> x(1001);
  for (size_t i = 0; i < x.size(); ++i) x[i] = static_cast<double>(i);
  EXPECT_EQ(lane_sum(x.data(), static_cast<int64_t>(x.size())), 1000.0 * 1001.0 / 2.0);
  EXPECT_EQ(lane_sum(x.data(), 0), 0.0);
  EXPECT_EQ(lane_sum(x.data() + 5, 3), 18.0);
}

}  // namespace
}  // namespace metronome::quality
