// exp_floats gives the bits of the scalar std::exp(float) (glibc's expf), lane for lane.
#include "quality/exp_floats.h"

#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

namespace metronome::quality {
namespace {

// Same bits, or both NaN (the payload is not part of the contract).
bool same(float a, float b) {
  return std::bit_cast<uint32_t>(a) == std::bit_cast<uint32_t>(b) ||
         (std::isnan(a) && std::isnan(b));
}

// Every 101st of the 2^32 float bit patterns (both signs, every exponent: the table index, the
// rounding of k, subnormal results below -87.3, the std::exp paths at 88 and beyond, NaN), in
// blocks of 8 lanes and a tail. A constant or an fma wrong in one lane's chain changes the last
// bit of about half the results.
TEST(ExpFloats, SameBitsAsTheScalarCallOnEvery101stFloat) {
  std::vector<float> x, y;
  int64_t checked = 0, differ = 0, differ_twin = 0;
  const uint64_t total = uint64_t{1} << 32;
  for (uint64_t u = 0; u < total;) {
    x.clear();
    for (; u < total && x.size() < (1u << 16) + 3; u += 101)
      x.push_back(std::bit_cast<float>(static_cast<uint32_t>(u)));
    y.resize(x.size());
    exp_floats(x.data(), y.data(), static_cast<int64_t>(x.size()));
    for (size_t i = 0; i < x.size(); ++i) {
      if (!same(y[i], std::exp(x[i]))) {
        if (++differ <= 5)
          ADD_FAILURE() << "exp_floats(" << x[i] << ") = " << y[i] << ", std::exp "
                        << std::exp(x[i]);
      }
      if (!same(y[i], exp_float(x[i]))) ++differ_twin;
    }
    checked += static_cast<int64_t>(x.size());
  }
  EXPECT_EQ(differ, 0) << "of " << checked;
  EXPECT_EQ(differ_twin, 0) << "of " << checked;
  EXPECT_GT(checked, 42'000'000);
}

// The edges, each once in a vector of ordinary values (a lane sent to std::exp must not disturb
// its neighbours) and in place.
TEST(ExpFloats, EdgesInPlaceAndAmongOrdinaryLanes) {
  const float inf = std::numeric_limits<float>::infinity();
  const std::vector<float> edges{0.f,  -0.f,   1e-45f,        -1e-45f,    -87.3f, -87.99f, -88.f,
                                 88.f, 88.72f, 89.f,          -103.9f,    -104.f, -1e30f,  1e30f,
                                 inf,  -inf,   std::nanf(""), 0.6931472f, -20.5f, 3.3e-8f};
  for (const float e : edges) {
    for (int lane = 0; lane < 9; ++lane) {
      std::vector<float> v{-1.5f, -0.25f, 0.f, 2.f, -7.f, -30.f, 0.5f, -60.f, 1.f};
      v[static_cast<size_t>(lane)] = e;
      std::vector<float> want(v.size());
      for (size_t i = 0; i < v.size(); ++i) want[i] = std::exp(v[i]);
      exp_floats(v.data(), v.data(), static_cast<int64_t>(v.size()));
      for (size_t i = 0; i < v.size(); ++i) {
        EXPECT_TRUE(same(v[i], want[i])) << "edge " << e << " in lane " << lane << ", lane " << i;
      }
    }
  }
}

}  // namespace
}  // namespace metronome::quality
