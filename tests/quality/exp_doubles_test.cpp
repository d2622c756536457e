// exp_doubles gives the bits of the scalar std::exp(double) (glibc's exp), lane for lane.
#include "quality/exp_doubles.h"

#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <vector>

namespace metronome::quality {
namespace {

// Same bits, or both NaN (the payload is not part of the contract).
bool same(double a, double b) {
  return std::bit_cast<uint64_t>(a) == std::bit_cast<uint64_t>(b) ||
         (std::isnan(a) && std::isnan(b));
}

// Every input of `x` through the vector path (blocks of 4 and a tail) and the scalar one.
void expect_std_exp_bits(const std::vector<double>& x, const char* what) {
  std::vector<double> y(x.size());
  exp_doubles(x.data(), y.data(), static_cast<int64_t>(x.size()));
  int differ = 0;
  for (size_t i = 0; i < x.size(); ++i) {
    const double want = std::exp(x[i]);
    if ((!same(y[i], want) || !same(exp_double(x[i]), want)) && ++differ <= 5) {
      ADD_FAILURE() << what << ": exp_doubles(" << std::hexfloat << x[i] << ") = " << y[i]
                    << ", exp_double " << exp_double(x[i]) << ", std::exp " << want;
    }
  }
  EXPECT_EQ(differ, 0) << what << ": of " << x.size();
}

// What the log-softmax takes: logit minus the row's max, in (-60, 0]. Two million draws reach each
// of the 128 table entries thousands of times. Tried on the scalar path: ln 2's two parts taken in
// the other order changed 1.8 million of these results, the last step as a multiply and an add
// instead of an fma 1409, r^4 as r^2 (r^2 (C4 + C5 r)) 11; a one-ulp change of a coefficient or of
// a table's tail changed none (their terms lie below the result's last bit), so this checks the
// evaluation and the table's leading parts, not every bit of every constant.
TEST(ExpDoubles, SameBitsAsTheScalarCallOnLogSoftmaxInputs) {
  std::mt19937_64 rng(1);
  std::uniform_real_distribution<double> u(-60.0, 0.0);
  std::vector<double> x(2'000'003);
  for (double& v : x) v = u(rng);
  expect_std_exp_bits(x, "uniform in (-60, 0)");
}

// Random bit patterns of every exponent and sign (the special cases below 2^-54 and from 512 on,
// subnormal and overflowing results), and the edges.
TEST(ExpDoubles, SameBitsAsTheScalarCallOnAnyDouble) {
  std::mt19937_64 rng(2);
  std::vector<double> x(1'000'001);
  for (double& v : x) v = std::bit_cast<double>(rng());
  const double inf = std::numeric_limits<double>::infinity();
  for (const double e : {0.0,
                         -0.0,
                         0x1p-54,
                         -0x1p-54,
                         0x1.fffffffffffffp-55,
                         0x1p-1074,
                         512.0,
                         -512.0,
                         0x1.fffffffffffffp8,
                         -0x1.fffffffffffffp8,
                         -745.2,
                         -708.5,
                         709.7,
                         710.0,
                         1.0,
                         -1.0,
                         std::log(2.0) / 256,
                         inf,
                         -inf,
                         std::numeric_limits<double>::quiet_NaN()}) {
    x.push_back(e);
  }
  expect_std_exp_bits(x, "bit patterns and edges");
}

}  // namespace
}  // namespace metronome::quality
