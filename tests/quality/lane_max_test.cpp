// lane_max is the largest input at every length, wherever it sits among the lanes and the tail,
// including rows of negatives and of -inf, and with a mask the largest kept input.
#include "quality/lane_max.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <vector>

namespace metronome::quality {
namespace {

TEST(LaneMax, IsTheLargestAtEveryLengthAndPlace) {
  std::mt19937 rng(11);
  std::uniform_real_distribution<float> u(-9.f, -1.f);  // all negative: a zero start would win
  for (int64_t n = 1; n <= 100; ++n) {
    std::vector<float> x(static_cast<size_t>(n));
    for (float& v : x) v = u(rng);
    for (int64_t at : {int64_t{0}, n / 2, n - 1}) {  // in the first lane, inside, in the tail
      std::vector<float> y = x;
      y[static_cast<size_t>(at)] = -0.5f;
      EXPECT_EQ(lane_max(y.data(), n), -0.5f) << "n = " << n << ", at " << at;
    }
    EXPECT_EQ(lane_max(x.data(), n), *std::max_element(x.begin(), x.end())) << "n = " << n;
  }
}

// Masked inputs (keep 0) never win, however large, wherever they sit; the largest kept one does.
TEST(LaneMax, MaskedInputsAreLeftOut) {
  std::mt19937 rng(5);
  std::uniform_real_distribution<float> u(-9.f, -1.f);
  for (int64_t n = 1; n <= 100; ++n) {
    std::vector<float> x(static_cast<size_t>(n));
    for (float& v : x) v = u(rng);
    std::vector<uint32_t> keep(static_cast<size_t>(n), ~0u);
    for (int64_t j = 0; j < n; j += 3) {  // every third masked, and made the largest
      keep[static_cast<size_t>(j)] = 0;
      x[static_cast<size_t>(j)] = 100.f;
    }
    float want = -std::numeric_limits<float>::infinity();
    for (int64_t j = 0; j < n; ++j) {
      if (keep[static_cast<size_t>(j)] != 0) want = std::max(want, x[static_cast<size_t>(j)]);
    }
    EXPECT_EQ(lane_max(x.data(), keep.data(), n), want) << "n = " << n;
  }
  const std::vector<float> x(40, 1.f);
  const std::vector<uint32_t> none(40, 0u);
  EXPECT_EQ(lane_max(x.data(), none.data(), 40), -std::numeric_limits<float>::infinity());
}

TEST(LaneMax, AllMinusInfinityAndEmpty) {
  const float inf = std::numeric_limits<float>::infinity();
  const std::vector<float> x(40, -inf);
  EXPECT_EQ(lane_max(x.data(), 40), -inf);
  EXPECT_EQ(lane_max(x.data(), 0), -inf);
}

}  // namespace
}  // namespace metronome::quality
